// agent/nightly.h — the nightly tuning job: its job file (runs/nightly/README.md)
// and its steps per operator: re-check the champion and the top N on this
// machine, then go on searching from the stored history.
//
// The report is written by the caller (cli/nightly.cpp), which also turns the
// outcome into the exit status: 0 all good, 3 a champion regressed, 4 a step
// failed (4 wins over 3; 2 is a bad job file or flag).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/recheck.h"

namespace tessera::agent {

// A job file that cannot be used; what() names the file and the field.
struct JobError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct NightlyOperator {
  std::string name;
  long long evaluations = 100;    // search budget; 0: re-check only
  std::optional<double> seconds;  // search time limit
  Proposer proposer = Proposer::search;
  std::string strategy;       // empty: the default strategy
  std::string template_name;  // empty: every template
  int top = 5;                // re-checked candidates, the champion included; 0: no re-check
};

struct NightlyJob {
  std::string source;  // where the job came from (for messages)
  std::string db = "runs/tessera.db";
  GpuSelection gpus;         // all (default) | none | 0,1,...
  std::string arch;          // empty: the GPU's
  bool require_gpu = false;  // no GPU is a failure, not a skip
  std::string report_dir = "runs/nightly/report";
  NoiseModel noise;
  bool per_shape = false;  // re-check the champion and each shape's instead of the top N (RecheckOptions)
  std::optional<unsigned long long> seed;  // empty: today's date (YYYYMMDD)
  std::vector<NightlyOperator> operators;
};

// Parses a job (JSON text); `origin` prefixes error messages (a file name).
// Throws JobError naming the field: unknown keys, wrong types, out-of-range
// values, unknown operators, strategies or proposers.
NightlyJob parse_job(const std::string& text, const std::string& origin);
NightlyJob load_job(const std::string& path);

struct NightlyOperatorResult {
  std::string name;
  RecheckResult recheck;
  bool rechecked = false;
  int search_code = -1;  // optimize's exit code; -1 not run
  std::vector<std::string> failures, skipped;
};

struct NightlyResult {
  std::vector<NightlyOperatorResult> operators;
  std::vector<std::string> failures;  // job-wide (no GPU while required, ...)
  bool regressed() const;
  bool failed() const;
  int exit_code() const;  // 0, 3 or 4 (see above)
};

namespace nightly_exit {
constexpr int ok = 0, usage = 2, regression = 3, failure = 4;
}

// Runs the steps for every operator; failures of one operator do not stop the
// others. Progress goes to stderr, each step's summary to stdout.
NightlyResult run_nightly(const NightlyJob& job, bool quiet);

}  // namespace tessera::agent
