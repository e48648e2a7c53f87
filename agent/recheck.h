// agent/recheck.h — the nightly re-check: the champion and the top N of an
// operator's leaderboard judged again on this machine (today's driver and
// toolkit, fresh input seeds), each compared with its stored figure.
//
// A candidate is judged again from its stored source, as one run with strategy
// and proposer "recheck" (its settings record the champion and the noise
// model, so a report can recompute the verdicts). Without a GPU the sources are
// only compiled again with today's NVRTC; nothing is timed.
//
// Noise model. Per benchmark shape, the relative standard error of a stored
// median is estimated from its spread and sample count, assuming roughly
// normal samples: sigma ~ (p90 - median) / 1.2816, se(median) ~ 1.2533 sigma /
// sqrt(n). A shape is slower when new/old - 1 exceeds
//   tolerance = max(noise_threshold, z * sqrt(se_old^2 + se_new^2) / median_old)
// (defaults: threshold 5 %, z = 3). A champion regressed when any shape is
// slower, or when it no longer passes (validation, crash, timeout, compile). A
// shape timed by another method than before (events vs graph) is not compared.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/optimize.h"
#include "store/report_queries.h"
#include "store/store.h"

namespace tessera::agent {

struct NoiseModel {
  double threshold = 0.05;  // the smallest change reported, relative
  double z = 3.0;           // standard errors beyond which a change is real
};

struct ShapeChange {
  std::string shape;
  double old_ms = 0, new_ms = 0, ratio = 0, tolerance = 0;
  int old_samples = 0, new_samples = 0;
  bool slower = false, faster = false;
  // Timing methods ("events", "graph") of the two figures where the reports say;
  // figures taken by different methods are shown but never judged slower or faster.
  std::string old_method, new_method;
  bool method_changed() const { return !old_method.empty() && !new_method.empty() && old_method != new_method; }
  // Either figure was taken while the machine was disturbed throughout (the
  // baseline never came within 15 % of its usual time): shown, never judged.
  bool disturbed = false;
  bool comparable() const { return !method_changed() && !disturbed; }
};

// What a re-check found for one candidate.
struct Recheck {
  long long candidate_id = 0;
  int rank = 0;  // 1 = the champion
  bool champion = false;
  // unchanged | slower | faster | failed | first_figure | compiles | no_longer_compiles | skipped
  std::string verdict;
  bool regression = false;  // slower or failed (or no longer compiles) while champion
  std::string status_before, status_now, note, device;
  double speedup_before = 0, speedup_now = 0;
  double time_ratio = 0;  // geomean over shapes of new / old candidate median
  long long stored_evaluation = 0, new_evaluation = 0;
  std::vector<ShapeChange> shapes;
};

// Relative standard error of a median from its p90 and sample count (see above);
// 0 when it cannot be estimated (one sample, no spread).
double relative_noise(double median_ms, double p90_ms, int samples);

// Compares a stored `ok` evaluation with a new one of the same candidate on the
// same GPU model (shapes matched by label). Sets verdict, shapes and ratios;
// `regression` is left to the caller (it depends on the rank).
Recheck compare(const store::StoredEvaluation& stored, const store::StoredEvaluation& now, const NoiseModel& noise);

struct RecheckOptions {
  std::string op, db = "runs/tessera.db", arch;
  GpuSelection gpus;
  int top = 5;                        // candidates re-checked, the champion included
  std::vector<long long> candidates;  // these instead of the top N (each keeps its leaderboard rank; 0 unranked)
  // The champion and each benchmark shape's champion (`leaderboard --per-shape`, what
  // `export --per-shape` serves) instead of the top N; then, in further runs (`rounds` in
  // all at most), the champions that this re-check has not judged yet. A champion judged again and
  // found slower leaves its shape to a runner-up whose figure is its search's, one timing
  // picked as the best of many; the further rounds judge those too, so that the table it
  // leaves is not biased toward what was timed once (gemm on the H200, 2026-12-05: four of
  // thirteen shapes after one round).
  bool per_shape = false;
  int rounds = 3;
  NoiseModel noise;
  evaluator::L2Flush l2_flush = evaluator::L2Flush::write;                         // see OptimizeOptions
  evaluator::StoppingCriterion stopping_rule = evaluator::StoppingCriterion::rse;  // see OptimizeOptions
  unsigned long long seed = 1;
  bool quiet = false;
};

struct RecheckResult {
  int code = 0;                 // 0 done (whatever the verdicts), 1 failure, 2 usage
  std::string error;            // when code != 0
  long long run_id = 0;         // the (first) re-check run
  std::vector<long long> runs;  // every run of it, in order (per_shape: one a round)
  std::string device;           // GPU model judged on; "(no GPU)" when none
  std::string skipped;          // what could not be done and why (no GPU, no stored figures)
  std::vector<Recheck> items;
  bool regressed() const;
};

RecheckResult recheck(const RecheckOptions& o);

// The verdicts of a stored re-check run (for reports), recomputed from its
// evaluations with the noise model recorded in its settings.
std::vector<Recheck> verdicts_of_run(store::Store& db, const store::RunRow& run);

namespace detail {
// Implemented in agent/session_rejudge.cpp with its Session (workers, compiler,
// judge): starts like optimize does, lets choose() pick stored candidates once
// the run exists and the GPU model is known, judges them again (without a GPU:
// compiles them again and records only the compile), and finishes the run.
struct Rejudged {
  long long candidate_id = 0;
  std::string status;  // the judge's status; "compiled"/"compile_error" without a GPU; "" skipped
  std::string note;
};
struct RejudgeRun {
  long long run_id = 0;
  std::string device, no_gpu_reason;  // no_gpu_reason empty when a GPU judged
  std::vector<Rejudged> items;
};
using Chooser = std::function<std::vector<long long>(long long run_id, const std::string& device)>;
// 0 done, 1 failure (*err), 2 unknown operator (*err).
int rejudge_stored(const OptimizeOptions& o, const Chooser& choose, RejudgeRun* out, std::string* err);
}  // namespace detail

}  // namespace tessera::agent
