// evaluator/judge.h — validation and timing of one candidate against the
// operator's float64 reference and its baseline, on one device.
//
// The judge owns the inputs (generated on the device from recorded seeds), the
// reference outputs (float64), and the rules of EVALUATION.md: NaN-poisoned
// outputs and scratch, guard zones, input checksums, a double run to catch
// races, cold-L2 event timing interleaved with the baseline, and a re-check of
// the outputs of the last timed launch. It never sees where a candidate came from.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "evaluator/batch_filter.h"
#include "evaluator/cublas.h"
#include "evaluator/device.h"
#include "evaluator/l2_flush.h"
#include "evaluator/nvml.h"
#include "evaluator/plan_runner.h"
#include "evaluator/report.h"
#include "evaluator/stopping_rule.h"
#include "spec/spec.h"

namespace tessera::evaluator {

class PythonSide;  // evaluator/judge_python.h

struct JudgeSettings {
  int seeds = 3;                      // fresh seeds per validation shape
  unsigned long long seed_base = 1;   // validation seeds derive from this and the candidate
  unsigned long long bench_seed = 7;  // inputs of the benchmark shapes (one per run)
  bool validate = true;
  bool benchmark = true;
  int min_samples = 10;
  int max_samples = 200;
  double target_rse = 0.01;  // stop when both candidate and baseline are this tight
  double max_seconds_per_shape = 1.0;
  // Which criterion ends a shape's timing under those caps (evaluator/stopping_rule.h):
  // the relative standard error above (the default), or the entropy plateau.
  StoppingCriterion stopping_rule = StoppingCriterion::rse;
  // Shapes whose baseline warm-up launch is shorter than this are timed by
  // replaying a captured graph, for every candidate alike (0: never).
  double graph_below_ms = 0.02;
  int graph_rounds = 10;  // A/B pairs per batch (enqueued, or captured as one graph)
  // How L2 is evicted before each timed launch (evaluator/l2_flush.h); an experiment
  // knob: write is the default.
  L2Flush l2_flush = L2Flush::write;
  // The baseline's usual median per shape label on this device (from the store; may
  // be empty). During the first half of the time cap, batches whose baseline runs
  // more than 15 % above it are set aside, so a process that starts while the machine
  // is disturbed waits instead of timing the disturbance.
  std::map<std::string, double> baseline_prior_ms;
  // Time limits of an evaluation's steps, announced to the agent before each step
  // (docs/statuses.md, "Time limits"). A step that runs the candidate may take
  // step_floor_s plus step_factor times what the reference (validation) or the
  // baseline (timing) took on that shape in this worker; a step that runs only
  // tessera's own programs (the float64 reference, the baseline) trusted_step_s.
  double step_floor_s = 5;
  double step_factor = 20;
  double trusted_step_s = 600;
};

class Judge {
 public:
  Judge(Device& dev, const spec::Operator& op, LoadedProgram reference, LoadedProgram baseline);
  ~Judge();
  EvalReport evaluate(const LoadedProgram& candidate, const JudgeSettings& settings);
  // Told what step starts and its wall-clock limit (the worker forwards it to the agent).
  using Watch = std::function<void(const std::string& what, double limit_s)>;
  void set_watch(Watch w) { watch_ = std::move(w); }
  // `tessera run`: runs a program on the given inputs (raw bytes in each
  // tensor's dtype), checks its launches and guard zones, writes every output
  // to outputs_dir/<name>.npy (float64 for the reference), and with repeat > 0
  // times that many cold-L2 launches. Returns {"outputs", "median_ms", ...}.
  nlohmann::json run_inputs(const LoadedProgram& p, const spec::Shape& s,
                            const std::map<std::string, std::vector<unsigned char>>& inputs, bool is_reference,
                            int repeat, const std::string& outputs_dir);

 private:
  ShapeCheck validate_one(const LoadedProgram& cand, const spec::Shape& s, unsigned long long seed,
                          const JudgeSettings& st);
  void compare_outputs(ShapeCheck& chk, const OutputSet& c1, const OutputSet& c2, const OutputSet& ref,
                       const Workspace& ws);
  void announce(const std::string& what, double limit_s) const {
    if (watch_) watch_(what, limit_s);
  }
  // Seconds the float64 reference takes on a validation shape (launch to finish),
  // measured once per shape and worker: the yardstick of the validation steps' limits.
  double reference_seconds(const spec::Shape& s, const JudgeSettings& st);
  std::map<std::string, double> ref_seconds_;
  Watch watch_;
  ShapeTiming time_one(const LoadedProgram& cand, const spec::Shape& s, const JudgeSettings& st);
  // TESSERA_DUMP_SAMPLES diagnostics: per batch SM clock and clock event reasons,
  // and every sample of the last shape timed (candidate, baseline batches).
  std::vector<std::pair<double, unsigned long long>> batch_clocks_;
  std::pair<std::vector<std::vector<double>>, std::vector<std::vector<double>>> raw_batches_;
  void dump_samples(const std::string& shape, const std::string& method, const BatchSelection& sel);
  // What one shape's timing runs: the runner, the candidate and the baseline (null: a
  // baseline timed elsewhere, the candidate alone is timed), the inputs, their outputs.
  struct TimedPair {
    PlanRunner& runner;
    const LoadedProgram& cand;
    const LoadedProgram* base;
    const Workspace& ws;
    OutputSet& co;
    OutputSet& bo;
  };
  // The samples of the batches kept, which those were, and why a graph capture failed.
  struct Batches {
    std::vector<double> cs, bs;
    BatchSelection sel;
    std::string why;
  };
  bool time_batched(const TimedPair& p, const JudgeSettings& st, bool graph, double prior_ms, Batches* out);
  void enqueue_batch(const TimedPair& p, const JudgeSettings& st, bool graph, const std::vector<CUevent>& ev);
  int read_batch(const std::vector<CUevent>& ev, bool with_base, std::vector<double>& c, std::vector<double>& b);
  double time_once(PlanRunner& runner, const LoadedProgram& p, const Workspace& ws, OutputSet& o,
                   const JudgeSettings& st);
  std::map<std::string, Buffer> reference_outputs(PlanRunner& runner, const Workspace& ws);
  ShapeCheck check_after_timing(const OutputSet& co, const Workspace& ws, const std::map<std::string, Buffer>& ref);
  std::map<std::string, double> base_best_;  // lowest baseline median per (shape, seed, method, flush)

  Device& dev_;
  const spec::Operator& op_;
  LoadedProgram reference_, baseline_;
  std::unique_ptr<Module> builtins_;
  std::unique_ptr<Cublas> cublas_;
  std::unique_ptr<PythonSide> python_;  // an operator whose reference is Python (judge_python.h)
  // Error of a device output against a device float64 reference, reduced on the GPU.
  // ref_dt is float64 (a reference) or the output's own dtype (two runs of one candidate).
  OutputError device_compare(const std::string& name, const Buffer& got, spec::DType dt, const Buffer& ref,
                             spec::DType ref_dt, long long n, const spec::Tolerance& tol);
  // Evicts L2 the way the settings say (a stream operation, capturable).
  void flush(const JudgeSettings& st);
  std::map<L2Flush, std::unique_ptr<L2Evictor>> evictors_;
  Buffer gate_word_;  // tessera_gate's word: a batch runs once the host has queued all of it
  unsigned gate_value_ = 0;
  // Holds the stream behind tessera_gate (at most 0.1 s) until release_gate(value):
  // timed launches queued in between start back to back, so the GPU never catches up
  // with the host inside a timed pair of events. Not capturable (graphs need none).
  unsigned hold_gate();
  void release_gate(unsigned value);
  // Bytes that differ between two equally sized buffers, counted on the device.
  long long count_differing_bytes(const Buffer& a, const Buffer& b);
  // Reference outputs (float64) of benchmark shapes, computed once per worker and kept on the device.
  std::map<std::string, std::map<std::string, Buffer>> bench_ref_;
  // Per benchmark shape (and threshold): timed as a replayed graph or not, decided
  // the first time from the baseline's warm-up launch and kept for the worker's life.
  std::map<std::string, bool> graph_shape_;
};

// Thrown when a candidate's fault left the context unusable (illegal address,
// trap): the report is final and the worker process must be replaced.
struct ContextLost : std::runtime_error {
  EvalReport report;
  explicit ContextLost(EvalReport r) : std::runtime_error(r.message), report(std::move(r)) {}
};

}  // namespace tessera::evaluator
