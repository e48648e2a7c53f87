// evaluator/judge.cpp — how a candidate is run, checked and timed.
#include "evaluator/judge.h"
#include "spec/index_init.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "codegen/compiler.h"
#include "evaluator/batch_filter.h"
#include "evaluator/builtin_kernels.h"
#include "evaluator/judge_python.h"
#include "evaluator/npy.h"
#include "evaluator/tensor_map.h"

namespace tessera::evaluator {

using spec::DType;

namespace {

// Raised when a candidate's fault leaves the context unusable: the worker
// reports and exits, and the agent starts a fresh one.
struct StickyFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

unsigned long long mix(unsigned long long a, unsigned long long b) {
  unsigned long long z = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

struct Judge::OutputSet {
  std::map<std::string, Buffer> bufs;
  std::map<std::string, DType> dtype;
};

struct Judge::Workspace {
  spec::Shape shape;
  spec::Bindings b;
  std::map<std::string, Buffer> inputs;
  std::map<std::string, long long> elems;
};

// ---- NVML (clocks), loaded at run time ----------------------------------------

namespace {
// nvmlDeviceGetHandleByIndex_v2 handle of a GPU, or null when NVML is absent.
void* nvml_device(int ordinal, void** lib_out) {
  static void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  static bool inited = false;
  *lib_out = lib;
  if (!lib) return nullptr;
  if (!inited) {
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    if (!init || init() != 0) return nullptr;
    inited = true;
  }
  auto handle = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  void* h = nullptr;
  if (!handle || handle(static_cast<unsigned>(ordinal), &h) != 0) return nullptr;
  return h;
}
}  // namespace

double sm_clock_mhz(int ordinal) {
  void* lib = nullptr;
  void* h = nvml_device(ordinal, &lib);
  auto clock = lib ? reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo")) : nullptr;
  unsigned mhz = 0;
  if (!h || !clock || clock(h, 1 /* NVML_CLOCK_SM */, &mhz) != 0) return 0;
  return mhz;
}

// NVML's clock event reasons (why the clocks are below their maximum: idle, power
// cap, thermal or hardware slowdown...), a bit mask; 0 when unreadable.
unsigned long long clock_event_reasons(int ordinal) {
  void* lib = nullptr;
  void* h = nvml_device(ordinal, &lib);
  if (!h || !lib) return 0;
  auto get = reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!get) get = reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  unsigned long long r = 0;
  if (!get || get(h, &r) != 0) return 0;
  return r;
}

double gpu_temperature_c(int ordinal) {
  void* lib = nullptr;
  void* h = nvml_device(ordinal, &lib);
  auto temp = lib ? reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetTemperature")) : nullptr;
  unsigned c = 0;
  if (!h || !temp || temp(h, 0 /* NVML_TEMPERATURE_GPU */, &c) != 0) return 0;
  return c;
}

// A batch whose baseline median is more than this above the baseline's best is set
// aside (batch_filter.h). On the H200 (2026-11-30) the disturbed batches of the
// rmsnorm episodes were 40-100 % slower; at 5 % the filter also fought the ordinary
// drift of compute-bound cuBLAS shapes after heavy candidates (2-8 %: 42 % of the
// gemm scan's batches set aside, evaluations waiting up to 4 s), which is the
// machine's state, not a disturbance to wait out.
constexpr double kBatchTolerance = 0.15;

// ---- plan execution ------------------------------------------------------------

class Judge::PlanRunner {
 public:
  PlanRunner(Device& dev, const spec::Operator& op, Cublas* cublas, PythonSide* python)
      : dev_(dev), op_(op), cublas_(cublas), python_(python) {}

  OutputSet make_outputs(const LoadedProgram& p, const Judge::Workspace& ws, bool f64) {
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

  void poison(OutputSet& o) {
    for (auto& [_, buf] : o.bufs)
      if (buf.bytes()) TESSERA_CU(dev_.drv(), cuMemsetD8Async(buf.ptr(), 0xFF, buf.bytes(), dev_.stream()));
  }

  spec::Bindings bindings(const LoadedProgram& p, const Judge::Workspace& ws) const {
    spec::Bindings b = ws.b;
    for (auto& [k, v] : p.params) b[k] = static_cast<double>(v);
    b[spec::kSmCountSymbol] = static_cast<double>(dev_.info().sm_count);
    return b;
  }

  void run(const LoadedProgram& p, const Judge::Workspace& ws, OutputSet& outs) {
    if (!p.program.python.empty()) {
      // (only the reference runs here; a Python baseline is timed by the reference process)
      if (!python_ || outs.dtype.empty() || outs.dtype.begin()->second != DType::f64)
        throw std::logic_error("a Python program runs here only as the float64 reference");
      dev_.sync();
      python_->reference(ws.shape, ws.b, ws.inputs, outs.bufs);
      return;
    }
    if (p.program.builtin == "cublas_gemm") {
      if (!cublas_) throw std::runtime_error("the cublas_gemm baseline needs cuBLAS, which could not be loaded");
      auto sym = [&](const char* n) { return static_cast<long long>(ws.b.at(n)); };
      cublas_->gemm_bf16(ws.inputs.at("a").ptr(), ws.inputs.at("b").ptr(), outs.bufs.at("c").ptr(), sym("M"), sym("N"),
                         sym("K"));
      return;
    }
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
    // Every kernel of the plan is looked up (and its shared-memory limit raised) before the
    // first launch: with lazy loading (the driver's default since CUDA 12.2) a kernel is
    // loaded when first looked up, and a load may wait for the device to go idle, which a
    // kernel already running and waiting for this one (a side launch) would never let happen.
    struct Step {
      CUfunction f = nullptr;  // (nullptr: nothing to do at this shape)
      int grid[3], block[3];
      long long smem = 0;
    };
    std::vector<Step> steps(p.program.launch.size());
    std::map<CUfunction, long long> most_smem;  // (a kernel launched twice: the larger of its two)
    for (size_t i = 0; i < steps.size(); ++i) {
      const auto& k = p.program.launch[i];
      Step& st = steps[i];
      for (int d = 0; d < 3; ++d) {
        st.grid[d] = static_cast<int>(spec::eval_int(k.grid[d], b));
        st.block[d] = static_cast<int>(spec::eval_int(k.block[d], b));
      }
      if (st.grid[0] <= 0 || st.grid[1] <= 0 || st.grid[2] <= 0) continue;  // nothing to do at this shape
      st.smem = spec::eval_int(k.smem, b);
      st.f = p.module->function(k.kernel);
      most_smem[st.f] = std::max(most_smem[st.f], st.smem);
    }
    for (auto [f, smem] : most_smem)
      if (smem > 48 * 1024)
        TESSERA_CU(dev_.drv(), cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem)));
    for (size_t li = 0; li < steps.size(); ++li) {
      const auto& k = p.program.launch[li];
      if (!steps[li].f) continue;
      CUfunction f = steps[li].f;
      const int* grid = steps[li].grid;
      const int* block = steps[li].block;
      const long long smem = steps[li].smem;
      // (128 bytes, 64-byte aligned, per argument: a tensor map is passed by value)
      struct alignas(64) ArgStorage {
        unsigned char bytes[128];
      };
      std::vector<ArgStorage> storage(k.args.size());
      std::vector<void*> ptrs(k.args.size());
      for (size_t i = 0; i < k.args.size(); ++i) {
        const std::string& a = k.args[i];
        auto put = [&](auto v) {
          static_assert(sizeof(v) <= sizeof(ArgStorage));
          std::memcpy(storage[i].bytes, &v, sizeof v);
        };
        if (auto tm = spec::parse_tensor_map_arg(a)) put(tensor_map(*tm, ws, outs, b, k.kernel));
        else if (auto it = ws.inputs.find(a); it != ws.inputs.end()) put(it->second.ptr());
        else if (auto ot = outs.bufs.find(a); ot != outs.bufs.end()) put(ot->second.ptr());
        else if (auto pt = p.params.find(a); pt != p.params.end()) put(static_cast<long long>(pt->second));
        else {
          const spec::Scalar* sc = nullptr;
          for (auto& s : op_.scalars)
            if (s.name == a) sc = &s;
          if (sc && sc->dtype == DType::f32) put(static_cast<float>(b.at(a)));
          else if (sc && sc->dtype == DType::f64) put(static_cast<double>(b.at(a)));
          else if (b.count(a)) put(static_cast<long long>(std::llround(b.at(a))));
          else throw std::runtime_error(fmt::format("kernel '{}': argument '{}' has no value", k.kernel, a));
        }
        ptrs[i] = storage[i].bytes;
      }
      if (k.stream == "side") {
        if (!forked) {
          TESSERA_CU(dev_.drv(), cuEventRecord(event(fork_), dev_.stream()));
          TESSERA_CU(dev_.drv(), cuStreamWaitEvent(dev_.side_stream(), fork_, 0));
          forked = true;
        }
        dev_.launch(f, grid, block, static_cast<unsigned>(smem), ptrs.data(), dev_.side_stream());
      } else {
        dev_.launch(f, grid, block, static_cast<unsigned>(smem), ptrs.data());
      }
    }
    if (forked) {
      TESSERA_CU(dev_.drv(), cuEventRecord(event(join_), dev_.side_stream()));
      TESSERA_CU(dev_.drv(), cuStreamWaitEvent(dev_.stream(), join_, 0));
    }
  }

  ~PlanRunner() {
    if (fork_) dev_.drv().cuEventDestroy(fork_);
    if (join_) dev_.drv().cuEventDestroy(join_);
  }
  PlanRunner(const PlanRunner&) = delete;
  PlanRunner& operator=(const PlanRunner&) = delete;

 private:
  // The CUtensorMap of a "tmap:" argument over an input or output buffer of this run.
  CUtensorMap tensor_map(const spec::TensorMapArg& tm, const Judge::Workspace& ws, const OutputSet& outs,
                         const spec::Bindings& b, const std::string& kernel) const {
    const spec::Tensor* t = nullptr;
    for (auto& x : op_.tensors)
      if (x.name == tm.tensor) t = &x;
    CUdeviceptr ptr = 0;
    DType dt = t ? t->dtype : DType::f32;
    if (auto it = ws.inputs.find(tm.tensor); it != ws.inputs.end()) ptr = it->second.ptr();
    else if (auto ot = outs.bufs.find(tm.tensor); ot != outs.bufs.end()) {
      ptr = ot->second.ptr();
      dt = outs.dtype.at(tm.tensor);
    }
    if (!t || !ptr || t->shape.size() != tm.box.size())
      throw std::runtime_error(fmt::format("kernel '{}': tensor map over '{}': no such buffer of that rank", kernel, tm.tensor));
    return encode_tensor_map(dev_.drv(), ptr, dt, *t, tm, b);
  }

  Device& dev_;
  const spec::Operator& op_;
  Cublas* cublas_;
  PythonSide* python_;
  CUevent fork_ = nullptr, join_ = nullptr;  // (side launches: see run)
};

// ---- Judge -----------------------------------------------------------------------

Judge::Judge(Device& dev, const spec::Operator& op, LoadedProgram reference, LoadedProgram baseline)
    : dev_(dev), op_(op), reference_(std::move(reference)), baseline_(std::move(baseline)) {
  codegen::Compiler compiler;
  codegen::CompileRequest req;
  req.source = kBuiltinKernelSource;
  req.name = "tessera_builtins.cu";
  req.arch = dev_.info().arch();
  auto res = compiler.compile(req);
  if (!res.ok) throw std::runtime_error("the evaluator's own generator kernels failed to compile:\n" + res.log);
  builtins_ = std::make_unique<Module>(dev_.driver(), res.cubin);
  if (!reference_.program.python.empty()) python_ = std::make_unique<PythonSide>(op_, dev_.info());
  if (baseline_.program.builtin == "cublas_gemm") {
    std::string why;
    cublas_ = Cublas::load(dev_.stream(), &why);
    if (!cublas_) throw std::runtime_error(why);
  }
}

Judge::~Judge() = default;

namespace {

std::unique_ptr<Judge::Workspace> make_workspace(Device& dev, Module& builtins, const spec::Operator& op,
                                                 const spec::Shape& s, unsigned long long seed) {
  auto ws = std::make_unique<Judge::Workspace>();
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
      std::vector<long long> v = spec::generate_index(t, init, s, ws->b, n, mix(seed, static_cast<unsigned long long>(idx)), host);
      if (t.dtype == DType::i64) buf.upload(v.data(), v.size() * 8);
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
      unsigned long long tseed = mix(seed, static_cast<unsigned long long>(idx));
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

}  // namespace

nlohmann::json Judge::run_inputs(const LoadedProgram& p, const spec::Shape& s,
                                const std::map<std::string, std::vector<unsigned char>>& inputs, bool is_reference,
                                int repeat, const std::string& outputs_dir) {
  auto ws = std::make_unique<Workspace>();
  ws->shape = s;
  ws->b = op_.bindings(s);
  for (auto& t : op_.tensors) {
    long long n = op_.elements(t, ws->b);
    ws->elems[t.name] = n;
    if (t.output) continue;
    auto it = inputs.find(t.name);
    if (it == inputs.end()) throw std::runtime_error(fmt::format("input '{}' was not given", t.name));
    size_t want = static_cast<size_t>(n) * spec::dtype_size(t.dtype);
    if (it->second.size() != want)
      throw std::runtime_error(fmt::format("input '{}' has {} bytes, the spec's shape needs {}", t.name,
                                           it->second.size(), want));
    Buffer buf(&dev_, want);
    buf.upload(it->second.data(), want);
    ws->inputs.emplace(t.name, std::move(buf));
  }
  PlanRunner runner(dev_, op_, cublas_.get(), python_.get());
  OutputSet outs = runner.make_outputs(p, *ws, is_reference);
  runner.poison(outs);
  runner.run(p, *ws, outs);
  dev_.sync();
  nlohmann::json result;
  std::vector<double> ms;
  if (repeat > 0) dev_.reset_persisting_l2();
  // Every timed launch is enqueued behind the gate before any runs, as the judge
  // does, so the GPU neither idles between samples nor waits for the host inside one.
  std::vector<std::pair<CUevent, CUevent>> marks;
  unsigned gate = repeat > 0 ? hold_gate() : 0;
  for (int i = 0; i < repeat; ++i) {
    runner.poison(outs);
    dev_.flush_l2();
    CUevent a = dev_.record();
    runner.run(p, *ws, outs);
    marks.push_back({a, dev_.record()});
  }
  if (repeat > 0) release_gate(gate);
  dev_.sync();
  for (auto [a, b] : marks) {
    ms.push_back(dev_.elapsed_ms(a, b));
    dev_.release(a);
    dev_.release(b);
  }
  for (auto& [name, buf] : outs.bufs)
    if (!buf.guards_intact()) throw std::runtime_error(fmt::format("the program wrote outside buffer '{}'", name));
  nlohmann::json files = nlohmann::json::array();
  for (auto& t : op_.tensors) {
    if (!t.output) continue;
    std::vector<std::int64_t> shape;
    for (auto& e : t.shape) shape.push_back(spec::eval_int(e, ws->b));
    DType dt = outs.dtype.at(t.name);
    auto raw = outs.bufs.at(t.name).download();
    npy::DType nd = dt == DType::bf16  ? npy::DType::BF16
                    : dt == DType::f16 ? npy::DType::F16
                    : dt == DType::f32 ? npy::DType::F32
                    : dt == DType::f64 ? npy::DType::F64
                    : dt == DType::i32 ? npy::DType::I32
                                       : npy::DType::I64;
    std::string path = outputs_dir + "/" + t.name + ".npy";
    npy::write_as(path, nd, raw.data(), shape);
    files.push_back({{"name", t.name}, {"path", path}, {"shape", shape}, {"dtype", spec::dtype_name(dt)}});
  }
  result["outputs"] = files;
  if (!ms.empty()) {
    Timing t = summarize(ms);
    result["median_ms"] = t.median_ms;
    result["min_ms"] = t.min_ms;
    result["p90_ms"] = t.p90_ms;
    result["samples"] = t.samples;
  }
  return result;
}

// A shape's key for per-shape memos: its label and, for ragged batches, the sequence lengths.
static std::string shape_key(const spec::Shape& s) {
  std::string k = s.label();
  for (long long n : s.seqlens) k += fmt::format(",{}", n);
  return k;
}

double Judge::reference_seconds(const spec::Shape& s, const JudgeSettings& st) {
  auto it = ref_seconds_.find(shape_key(s));
  if (it != ref_seconds_.end()) return it->second;
  announce(fmt::format("the float64 reference on {} (the yardstick of the candidate's time limit)", s.label()),
           st.trusted_step_s);
  auto ws = make_workspace(dev_, *builtins_, op_, s, st.seed_base);
  PlanRunner runner(dev_, op_, cublas_.get(), python_.get());
  OutputSet ref = runner.make_outputs(reference_, *ws, true);
  runner.poison(ref);
  dev_.sync();
  auto t0 = std::chrono::steady_clock::now();
  runner.run(reference_, *ws, ref);
  dev_.sync();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ref_seconds_[shape_key(s)] = secs;
  return secs;
}

ShapeCheck Judge::validate_one(const LoadedProgram& cand, const spec::Shape& s, unsigned long long seed,
                               const JudgeSettings& st) {
  ShapeCheck chk;
  chk.shape = s.label();
  chk.seed = seed;
  // Two candidate runs and the reference's: the candidate may be step_factor times as slow.
  announce(fmt::format("validation of the candidate on {} (seed {})", s.label(), seed),
           st.step_floor_s + (1 + 2 * st.step_factor) * reference_seconds(s, st));
  auto ws = make_workspace(dev_, *builtins_, op_, s, seed);
  PlanRunner runner(dev_, op_, cublas_.get(), python_.get());
  // Pristine copies of the inputs, compared byte for byte on the device at the end.
  std::map<std::string, Buffer> pristine;
  for (auto& [name, buf] : ws->inputs) {
    Buffer copy(&dev_, buf.bytes());
    if (buf.bytes()) TESSERA_CU(dev_.drv(), cuMemcpyDtoDAsync(copy.ptr(), buf.ptr(), buf.bytes(), dev_.stream()));
    pristine.emplace(name, std::move(copy));
  }

  auto run_candidate = [&](OutputSet& outs) {
    runner.poison(outs);
    dev_.sync();
    try {
      runner.run(cand, *ws, outs);
      dev_.sync();
    } catch (DriverError& e) {
      if (is_sticky(e.code)) throw StickyFault(e.what());
      throw;
    }
  };
  auto fail = [&](const char* st, std::string msg) {
    chk.pass = false;
    chk.status = st;
    chk.message = std::move(msg);
    return chk;
  };

  // Candidate first, then the reference, then the candidate again: a kernel
  // that reads what the reference left behind fails one of the two.
  OutputSet c1 = runner.make_outputs(cand, *ws, false);
  run_candidate(c1);

  // A Python reference's time depends on its cache (a yardstick from a cached run says
  // nothing about a fresh seed), so it runs as a trusted step of its own, between the two.
  if (python_) announce(fmt::format("the float64 reference on {} (seed {}), in the reference process", s.label(), seed),
                        st.trusted_step_s);
  OutputSet ref = runner.make_outputs(reference_, *ws, true);
  runner.poison(ref);
  runner.run(reference_, *ws, ref);
  dev_.sync();
  if (python_)
    announce(fmt::format("validation of the candidate on {} (seed {}), second run", s.label(), seed),
             st.step_floor_s + (1 + 2 * st.step_factor) * reference_seconds(s, st));

  OutputSet c2 = runner.make_outputs(cand, *ws, false);
  run_candidate(c2);

  for (auto* set : {&c1, &c2})
    for (auto& [name, buf] : set->bufs)
      if (!buf.guards_intact()) return fail(status::out_of_bounds, fmt::format("wrote outside buffer '{}'", name));
  for (auto& [name, buf] : ws->inputs)
    if (!buf.guards_intact()) return fail(status::out_of_bounds, fmt::format("wrote outside input '{}'", name));
  for (auto& [name, buf] : ws->inputs)
    if (long long n = count_differing_bytes(buf, pristine.at(name)); n > 0)
      return fail(status::modified_input,
                  fmt::format("input '{}' changed while the candidate ran ({} bytes differ)", name, n));

  chk.pass = true;
  for (auto& t : op_.tensors) {
    if (!t.output) continue;
    DType dt = c1.dtype.at(t.name);
    long long n = ws->elems.at(t.name);
    const Buffer& r = ref.bufs.at(t.name);
    OutputError e1 = device_compare(t.name, c1.bufs.at(t.name), dt, r, DType::f64, n, t.tol);
    OutputError e2 = device_compare(t.name, c2.bufs.at(t.name), dt, r, DType::f64, n, t.tol);
    OutputError worst = e2.rel_l2 > e1.rel_l2 || !e2.pass ? e2 : e1;
    chk.outputs.push_back(worst);
    if (!e1.pass || !e2.pass) {
      chk.pass = false;
      chk.status = status::wrong_result;
      chk.message = fmt::format("{}: rel_l2 {:.3g} (limit {:.3g}), max_abs {:.3g}, non-finite {}", t.name, worst.rel_l2,
                                t.tol.rel_l2, worst.max_abs, worst.nonfinite);
    }
    // Two identical runs must agree to rounding; more is a race.
    OutputError d = device_compare(t.name, c1.bufs.at(t.name), dt, c2.bufs.at(t.name), dt, n,
                                   spec::Tolerance{t.tol.rel_l2 * 0.05, {}});
    if (chk.pass && !d.pass) {
      chk.pass = false;
      chk.status = status::race;
      chk.message = fmt::format("{}: two runs on identical inputs differ (rel {:.3g})", t.name, d.rel_l2);
    }
  }
  return chk;
}

long long Judge::count_differing_bytes(const Buffer& a, const Buffer& b) {
  if (a.bytes() != b.bytes()) return static_cast<long long>(std::max(a.bytes(), b.bytes()));
  if (!a.bytes()) return 0;
  Buffer acc(&dev_, sizeof(unsigned long long));
  TESSERA_CU(dev_.drv(), cuMemsetD8(acc.ptr(), 0, sizeof(unsigned long long)));
  CUfunction f = builtins_->function("tessera_count_diff");
  CUdeviceptr pa = a.ptr(), pb = b.ptr(), pc = acc.ptr();
  long long n = static_cast<long long>(a.bytes());
  void* args[] = {&pa, &pb, &n, &pc};
  int grid[3] = {static_cast<int>(std::min<long long>((n / 8 + 255) / 256 + 1, dev_.info().sm_count * 8LL)), 1, 1};
  int block[3] = {256, 1, 1};
  dev_.launch(f, grid, block, 0, args);
  dev_.sync();
  unsigned long long c = 0;
  TESSERA_CU(dev_.drv(), cuMemcpyDtoH(&c, acc.ptr(), sizeof c));
  return static_cast<long long>(c);
}

ShapeTiming Judge::time_one(const LoadedProgram& cand, const spec::Shape& s, const JudgeSettings& st) {
  ShapeTiming tm;
  tm.shape = s.label();
  auto ws = make_workspace(dev_, *builtins_, op_, s, st.bench_seed);
  PlanRunner runner(dev_, op_, cublas_.get(), python_.get());
  std::string key = fmt::format("{}#{}", s.label(), st.bench_seed);
  announce(fmt::format("the float64 reference and the baseline on {}", s.label()), st.trusted_step_s);
  if (!bench_ref_.count(key)) {
    OutputSet ref = runner.make_outputs(reference_, *ws, true);
    runner.poison(ref);
    runner.run(reference_, *ws, ref);
    dev_.sync();
    for (auto& t : op_.tensors)
      if (t.output) bench_ref_[key].emplace(t.name, std::move(ref.bufs.at(t.name)));
  }
  OutputSet co = runner.make_outputs(cand, *ws, false);
  OutputSet bo = runner.make_outputs(baseline_, *ws, false);
  auto timed = [&](const LoadedProgram& p, OutputSet& o) {
    runner.poison(o);
    flush(st);
    CUevent a = dev_.record();
    runner.run(p, *ws, o);
    CUevent b = dev_.record();
    double ms = dev_.elapsed_ms(a, b);
    dev_.release(a);
    dev_.release(b);
    return ms;
  };
  // A Python baseline (judge_python.h) is timed once per shape in the reference process;
  // then only the candidate is timed here, and the batches have no baseline to filter by.
  const bool py_base = python_ && python_->has_baseline();
  const Timing* py_timing = nullptr;
  if (py_base) {
    announce(fmt::format("the baseline on {}, timed in the reference process", s.label()), st.trusted_step_s);
    py_timing = &python_->baseline(key, ws->b, ws->inputs, st.min_samples, st.max_samples, st.target_rse,
                                   st.max_seconds_per_shape);
  }
  const LoadedProgram* base = py_base ? nullptr : &baseline_;
  dev_.reset_persisting_l2();
  try {
    // Warm-ups (module load, first touch), the baseline's first: its time is the
    // yardstick of the timing step's limit. The step may take two timing attempts
    // (graph, then events) of up to the time cap plus one batch each, and the
    // candidate may be step_factor times as slow as the baseline.
    double base_s = std::max(py_base ? py_timing->median_ms : timed(baseline_, bo), 1e-3) * 1e-3;
    announce(fmt::format("timing of the candidate on {}", s.label()),
             st.step_floor_s + 2 * st.max_seconds_per_shape +
                 2.0 * (std::max(1, st.graph_rounds) + 3) * (1 + st.step_factor) * base_s);
    timed(cand, co);
    // The method is chosen once per shape, from the baseline (the same program for
    // every candidate), so that all candidates of a shape are timed alike.
    double warm_b = py_base ? py_timing->median_ms : timed(baseline_, bo);
    std::string method_key = fmt::format("{}#{}", key, st.graph_below_ms);
    if (!graph_shape_.count(method_key)) graph_shape_[method_key] = st.graph_below_ms > 0 && warm_b < st.graph_below_ms;
    bool graph = graph_shape_.at(method_key);
    std::vector<double> cs, bs;
    std::string why;
    // The baseline's usual time on this shape: what this worker measured before, or
    // else what the store holds for this device (JudgeSettings::baseline_prior_ms).
    // The store does not say how its figures were timed, so its prior is used only
    // for the default method (events, write flush), which nearly all of them are.
    std::string best_key = fmt::format("{}#{}", method_key, st.l2_flush);
    double prior = base_best_.count(best_key) ? base_best_.at(best_key) : 0;
    if (!prior && !graph && !py_base && st.l2_flush == "write" && st.baseline_prior_ms.count(tm.shape))
      prior = st.baseline_prior_ms.at(tm.shape);
    BatchSelection sel;
    if (graph && time_batched(runner, cand, base, *ws, co, bo, st, true, prior, cs, bs, &sel, &why)) {
      tm.method = "graph";
    } else {
      time_batched(runner, cand, base, *ws, co, bo, st, false, prior, cs, bs, &sel, &why);
      tm.method = graph ? "events (graph capture failed: " + why + ")" : "events";
    }
    if (st.l2_flush == "read") tm.method += ", read flush";  // not compared with write-flush figures
    if (py_base) tm.method += "; baseline: " + python_->baseline_what() + ", timed in the reference process";
    dev_.sync();
    tm.batches = sel.total;
    tm.batches_set_aside = sel.total - sel.kept;
    tm.disturbed = prior > 0 && summarize(bs).median_ms > (1 + kBatchTolerance) * prior;
    dump_samples(tm.shape, tm.method, sel);
    tm.candidate = summarize(cs);
    tm.baseline = py_base ? *py_timing : summarize(bs);
    if (tm.baseline.median_ms > 0 && (!base_best_.count(best_key) || tm.baseline.median_ms < base_best_.at(best_key)))
      base_best_[best_key] = tm.baseline.median_ms;
  } catch (DriverError& e) {
    if (is_sticky(e.code)) throw StickyFault(e.what());
    throw;
  }
  tm.speedup = tm.candidate.median_ms > 0 ? tm.baseline.median_ms / tm.candidate.median_ms : 0;
  // The outputs of the last timed launch must still be right.
  tm.after.shape = tm.shape;
  tm.after.seed = st.bench_seed;
  tm.after.pass = true;
  for (auto& t : op_.tensors) {
    if (!t.output) continue;
    OutputError e = device_compare(t.name, co.bufs.at(t.name), co.dtype.at(t.name), bench_ref_.at(key).at(t.name),
                                   DType::f64, ws->elems.at(t.name), t.tol);
    tm.after.outputs.push_back(e);
    if (!e.pass) {
      tm.after.pass = false;
      tm.after.status = status::wrong_result;
      tm.after.message = fmt::format("after timing, {}: rel_l2 {:.3g}, non-finite {}", t.name, e.rel_l2, e.nonfinite);
    }
  }
  for (auto& [name, buf] : co.bufs)
    if (!buf.guards_intact()) {
      tm.after.pass = false;
      tm.after.status = status::out_of_bounds;
      tm.after.message = fmt::format("wrote outside buffer '{}' during timing", name);
    }
  return tm;
}

// Timing in batches of `graph_rounds` rounds of
//   poison, flush L2, event, candidate, event, poison, flush L2, event, baseline, event
// enqueued without waiting, then one synchronization and the events read back:
// every sample is cold-L2 and A/B interleaved, and the GPU never idles between
// samples (a per-sample synchronization left it idle long enough to time
// memory-bound kernels 2-4x slow and to spread repeated runs by 12 %, H200,
// 2026-11-30). With `graph`, a batch is captured once into a CUDA graph (events as
// graph nodes) and replayed, so no launch of a short program waits for the CPU.
// Batches repeat until the stopping rule holds. Returns false (with why) when
// capture or instantiation fails; the stream is left usable and nothing is kept.
bool Judge::time_batched(PlanRunner& runner, const LoadedProgram& cand, const LoadedProgram* base, const Workspace& ws,
                         OutputSet& co, OutputSet& bo, const JudgeSettings& st, bool graph, double prior_ms,
                         std::vector<double>& cs, std::vector<double>& bs, BatchSelection* sel, std::string* why) {
  Driver& d = dev_.drv();
  CUstream s = dev_.stream();
  // Round 0 of every batch is a warm-up, timed and dropped: the first launch after
  // the host synchronization was slow in every batch (about 2x for memory-bound
  // rmsnorm shapes, H200, 2026-11-30, measured before the gate below existed), which
  // put a tenth of the samples in a tail. Kept as a warm-up with the gate.
  const int rounds = std::max(1, st.graph_rounds) + 1;
  std::vector<CUevent> ev(4 * static_cast<size_t>(rounds));
  const bool dumping = std::getenv("TESSERA_DUMP_SAMPLES") != nullptr;
  batch_clocks_.clear();
  for (auto& e : ev) TESSERA_CU(d, cuEventCreate(&e, CU_EVENT_DEFAULT));
  CUgraph g = nullptr;
  CUgraphExec exec = nullptr;
  auto cleanup = [&] {
    if (exec) d.cuGraphExecDestroy(exec);
    if (g) d.cuGraphDestroy(g);
    for (auto e : ev) d.cuEventDestroy(e);
  };
  auto record = [&](CUevent e) {
    if (graph) TESSERA_CU(d, cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_EXTERNAL));
    else TESSERA_CU(d, cuEventRecord(e, s));
  };
  // With events, the batch waits behind a gate until all of it is queued, so the
  // GPU never catches up with the host inside a timed pair of events. (A graph is
  // launched whole, and needs none.)
  auto enqueue = [&] {
    unsigned want = graph ? 0 : hold_gate();
    for (int r = 0; r < rounds; ++r) {
      runner.poison(co);
      flush(st);
      record(ev[4 * r]);
      runner.run(cand, ws, co);
      record(ev[4 * r + 1]);
      if (!base) continue;  // (a baseline timed elsewhere)
      runner.poison(bo);
      flush(st);
      record(ev[4 * r + 2]);
      runner.run(*base, ws, bo);
      record(ev[4 * r + 3]);
    }
    if (!graph) release_gate(want);
  };
  try {
    if (graph) {
      TESSERA_CU(d, cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
      try {
        enqueue();
      } catch (...) {
        CUgraph partial = nullptr;
        d.cuStreamEndCapture(s, &partial);  // end the capture whatever happened
        if (partial) d.cuGraphDestroy(partial);
        throw;
      }
      TESSERA_CU(d, cuStreamEndCapture(s, &g));
      TESSERA_CU(d, cuGraphInstantiateWithFlags(&exec, g, 0));
    }
    // Batches taken while the baseline ran slower than its best (or than its usual
    // time, `prior_ms`, during the first 80 % of the time cap) are set aside
    // (batch_filter.h); the stopping rule applies to the batches kept.
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<double>> cb, bb;
    const double settle_s = 0.8 * st.max_seconds_per_shape;
    for (int taken = 0;;) {
      if (graph) TESSERA_CU(d, cuGraphLaunch(exec, s));
      else enqueue();
      dev_.sync();
      if (dumping)
        batch_clocks_.push_back({sm_clock_mhz(dev_.info().ordinal), clock_event_reasons(dev_.info().ordinal)});
      cb.emplace_back();
      bb.emplace_back();
      for (int r = 1; r < rounds; ++r, ++taken) {
        float a = 0, b = 0;
        TESSERA_CU(d, cuEventElapsedTime(&a, ev[4 * r], ev[4 * r + 1]));
        if (base) TESSERA_CU(d, cuEventElapsedTime(&b, ev[4 * r + 2], ev[4 * r + 3]));
        cb.back().push_back(a);
        bb.back().push_back(b);
      }
      double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      bool settling = prior_ms > 0 && spent < settle_s;
      *sel = select_batches(cb, bb, settling ? prior_ms : 0, kBatchTolerance);
      int kept = static_cast<int>(sel->candidate_ms.size());
      if (spent > st.max_seconds_per_shape) break;
      if (settling && !sel->prior_met) continue;  // wait for the machine to come back
      if (kept >= st.max_samples || taken >= 4 * st.max_samples) break;
      if (kept >= st.min_samples && summarize(sel->candidate_ms).rse < st.target_rse &&
          (!base || summarize(sel->baseline_ms).rse < st.target_rse))
        break;
    }
    if (dumping) raw_batches_ = {cb, bb};
    cs = sel->candidate_ms;
    bs = sel->baseline_ms;
  } catch (DriverError& e) {
    cleanup();
    if (!graph || is_sticky(e.code)) throw;  // plain launches failing is the candidate's fault
    cs.clear();
    bs.clear();
    *why = e.what();
    return false;
  } catch (std::exception& e) {
    cleanup();
    if (!graph) throw;
    cs.clear();
    bs.clear();
    *why = e.what();
    return false;
  }
  cleanup();
  return true;
}

// A diagnostic for timing noise: with TESSERA_DUMP_SAMPLES=DIR set in the worker's
// environment, every timed shape appends one JSON line to DIR/samples.jsonl with the
// raw samples in the order they were taken (batches of `graph_rounds`).
void Judge::dump_samples(const std::string& shape, const std::string& method, const BatchSelection& sel) {
  const char* dir = std::getenv("TESSERA_DUMP_SAMPLES");
  if (!dir || !*dir) return;
  std::vector<double> cs, bs;  // every sample taken, kept or not
  for (auto& b : raw_batches_.first) cs.insert(cs.end(), b.begin(), b.end());
  for (auto& b : raw_batches_.second) bs.insert(bs.end(), b.begin(), b.end());
  nlohmann::json clocks = nlohmann::json::array(), reasons = nlohmann::json::array();
  for (auto [mhz, why] : batch_clocks_) {
    clocks.push_back(mhz);
    reasons.push_back(why);
  }
  nlohmann::json line = {{"shape", shape},         {"method", method},          {"candidate_ms", cs},
                         {"baseline_ms", bs},      {"batch_sm_mhz", clocks},    {"batch_clock_reasons", reasons},
                         {"batches_kept", sel.kept}, {"reference_ms", sel.reference_ms}};
  std::ofstream f(std::string(dir) + "/samples.jsonl", std::ios::app);
  f << line.dump() << "\n";
}

unsigned Judge::hold_gate() {
  Driver& d = dev_.drv();
  if (!gate_word_.bytes()) {
    gate_word_ = Buffer(&dev_, sizeof(unsigned));
    TESSERA_CU(d, cuMemsetD32(gate_word_.ptr(), 0, 1));
  }
  unsigned want = ++gate_value_;
  CUdeviceptr w = gate_word_.ptr();
  unsigned long long timeout_ns = 100'000'000;  // never hold the stream longer than 0.1 s
  void* args[] = {&w, &want, &timeout_ns};
  int grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
  dev_.launch(builtins_->function("tessera_gate"), grid, block, 0, args);
  return want;
}

void Judge::release_gate(unsigned value) {
  Driver& d = dev_.drv();
  TESSERA_CU(d, cuMemsetD32Async(gate_word_.ptr(), value, 1, dev_.aux_stream()));
}

void Judge::flush(const JudgeSettings& st) {
  if (st.l2_flush != "read") {
    dev_.flush_l2();
    return;
  }
  int blocks = dev_.info().sm_count * 8;
  if (flush_sink_.bytes() < static_cast<size_t>(blocks) * sizeof(unsigned)) flush_sink_ = Buffer(&dev_, blocks * sizeof(unsigned));
  CUfunction f = builtins_->function("tessera_read_flush");
  CUdeviceptr p = dev_.flush_buffer(), sink = flush_sink_.ptr();
  long long n16 = static_cast<long long>(dev_.flush_bytes() / 16);
  void* args[] = {&p, &n16, &sink};
  int grid[3] = {blocks, 1, 1};
  int block[3] = {512, 1, 1};
  dev_.launch(f, grid, block, 0, args);
}

OutputError Judge::device_compare(const std::string& name, const Buffer& got, DType dt, const Buffer& ref,
                                  DType ref_dt, long long n, const spec::Tolerance& tol) {
  Buffer acc(&dev_, 4 * sizeof(double));
  TESSERA_CU(dev_.drv(), cuMemsetD8(acc.ptr(), 0, 4 * sizeof(double)));
  OutputError e;
  e.name = name;
  if (n > 0) {
    if (ref_dt != DType::f64 && ref_dt != dt)
      throw std::logic_error("device_compare: the reference must be float64 or of the output's dtype");
    CUfunction f = builtins_->function(std::string(ref_dt == DType::f64 ? "tessera_compare_" : "tessera_compare_same_") +
                                       spec::dtype_name(dt));
    CUdeviceptr g = got.ptr(), r = ref.ptr(), a = acc.ptr(), b = acc.ptr() + 3 * sizeof(double);
    long long nn = n;
    void* args[] = {&g, &r, &nn, &a, &b};
    int grid[3] = {static_cast<int>(std::min<long long>((n + 255) / 256, dev_.info().sm_count * 8LL)), 1, 1};
    int block[3] = {256, 1, 1};
    dev_.launch(f, grid, block, 0, args);
    dev_.sync();
  }
  double h[4];
  TESSERA_CU(dev_.drv(), cuMemcpyDtoH(h, acc.ptr(), sizeof h));
  unsigned long long bad;
  std::memcpy(&bad, &h[3], sizeof bad);
  e.nonfinite = static_cast<long long>(bad);
  e.max_abs = h[2];
  e.rel_l2 = h[1] > 0 ? std::sqrt(h[0] / h[1]) : std::sqrt(h[0]);
  e.pass = e.nonfinite == 0 && e.rel_l2 <= tol.rel_l2 && (!tol.max_abs || e.max_abs <= *tol.max_abs);
  return e;
}

EvalReport Judge::evaluate(const LoadedProgram& cand, const JudgeSettings& st) {
  EvalReport rep;
  auto t0 = std::chrono::steady_clock::now();
  rep.clock_mhz_before = sm_clock_mhz(dev_.info().ordinal);
  rep.temperature_c_before = gpu_temperature_c(dev_.info().ordinal);
  try {
    if (st.validate) {
      unsigned long long k = 0;
      for (auto& s : op_.validation_shapes) {
        for (int i = 0; i < st.seeds; ++i) {
          ShapeCheck c = validate_one(cand, s, mix(st.seed_base, ++k), st);
          for (auto& o : c.outputs) rep.max_rel_l2 = std::max(rep.max_rel_l2, o.rel_l2);
          rep.checks.push_back(c);
          if (!c.pass) {
            rep.status = c.status;
            rep.message = fmt::format("shape {} seed {}: {}", c.shape, c.seed, c.message);
            return rep;
          }
        }
      }
    }
    if (st.benchmark) {
      double logsum = 0;
      for (auto& s : op_.benchmark_shapes) {
        ShapeTiming t = time_one(cand, s, st);
        for (auto& o : t.after.outputs) rep.max_rel_l2 = std::max(rep.max_rel_l2, o.rel_l2);
        rep.timings.push_back(t);
        if (!t.after.pass) {
          rep.status = t.after.status;
          rep.message = fmt::format("shape {}: {}", t.shape, t.after.message);
          return rep;
        }
        logsum += std::log(t.speedup);
      }
      rep.geomean_speedup = std::exp(logsum / static_cast<double>(rep.timings.size()));
    }
  } catch (StickyFault& e) {
    rep.status = status::crashed;
    rep.message = e.what();
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    throw ContextLost(rep);  // the worker exits after reporting
  } catch (DriverError& e) {
    rep.status = status::launch_error;
    rep.message = e.what();
  } catch (std::exception& e) {
    rep.status = status::launch_error;
    rep.message = e.what();
  }
  rep.clock_mhz_after = sm_clock_mhz(dev_.info().ordinal);
  rep.temperature_c_after = gpu_temperature_c(dev_.info().ordinal);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace tessera::evaluator
