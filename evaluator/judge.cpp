// evaluator/judge.cpp — the judge's entry points: construction, `tessera run`'s program
// on given inputs, the comparison of outputs on the device, and an evaluation's course
// (validation in judge_validate.cpp, timing in judge_timing.cpp).
#include "evaluator/judge.h"

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
#include "evaluator/judge_internal.h"
#include "evaluator/judge_python.h"
#include "evaluator/npy.h"
#include "evaluator/nvml.h"
#include "evaluator/plan_runner.h"

namespace tessera::evaluator {

using judge_detail::StickyFault;
using spec::DType;

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
      throw std::runtime_error(
          fmt::format("input '{}' has {} bytes, the spec's shape needs {}", t.name, it->second.size(), want));
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

void Judge::flush(const JudgeSettings& st) {
  auto& e = evictors_[st.l2_flush];
  if (!e) e = make_l2_evictor(st.l2_flush, dev_, *builtins_);
  e->evict();
}

OutputError Judge::device_compare(const std::string& name, const Buffer& got, DType dt, const Buffer& ref, DType ref_dt,
                                  long long n, const spec::Tolerance& tol) {
  Buffer acc(&dev_, 4 * sizeof(double));
  TESSERA_CU(dev_.drv(), cuMemsetD8(acc.ptr(), 0, 4 * sizeof(double)));
  OutputError e;
  e.name = name;
  if (n > 0) {
    if (ref_dt != DType::f64 && ref_dt != dt)
      throw std::logic_error("device_compare: the reference must be float64 or of the output's dtype");
    CUfunction f = builtins_->function(
        std::string(ref_dt == DType::f64 ? "tessera_compare_" : "tessera_compare_same_") + spec::dtype_name(dt));
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
          ShapeCheck c = validate_one(cand, s, seed_mix(st.seed_base, ++k), st);
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
