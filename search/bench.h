// search/bench.h — scoring every strategy on recorded spaces: `tessera search-bench`.
//
// Runs each strategy with several seeds on a Simulation, scores each run with
// search/scoring, and prints one Markdown table per space. The budget of a run is
// the larger of the score's cutoff and 10% of the space, so the fraction of the
// optimum reached at 1%, 2%, 5% and 10% of the space is measured in the same runs.
// A strategy may plan with its budget (genetic_ils does), so how often a run with
// a budget of 10% of the space ends within 3% of the optimum is measured in runs
// of their own, one per seed (the same runs where the two budgets are equal).
//
// Beside the tables: a warm start from another device's cache (`--warm-from`),
// Kernel Tuner's strategies read from `benchmarks/search/kt_peer.py --json`
// (`--peer`), and the leave-one-space-out choice of a strategy (`--loso`).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "search/prior.h"
#include "search/simulation.h"

namespace tessera::search {

struct StrategyScore {
  std::string space;
  std::string strategy;
  int runs = 0;
  double score = 0;     // mean over runs
  double score_sd = 0;  // standard deviation over runs
  double at_1pct = 0;   // mean optimum / best after 1% of the space
  double at_2pct = 0;
  double at_5pct = 0;
  double at_10pct = 0;
  double within3_at_10pct = 0;      // share of runs whose best after 10% of the space is within 3% of the optimum
  double within3_budget_10pct = 0;  // the same for runs whose whole budget is 10% of the space
  // Median over runs of the evaluations it took to get within 3% of the optimum;
  // a run that never did counts as budget + 1 (so a median above the budget means
  // most runs did not get there).
  double evals_to_within3 = 0;
  double ms_per_run = 0;  // the strategy's own CPU time per run (the simulation costs ~nothing)
  // The strategy's share of a run's time when the recorded evaluation times are
  // paid too: strategy / (strategy + simulated evaluation seconds).
  double strategy_share = 0;
  std::vector<double> scores;  // per run, seeds in order
  bool peer = false;           // Kernel Tuner's, read from kt_peer.py's output
};

struct SpaceSummary {
  std::string name;
  size_t size = 0, failed = 0, cutoff = 0, budget = 0;
  double optimum = 0, median = 0;
};

SpaceSummary summarize(const std::string& name, const Simulation& sim);

// Runs `strategies` `repeats` times each (seeds first_seed, first_seed+1, ...),
// each run warm-started from `prior` when one is given.
std::vector<StrategyScore> score_strategies(const std::string& space_name, const Simulation& sim,
                                            const std::vector<std::string>& strategies, int repeats,
                                            uint64_t first_seed = 1, size_t parallel = 1,
                                            std::shared_ptr<const Prior> prior = nullptr);

void print_markdown(const SpaceSummary& space, const std::vector<StrategyScore>& rows, std::ostream& out);

// The strategies to score: `only` (checked against the registry), or every one
// but exhaustive when it is empty. Throws std::invalid_argument on an unknown name.
std::vector<std::string> bench_strategies(const std::vector<std::string>& only);

// Leave-one-space-out: for each space, the strategy with the highest mean score on
// the *other* spaces (tessera's strategies only), and how it scores on the one
// left out, beside the best there in hindsight and the default. `rows` holds every
// strategy on every space.
void print_leave_one_out(const std::vector<StrategyScore>& rows, std::ostream& out);

// The rows for a space from JSON lines (matched by file name): kt_peer.py --json's
// (Kernel Tuner's, peer) or search-bench --json's (tessera's). A strategy that
// appears twice: the later line wins.
std::vector<StrategyScore> peer_rows(const std::string& jsonl, const std::string& space_name);
// One JSON line per row, in the form peer_rows reads ("tool": "tessera").
std::string row_json(const StrategyScore& row);

struct SearchBenchOptions {
  std::vector<std::string> caches;  // Kernel Tuner cache files, one space each
  int repeats = 20;
  std::vector<std::string> only;  // strategies (empty: all but exhaustive)
  size_t parallel = 1;            // evaluations judged at once, as on that many GPUs
  std::string warm_from;          // another device's cache: every strategy with and without the warm start
  std::string peer;               // kt_peer.py --json output: Kernel Tuner's rows in the same tables
  bool leave_one_out = false;     // and the leave-one-space-out table at the end
  std::string json;               // append every row measured here to this file (JSON lines)
  std::string rows;               // rows measured before (an earlier --json file), printed with these
};

// `tessera search-bench --cache FILE... [--repeats R] [--strategies a,b|none] [--warm-from FILE]
// [--peer FILE] [--loso] [--json OUT] [--rows FILE]`. Returns an exit code (0, or 1 with a message on `out`).
int search_bench_main(const SearchBenchOptions& o, std::ostream& out);
int search_bench_main(const std::vector<std::string>& caches, int repeats, std::ostream& out,
                      const std::vector<std::string>& only = {}, size_t parallel = 1);

}  // namespace tessera::search
