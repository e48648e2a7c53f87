// store/report_queries.h — read-only queries behind `tessera report` and the
// nightly re-check: runs with their GPU busy fraction, the timeline of timed
// evaluations, a leaderboard per GPU model, evaluations with their ids.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace tessera::store {

struct RunRow {
  long long id = 0, budget = 0, evaluations = 0, timed = 0;
  std::string op, started, finished, strategy, proposer, arch, device, host, status, settings;
  std::optional<double> gpu_busy_fraction;
};

// An evaluation with its id (Store's EvaluationInfo has none).
struct StoredEvaluation {
  long long id = 0;
  std::string created;
  EvaluationInfo info;
};

struct TimelinePoint {
  long long evaluation_id = 0, candidate_id = 0;
  std::string created, device;
  double speedup = 0;
};

// Operators that have candidates, sorted.
std::vector<std::string> operators_in(Store& db);
// Runs of an operator, oldest first, with counts of their evaluations.
std::vector<RunRow> runs_of(Store& db, const std::string& op);
// Every `ok` evaluation of an operator, oldest first.
std::vector<TimelinePoint> ok_timeline(Store& db, const std::string& op);
// Candidates ranked by their latest timed evaluation (status other than
// `compiled`), on one GPU model if `device` is not empty; `ok` first, then by
// geomean speedup. `compiled` rows (no GPU) never hide a timed result.
std::vector<LeaderboardRow> timed_leaderboard(Store& db, const std::string& op, const std::string& device, int limit);
// GPU models with `ok` evaluations of an operator, most recent first.
std::vector<std::string> devices_of(Store& db, const std::string& op);
// The GPU model a leaderboard of op shows (timings compare only within one model): `asked`
// where given; else, where the history holds ok evaluations on more than one model, the
// model of the latest (and *note says so and names the others); else "" (every evaluation).
std::string leaderboard_device(Store& db, const std::string& op, const std::string& asked, std::string* note);
// One evaluation by id, with its per-shape rows.
std::optional<StoredEvaluation> evaluation(Store& db, long long id);
// Evaluations of a run, in order.
std::vector<StoredEvaluation> evaluations_of_run(Store& db, long long run_id);
// The latest `ok` evaluation of a candidate on a GPU model with an id below
// `before_id` (0: any): the stored figure a re-check is compared with.
std::optional<StoredEvaluation> previous_ok(Store& db, long long candidate_id, const std::string& device,
                                            long long before_id);

}  // namespace tessera::store
