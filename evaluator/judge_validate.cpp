// evaluator/judge_validate.cpp — validation of a candidate (EVALUATION.md): per
// validation shape and fresh seed, the candidate, the float64 reference, the candidate
// again; outputs, guard zones, inputs left untouched, and two runs that agree.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "evaluator/batch_filter.h"
#include "evaluator/judge.h"
#include "evaluator/judge_internal.h"
#include "evaluator/judge_python.h"
#include "evaluator/nvml.h"
#include "evaluator/plan_runner.h"

namespace tessera::evaluator {

using judge_detail::StickyFault;
using spec::DType;

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
  if (python_)
    announce(fmt::format("the float64 reference on {} (seed {}), in the reference process", s.label(), seed),
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

  compare_outputs(chk, c1, c2, ref, *ws);
  return chk;
}

// Both candidate runs against the reference (the worse error is kept) and against each
// other: two identical runs must agree to rounding; more is a race.
void Judge::compare_outputs(ShapeCheck& chk, const OutputSet& c1, const OutputSet& c2, const OutputSet& ref,
                            const Workspace& ws) {
  chk.pass = true;
  for (auto& t : op_.tensors) {
    if (!t.output) continue;
    DType dt = c1.dtype.at(t.name);
    long long n = ws.elems.at(t.name);
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
    OutputError d = device_compare(t.name, c1.bufs.at(t.name), dt, c2.bufs.at(t.name), dt, n,
                                   spec::Tolerance{t.tol.rel_l2 * 0.05, {}});
    if (chk.pass && !d.pass) {
      chk.pass = false;
      chk.status = status::race;
      chk.message = fmt::format("{}: two runs on identical inputs differ (rel {:.3g})", t.name, d.rel_l2);
    }
  }
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

}  // namespace tessera::evaluator
