// benchmarks/search/paired_runs.cpp — one row per seed of one strategy on one recorded
// space, for comparing two builds (or two settings) of a strategy seed by seed.
//
// search-bench prints means; a change of a strategy is judged by the difference it
// makes on the same seeds, whose standard error is far smaller than that of two
// means (the runs of two variants on one seed share their start). This prints the
// rows; benchmarks/search/paired_diff.py pairs two files of them.
//
// Usage: tessera_search_paired [--strategy S] [--budget N|cutoff|tenth] [--seeds A-B]
//        [--parallel P] [--history] CACHE
// (--history: before each seed's row, its evaluations in order as comment lines: n, the
// configuration, optimum/cost (0 for a failure).)
// Output: a comment line with the space, then per seed (tab-separated): seed, score
// (over the space's cutoff; a run shorter than the cutoff keeps its last best),
// optimum/best at the end of the run, 1 if that is within 3 % of the optimum else 0,
// evaluations to within 3 % (budget + 1 if never), the best configuration (its cache key).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include "search/kt_cache.h"
#include "search/scoring.h"
#include "search/simulation.h"
#include "search/strategy.h"

namespace {

using namespace tessera::search;

int usage() {
  std::cerr << "usage: tessera_search_paired [--strategy S] [--budget N|cutoff|tenth] [--seeds A-B] [--parallel P] "
               "[--history] CACHE\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string strategy = default_strategy(), budget_arg = "tenth", cache;
  uint64_t first = 1, last = 100;
  size_t parallel = 1;
  bool history = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool more = i + 1 < argc;
    if (a == "--strategy" && more) {
      strategy = argv[++i];
    } else if (a == "--budget" && more) {
      budget_arg = argv[++i];
    } else if (a == "--parallel" && more) {
      parallel = static_cast<size_t>(std::atoi(argv[++i]));
    } else if (a == "--seeds" && more) {
      std::string s = argv[++i];
      size_t dash = s.find('-');
      first = std::strtoull(s.c_str(), nullptr, 10);
      last = dash == std::string::npos ? first : std::strtoull(s.c_str() + dash + 1, nullptr, 10);
    } else if (a == "--history") {
      history = true;
    } else if (a.rfind("--", 0) == 0 || !cache.empty()) {
      return usage();
    } else {
      cache = a;
    }
  }
  if (cache.empty() || last < first) return usage();

  Simulation sim = Simulation::from_kt_cache(read_kt_cache(cache));
  RandomBaseline baseline(sim.sorted_costs(), sim.failed());
  size_t cutoff = baseline.cutoff();
  size_t tenth = std::max<size_t>(1, static_cast<size_t>(std::ceil(0.10 * static_cast<double>(baseline.size()))));
  size_t budget = budget_arg == "cutoff"  ? cutoff
                  : budget_arg == "tenth" ? tenth
                                          : static_cast<size_t>(std::strtoull(budget_arg.c_str(), nullptr, 10));
  if (budget == 0) return usage();
  std::vector<double> curve = baseline.curve(cutoff);
  std::cout << fmt::format("# {} strategy {} configurations {} cutoff {} budget {} seeds {}-{}\n", cache, strategy,
                           baseline.size(), cutoff, budget, first, last);
  for (uint64_t seed = first; seed <= last; ++seed) {
    Simulation replay = sim;
    Tuning tuning(replay.space(), replay, Budget{budget, 1e30, parallel});
    make_strategy(strategy)->run(tuning, seed);
    std::vector<double> best = best_so_far(tuning.history(), baseline.worst());
    double end = fraction_of_optimum(best, budget, baseline);
    size_t to3 = budget + 1;
    for (size_t n = 0; n < best.size(); ++n)
      if (baseline.optimum() / best[n] >= 1.0 / 1.03) {
        to3 = n + 1;
        break;
      }
    if (history)
      for (size_t n = 0; n < tuning.history().size(); ++n) {
        const Trial& tr = tuning.history()[n];
        std::cout << fmt::format("# {} {} {} {:.4f}\n", seed, n + 1, replay.space().key(tr.config),
                                 tr.outcome.ok ? baseline.optimum() / tr.outcome.cost : 0.0);
      }
    auto found = tuning.best();
    std::cout << fmt::format("{}\t{:.6f}\t{:.6f}\t{}\t{}\t{}\n", seed, run_score(best, curve, baseline.optimum()), end,
                             end >= 1.0 / 1.03 ? 1 : 0, to3, found ? replay.space().key(found->config) : "-");
  }
  return 0;
}
