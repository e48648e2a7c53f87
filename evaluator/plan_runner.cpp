// evaluator/plan_runner.cpp — a program's launch plan run on a workspace (plan_runner.h).
#include "evaluator/plan_runner.h"

#include <fmt/format.h>

#include <cstring>

#include "evaluator/judge_python.h"
#include "evaluator/tensor_map.h"
#include "spec/index_init.h"

namespace tessera::evaluator {

using spec::DType;

unsigned long long seed_mix(unsigned long long a, unsigned long long b) {
  unsigned long long z = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

OutputSet PlanRunner::make_outputs(const LoadedProgram& p, const Workspace& ws, bool f64) {
  OutputSet o;
  for (auto& t : op_.tensors) {
    if (!t.output) continue;
    DType dt = f64 ? DType::f64 : t.dtype;
    o.bufs.emplace(t.name, Buffer(&dev_, ws.elems.at(t.name) * spec::dtype_size(dt)));
    o.dtype[t.name] = dt;
  }
  spec::Bindings b = bindings(p, ws);
  for (auto& s : p.program.scratch) {
    long long n = spec::eval_int(s.size, b);
    o.bufs.emplace(s.name, Buffer(&dev_, static_cast<size_t>(std::max(0LL, n)) * spec::dtype_size(s.dtype)));
    o.dtype[s.name] = s.dtype;
  }
  return o;
}

void PlanRunner::poison(OutputSet& o) {
  for (auto& [_, buf] : o.bufs)
    if (buf.bytes()) TESSERA_CU(dev_.drv(), cuMemsetD8Async(buf.ptr(), 0xFF, buf.bytes(), dev_.stream()));
}

spec::Bindings PlanRunner::bindings(const LoadedProgram& p, const Workspace& ws) const {
  spec::Bindings b = ws.b;
  for (auto& [k, v] : p.params) b[k] = static_cast<double>(v);
  b[spec::kSmCountSymbol] = static_cast<double>(dev_.info().sm_count);
  return b;
}

// Every kernel of the plan is looked up (and its shared-memory limit raised) before the
// first launch: with lazy loading (the driver's default since CUDA 12.2) a kernel is
// loaded when first looked up, and a load may wait for the device to go idle, which a
// kernel already running and waiting for this one (a side launch) would never let happen.
std::vector<PlanRunner::Step> PlanRunner::resolve(const LoadedProgram& p, const spec::Bindings& b) const {
  std::vector<Step> steps(p.program.launch.size());
  std::map<CUfunction, long long> most_smem;  // (a kernel launched twice: the larger of its two)
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& k = p.program.launch[i];
    Step& st = steps[i];
    if (!spec::launched(k, b)) continue;  // nothing to do at this shape
    for (int d = 0; d < 3; ++d) {
      st.grid[d] = static_cast<int>(spec::eval_int(k.grid[d], b));
      st.block[d] = static_cast<int>(spec::eval_int(k.block[d], b));
    }
    st.smem = spec::eval_int(k.smem, b);
    st.f = p.module->function(k.kernel);
    most_smem[st.f] = std::max(most_smem[st.f], st.smem);
  }
  for (auto [f, smem] : most_smem)
    if (smem > 48 * 1024)
      TESSERA_CU(dev_.drv(),
                 cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem)));
  return steps;
}

// The value of each argument of launch step k, in `storage` (one slot an argument), and
// the pointers to them that the launch takes.
void PlanRunner::marshal(const spec::KernelLaunch& k, const LoadedProgram& p, const Workspace& ws,
                         const OutputSet& outs, const spec::Bindings& b, std::vector<ArgStorage>& storage,
                         std::vector<void*>& ptrs) const {
  storage.assign(k.args.size(), ArgStorage{});
  ptrs.assign(k.args.size(), nullptr);
  for (size_t i = 0; i < k.args.size(); ++i) {
    const std::string& a = k.args[i];
    auto put = [&](auto v) {
      static_assert(sizeof(v) <= sizeof(ArgStorage));
      std::memcpy(storage[i].bytes, &v, sizeof v);
    };
    if (auto tm = spec::parse_tensor_map_arg(a))
      put(tensor_map(*tm, ws, outs, b, k.kernel));
    else if (auto it = ws.inputs.find(a); it != ws.inputs.end())
      put(it->second.ptr());
    else if (auto ot = outs.bufs.find(a); ot != outs.bufs.end())
      put(ot->second.ptr());
    else if (auto pt = p.params.find(a); pt != p.params.end())
      put(static_cast<long long>(pt->second));
    else {
      const spec::Scalar* sc = nullptr;
      for (auto& s : op_.scalars)
        if (s.name == a) sc = &s;
      if (sc && sc->dtype == DType::f32)
        put(static_cast<float>(b.at(a)));
      else if (sc && sc->dtype == DType::f64)
        put(static_cast<double>(b.at(a)));
      else if (b.count(a))
        put(static_cast<long long>(std::llround(b.at(a))));
      else
        throw std::runtime_error(fmt::format("kernel '{}': argument '{}' has no value", k.kernel, a));
    }
    ptrs[i] = storage[i].bytes;
  }
}

// A builtin (cuBLAS) or a Python reference in place of a launch plan; false for a plan.
bool PlanRunner::run_special(const LoadedProgram& p, const Workspace& ws, OutputSet& outs) {
  if (!p.program.python.empty()) {
    // (only the reference runs here; a Python baseline is timed by the reference process)
    if (!python_ || outs.dtype.empty() || outs.dtype.begin()->second != DType::f64)
      throw std::logic_error("a Python program runs here only as the float64 reference");
    dev_.sync();
    python_->reference(ws.shape, ws.b, ws.inputs, outs.bufs);
    return true;
  }
  if (p.program.builtin == "cublas_gemm") {
    if (!cublas_) throw std::runtime_error("the cublas_gemm baseline needs cuBLAS, which could not be loaded");
    auto sym = [&](const char* n) { return static_cast<long long>(ws.b.at(n)); };
    cublas_->gemm_bf16(ws.inputs.at("a").ptr(), ws.inputs.at("b").ptr(), outs.bufs.at("c").ptr(), sym("M"), sym("N"),
                       sym("K"));
    return true;
  }
  return false;
}

void PlanRunner::run(const LoadedProgram& p, const Workspace& ws, OutputSet& outs) {
  if (run_special(p, ws, outs)) return;
  spec::Bindings b = bindings(p, ws);
  // Side launches (spec::KernelLaunch::stream): the first forks the side stream from the
  // main one (an event: everything enqueued so far on main comes first), the end joins it
  // back, so that whatever follows the program on the main stream (the timing's events, the
  // next sample) waits for the side launches too. Events record and wait in a graph
  // capture as well (the side stream joins the capture at the fork).
  bool forked = false;
  auto event = [&](CUevent& e) -> CUevent {
    if (!e) TESSERA_CU(dev_.drv(), cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    return e;
  };
  const std::vector<Step> steps = resolve(p, b);
  std::vector<ArgStorage> storage;
  std::vector<void*> ptrs;
  for (size_t li = 0; li < steps.size(); ++li) {
    const Step& st = steps[li];
    if (!st.f) continue;  // (nothing to do at this shape)
    const auto& k = p.program.launch[li];
    marshal(k, p, ws, outs, b, storage, ptrs);
    const auto smem = static_cast<unsigned>(st.smem);
    if (k.stream == "side") {
      if (!forked) {
        TESSERA_CU(dev_.drv(), cuEventRecord(event(fork_), dev_.stream()));
        TESSERA_CU(dev_.drv(), cuStreamWaitEvent(dev_.side_stream(), fork_, 0));
        forked = true;
      }
      dev_.launch(st.f, st.grid, st.block, smem, ptrs.data(), dev_.side_stream());
    } else if (k.pdl) {
      dev_.launch_dependent(st.f, st.grid, st.block, smem, ptrs.data());
    } else {
      dev_.launch(st.f, st.grid, st.block, smem, ptrs.data());
    }
  }
  if (forked) {
    TESSERA_CU(dev_.drv(), cuEventRecord(event(join_), dev_.side_stream()));
    TESSERA_CU(dev_.drv(), cuStreamWaitEvent(dev_.stream(), join_, 0));
  }
}

PlanRunner::~PlanRunner() {
  if (fork_) dev_.drv().cuEventDestroy(fork_);
  if (join_) dev_.drv().cuEventDestroy(join_);
}

// The CUtensorMap of a "tmap:" argument over an input or output buffer of this run.
CUtensorMap PlanRunner::tensor_map(const spec::TensorMapArg& tm, const Workspace& ws, const OutputSet& outs,
                                   const spec::Bindings& b, const std::string& kernel) const {
  const spec::Tensor* t = nullptr;
  for (auto& x : op_.tensors)
    if (x.name == tm.tensor) t = &x;
  CUdeviceptr ptr = 0;
  DType dt = t ? t->dtype : DType::f32;
  if (auto it = ws.inputs.find(tm.tensor); it != ws.inputs.end())
    ptr = it->second.ptr();
  else if (auto ot = outs.bufs.find(tm.tensor); ot != outs.bufs.end()) {
    ptr = ot->second.ptr();
    dt = outs.dtype.at(tm.tensor);
  }
  if (!t || !ptr || t->shape.size() != tm.box.size())
    throw std::runtime_error(
        fmt::format("kernel '{}': tensor map over '{}': no such buffer of that rank", kernel, tm.tensor));
  return encode_tensor_map(dev_.drv(), ptr, dt, *t, tm, b);
}

std::unique_ptr<Workspace> make_workspace(Device& dev, Module& builtins, const spec::Operator& op, const spec::Shape& s,
                                          unsigned long long seed) {
  auto ws = std::make_unique<Workspace>();
  ws->shape = s;
  ws->b = op.bindings(s);
  std::map<std::string, std::vector<long long>> host;  // index inputs made so far (not_below reads them)
  int idx = 0;
  for (auto& t : op.tensors) {
    long long n = op.elements(t, ws->b);
    ws->elems[t.name] = n;
    ++idx;
    if (t.output) continue;
    Buffer buf(&dev, static_cast<size_t>(n) * spec::dtype_size(t.dtype));
    spec::Init init = t.init;
    if (auto it = s.init_overrides.find(t.name); it != s.init_overrides.end()) init = it->second;
    if (spec::host_generated(init)) {
      std::vector<long long> v =
          spec::generate_index(t, init, s, ws->b, n, seed_mix(seed, static_cast<unsigned long long>(idx)), host);
      if (t.dtype == DType::i64)
        buf.upload(v.data(), v.size() * 8);
      else if (t.dtype == DType::i32) {
        std::vector<int32_t> v32(v.begin(), v.end());
        buf.upload(v32.data(), v32.size() * 4);
      } else {
        throw std::runtime_error(fmt::format("tensor '{}': {} entries must be i32 or i64", t.name, init.dist));
      }
      host[t.name] = std::move(v);
    } else if (n > 0) {
      CUfunction f = builtins.function(std::string("tessera_fill_") + spec::dtype_name(t.dtype));
      int dist = init.dist == "normal" ? 0 : init.dist == "uniform" ? 1 : init.dist == "randint" ? 2 : 3;
      unsigned long long tseed = seed_mix(seed, static_cast<unsigned long long>(idx));
      long long nn = n;
      double a = init.a, b = init.b;
      CUdeviceptr p = buf.ptr();
      void* args[] = {&p, &nn, &tseed, &dist, &a, &b};
      int grid[3] = {static_cast<int>(std::min<long long>((n + 255) / 256, dev.info().sm_count * 16LL)), 1, 1};
      int block[3] = {256, 1, 1};
      dev.launch(f, grid, block, 0, args);
    }
    ws->inputs.emplace(t.name, std::move(buf));
  }
  dev.sync();
  return ws;
}

}  // namespace tessera::evaluator
