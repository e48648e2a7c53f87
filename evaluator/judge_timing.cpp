// evaluator/judge_timing.cpp — timing of a candidate beside the baseline (EVALUATION.md):
// per benchmark shape, cold-L2 A/B batches behind a gate or as a replayed graph, the
// batch filter, the stopping rule, and the outputs of the last timed launch re-checked.
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
#include "evaluator/stopping_rule.h"

namespace tessera::evaluator {

using judge_detail::StickyFault;
using spec::DType;

// A batch whose baseline median is more than this above the baseline's best is set
// aside (batch_filter.h). On the H200 (2026-11-30) the disturbed batches of the
// rmsnorm episodes were 40-100 % slower; at 5 % the filter also fought the ordinary
// drift of compute-bound cuBLAS shapes after heavy candidates (2-8 %: 42 % of the
// gemm scan's batches set aside, evaluations waiting up to 4 s), which is the
// machine's state, not a disturbance to wait out.
constexpr double kBatchTolerance = 0.15;

ShapeTiming Judge::time_one(const LoadedProgram& cand, const spec::Shape& s, const JudgeSettings& st) {
  ShapeTiming tm;
  tm.shape = s.label();
  auto ws = make_workspace(dev_, *builtins_, op_, s, st.bench_seed);
  PlanRunner runner(dev_, op_, cublas_.get(), python_.get());
  std::string key = fmt::format("{}#{}", s.label(), st.bench_seed);
  announce(fmt::format("the float64 reference and the baseline on {}", s.label()), st.trusted_step_s);
  if (!bench_ref_.count(key)) bench_ref_[key] = reference_outputs(runner, *ws);
  OutputSet co = runner.make_outputs(cand, *ws, false);
  OutputSet bo = runner.make_outputs(baseline_, *ws, false);
  auto timed = [&](const LoadedProgram& p, OutputSet& o) { return time_once(runner, p, *ws, o, st); };
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
    // The baseline's usual time on this shape: what this worker measured before, or
    // else what the store holds for this device (JudgeSettings::baseline_prior_ms).
    // The store does not say how its figures were timed, so its prior is used only
    // for the default method (events, write flush), which nearly all of them are.
    std::string best_key = fmt::format("{}#{}", method_key, l2_flush_name(st.l2_flush));
    double prior = base_best_.count(best_key) ? base_best_.at(best_key) : 0;
    if (!prior && !graph && !py_base && st.l2_flush == L2Flush::write && st.baseline_prior_ms.count(tm.shape))
      prior = st.baseline_prior_ms.at(tm.shape);
    const TimedPair pair{runner, cand, base, *ws, co, bo};
    Batches got;
    if (graph && time_batched(pair, st, true, prior, &got)) {
      tm.method = "graph";
    } else {
      time_batched(pair, st, false, prior, &got);
      tm.method = graph ? "events (graph capture failed: " + got.why + ")" : "events";
    }
    const BatchSelection& sel = got.sel;
    if (st.l2_flush == L2Flush::read) tm.method += ", read flush";  // not compared with write-flush figures
    if (py_base) tm.method += "; baseline: " + python_->baseline_what() + ", timed in the reference process";
    dev_.sync();
    tm.stopping_rule = stopping_criterion_name(st.stopping_rule);
    tm.batches = sel.total;
    tm.batches_set_aside = sel.total - sel.kept;
    tm.disturbed = prior > 0 && summarize(got.bs).median_ms > (1 + kBatchTolerance) * prior;
    dump_samples(tm.shape, tm.method, sel);
    tm.candidate = summarize(got.cs);
    tm.baseline = py_base ? *py_timing : summarize(got.bs);
    if (tm.baseline.median_ms > 0 && (!base_best_.count(best_key) || tm.baseline.median_ms < base_best_.at(best_key)))
      base_best_[best_key] = tm.baseline.median_ms;
  } catch (DriverError& e) {
    if (is_sticky(e.code)) throw StickyFault(e.what());
    throw;
  }
  tm.speedup = tm.candidate.median_ms > 0 ? tm.baseline.median_ms / tm.candidate.median_ms : 0;
  tm.after = check_after_timing(co, *ws, bench_ref_.at(key));
  tm.after.shape = tm.shape;
  tm.after.seed = st.bench_seed;
  return tm;
}

// One cold-L2 launch of p between two events (a warm-up: module load, first touch), in ms.
double Judge::time_once(PlanRunner& runner, const LoadedProgram& p, const Workspace& ws, OutputSet& o,
                        const JudgeSettings& st) {
  runner.poison(o);
  flush(st);
  CUevent a = dev_.record();
  runner.run(p, ws, o);
  CUevent b = dev_.record();
  double ms = dev_.elapsed_ms(a, b);
  dev_.release(a);
  dev_.release(b);
  return ms;
}

// The float64 reference's outputs on a benchmark shape's inputs, kept on the device.
std::map<std::string, Buffer> Judge::reference_outputs(PlanRunner& runner, const Workspace& ws) {
  OutputSet ref = runner.make_outputs(reference_, ws, true);
  runner.poison(ref);
  runner.run(reference_, ws, ref);
  dev_.sync();
  std::map<std::string, Buffer> kept;
  for (auto& t : op_.tensors)
    if (t.output) kept.emplace(t.name, std::move(ref.bufs.at(t.name)));
  return kept;
}

// The outputs of the last timed launch must still be right, and the guard zones intact.
ShapeCheck Judge::check_after_timing(const OutputSet& co, const Workspace& ws,
                                     const std::map<std::string, Buffer>& ref) {
  ShapeCheck after;
  after.pass = true;
  for (auto& t : op_.tensors) {
    if (!t.output) continue;
    OutputError e = device_compare(t.name, co.bufs.at(t.name), co.dtype.at(t.name), ref.at(t.name), DType::f64,
                                   ws.elems.at(t.name), t.tol);
    after.outputs.push_back(e);
    if (!e.pass) {
      after.pass = false;
      after.status = status::wrong_result;
      after.message = fmt::format("after timing, {}: rel_l2 {:.3g}, non-finite {}", t.name, e.rel_l2, e.nonfinite);
    }
  }
  for (auto& [name, buf] : co.bufs)
    if (!buf.guards_intact()) {
      after.pass = false;
      after.status = status::out_of_bounds;
      after.message = fmt::format("wrote outside buffer '{}' during timing", name);
    }
  return after;
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
bool Judge::time_batched(const TimedPair& p, const JudgeSettings& st, bool graph, double prior_ms, Batches* out) {
  Driver& d = dev_.drv();
  CUstream s = dev_.stream();
  StoppingRule rule{st.min_samples, st.max_samples, st.target_rse, st.max_seconds_per_shape};
  rule.criterion = st.stopping_rule;
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
  auto enqueue = [&] { enqueue_batch(p, st, graph, ev); };
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
      if (graph)
        TESSERA_CU(d, cuGraphLaunch(exec, s));
      else
        enqueue();
      dev_.sync();
      if (dumping)
        batch_clocks_.push_back({sm_clock_mhz(dev_.info().ordinal), clock_event_reasons(dev_.info().ordinal)});
      cb.emplace_back();
      bb.emplace_back();
      taken += read_batch(ev, p.base != nullptr, cb.back(), bb.back());
      double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      bool settling = prior_ms > 0 && spent < settle_s;
      out->sel = select_batches(cb, bb, settling ? prior_ms : 0, kBatchTolerance);
      if (rule.out_of_time(spent)) break;
      if (settling && !out->sel.prior_met) continue;  // wait for the machine to come back
      if (rule.enough(out->sel.candidate_ms, p.base ? &out->sel.baseline_ms : nullptr, taken)) break;
    }
    if (dumping) raw_batches_ = {cb, bb};
    out->cs = out->sel.candidate_ms;
    out->bs = out->sel.baseline_ms;
  } catch (std::exception& e) {
    cleanup();
    // Plain launches failing is the candidate's fault, and a sticky fault ends the worker.
    auto* de = dynamic_cast<DriverError*>(&e);
    if (!graph || (de && is_sticky(de->code))) throw;
    out->cs.clear();
    out->bs.clear();
    out->why = e.what();
    return false;
  }
  cleanup();
  return true;
}

// One batch enqueued: `ev.size() / 4` rounds of the candidate and the baseline between
// their events. With events (not a graph), the batch waits behind a gate until all of it
// is queued, so the GPU never catches up with the host inside a timed pair of events. (A
// graph is launched whole, and needs none.)
void Judge::enqueue_batch(const TimedPair& p, const JudgeSettings& st, bool graph, const std::vector<CUevent>& ev) {
  Driver& d = dev_.drv();
  CUstream s = dev_.stream();
  auto record = [&](CUevent e) {
    if (graph)
      TESSERA_CU(d, cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_EXTERNAL));
    else
      TESSERA_CU(d, cuEventRecord(e, s));
  };
  unsigned want = graph ? 0 : hold_gate();
  for (size_t r = 0; 4 * r < ev.size(); ++r) {
    p.runner.poison(p.co);
    flush(st);
    record(ev[4 * r]);
    p.runner.run(p.cand, p.ws, p.co);
    record(ev[4 * r + 1]);
    if (!p.base) continue;  // (a baseline timed elsewhere)
    p.runner.poison(p.bo);
    flush(st);
    record(ev[4 * r + 2]);
    p.runner.run(*p.base, p.ws, p.bo);
    record(ev[4 * r + 3]);
  }
  if (!graph) release_gate(want);
}

// The samples of a finished batch, round 0 (the warm-up) dropped; returns their count.
int Judge::read_batch(const std::vector<CUevent>& ev, bool with_base, std::vector<double>& c, std::vector<double>& b) {
  Driver& d = dev_.drv();
  int n = 0;
  for (size_t r = 1; 4 * r < ev.size(); ++r, ++n) {
    float a = 0, bt = 0;
    TESSERA_CU(d, cuEventElapsedTime(&a, ev[4 * r], ev[4 * r + 1]));
    if (with_base) TESSERA_CU(d, cuEventElapsedTime(&bt, ev[4 * r + 2], ev[4 * r + 3]));
    c.push_back(a);
    b.push_back(bt);
  }
  return n;
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
  nlohmann::json line = {{"shape", shape},           {"method", method},
                         {"candidate_ms", cs},       {"baseline_ms", bs},
                         {"batch_sm_mhz", clocks},   {"batch_clock_reasons", reasons},
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

}  // namespace tessera::evaluator
