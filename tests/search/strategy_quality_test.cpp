// tests/search/strategy_quality_test.cpp — the default strategy on every recorded
// space: above random search everywhere, at or above Kernel Tuner's best strategy
// on nearly all, within 3 % of the optimum on the H200 gemm space with 10 % of it
// more often than the former default, local search alone no default (on the large
// spaces, nor on a small one of tessera's own), and the warm start from another GPU
// getting within 3 % of the optimum sooner on each pair of GPUs; local search's tabu
// escapes paying on a space of many local optima. Scores of search/scoring (0 =
// random search).
//
// Every bar comes from the tables of docs/search.md (2026-12-03, seeds 1..20; the
// H200 runs of 10 %, seeds 1..300) and is checked on fewer seeds, so each run is
// deterministic and the bars leave room for the difference between a 5-seed and a
// 20-seed mean (its standard error is sd / sqrt(5), 0.03-0.14 on these spaces), not
// for a worse strategy. These runs are long (hundreds to two thousand evaluations
// of a model-based strategy), so they live in their own test program, run by the
// Release tests but not under the sanitizers (label `quality`, not `cpu`);
// strategies_test covers the same code there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "search/prior.h"
#include "search/scoring.h"
#include "search/strategy.h"
#include "tests/search/recorded_spaces.h"

namespace tessera::search {
namespace {

constexpr int kSeeds = 5;
struct Runs {
  double score = 0;                // mean over seeds
  std::vector<double> to_within3;  // evaluations until within 3 % of the optimum (budget + 1: never)
};

// Runs of `strategy` on seeds 1..seeds with a budget of the score's cutoff, or `budget`
// (then the score is of the runs as far as they went).
Runs run(const std::string& space, const std::string& strategy, int seeds, std::shared_ptr<const Prior> prior = {},
         size_t budget = 0) {
  const Simulation& sim = testing::recorded_space(space);
  RandomBaseline baseline(sim.sorted_costs(), sim.failed());
  size_t cutoff = baseline.cutoff();
  std::vector<double> curve = baseline.curve(cutoff);
  if (budget == 0) budget = cutoff;
  Runs out;
  for (int seed = 1; seed <= seeds; ++seed) {
    Simulation replay = sim;
    Tuning tuning(replay.space(), replay, Budget{budget, 1e30});
    tuning.set_prior(prior);
    make_strategy(strategy)->run(tuning, static_cast<uint64_t>(seed));
    std::vector<double> best = best_so_far(tuning.history(), baseline.worst());
    out.score += run_score(best, curve, baseline.optimum()) / seeds;
    size_t n = 0;
    while (n < best.size() && best[n] > 1.03 * baseline.optimum()) ++n;
    out.to_within3.push_back(n < best.size() ? static_cast<double>(n + 1) : static_cast<double>(budget + 1));
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Per space, from the tables of docs/search.md (seeds 1..20): `bar` is the default's
// 20-seed mean less three standard errors of a 5-seed mean (3 sd / sqrt 5, rounded
// down), never below 0.25 (random search scores 0 in expectation; its 5-seed mean has
// a standard deviation of 0.15-0.35 here, so 0.25 is clearly above it); `kt_best` is
// the best mean of Kernel Tuner 1.5.0's strategies there (kt_peer.py: 20 seeds,
// bayes_opt 3-10), NaN on tessera's own gemm scans, which Kernel Tuner's strategies
// were not run on.
struct Bar {
  const char* space;
  double bar;
  double kt_best;
};
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
const Bar kBars[] = {
    {"convolution-A100", 0.59, 0.682},         // 0.836 ± 0.179; Kernel Tuner genetic_algorithm
    {"dedispersion-A100", 0.41, 0.580},        // 0.653 ± 0.176; genetic_algorithm
    {"convolution-3060_laptop", 0.58, 0.456},  // 0.762 ± 0.134; dual_annealing
    {"convolution-Titan", 0.64, 0.613},        // 0.844 ± 0.149; genetic_algorithm
    {"gemm-2080_Ti", 0.55, 0.839},             // 0.810 ± 0.189; bayes_opt (5 runs)
    {"gemm-3090", 0.85, 0.755},                // 0.929 ± 0.059; genetic_algorithm (10 runs)
    {"pnpoly-3090", 0.46, 0.519},              // 0.779 ± 0.233; dual_annealing
    {"pnpoly-Titan", 0.51, 0.281},             // 0.861 ± 0.255; genetic_algorithm
    {"gemm-mma-H200", 0.59, kNone},            // 0.768 ± 0.126
    {"gemm-mma-H200-gated", 0.25, kNone},      // 0.521 ± 0.304 (300 seeds: 0.558 ± 0.291)
};

// Tabu escapes once restarts stop paying (strategy_greedy_ils.cpp; docs/search.md,
// 2026-12-05): on pnpoly-Titan (28 local optima) the default's mean over the 5 seeds of
// the bars is 0.901 with them and 0.684 without (seed 1 without them never gets within
// 3 %; 300 seeds: 0.869 against 0.801, paired +0.067 ± 0.013). The bar sits between.
constexpr const char* kEscapeSpace = "pnpoly-Titan";
constexpr double kEscapeBar = 0.80;

// One test, so that the long runs are made once per process (ctest runs each test
// in a process of its own).
TEST(DefaultStrategy, AboveRandomSearchEverywhereAndAtOrAboveKernelTunersBestOnSevenOfEight) {
  int at_or_above = 0, compared = 0;
  std::string below;
  for (const Bar& b : kBars) {
    double score = run(b.space, default_strategy(), kSeeds).score;
    EXPECT_GE(score, b.bar) << b.space;
    if (std::string(b.space) == kEscapeSpace) {
      EXPECT_GE(score, kEscapeBar) << b.space << ": tabu escapes";
    }
    EXPECT_GE(score, 0.25) << b.space;
    if (std::isnan(b.kt_best)) continue;
    // The bar, 5-seed means against 20-seed ones: a space counts when the
    // default is above Kernel Tuner's best less 0.05 (a third of the largest 5-seed
    // standard error here); the 20-seed tables are the evidence, this pins them.
    ++compared;
    if (score >= b.kt_best - 0.05)
      ++at_or_above;
    else
      below += std::string(" ") + b.space;
  }
  EXPECT_EQ(compared, 8);
  EXPECT_GE(at_or_above, 7) << "below Kernel Tuner's best on:" << below;
}

// The former default (genetic_ils) fails the same bars on at least two spaces (in
// the 20-seed tables it is 0.395 on convolution-3060_laptop and 0.288 on
// pnpoly-3090): the bars are not so low that any reasonable strategy passes them.
TEST(DefaultStrategy, BarsRejectTheFormerDefault) {
  int below = 0;
  for (const Bar& b : kBars)
    if (run(b.space, "genetic_ils", kSeeds).score < b.bar) ++below;
  EXPECT_GE(below, 2);
}

// The H200 question: runs of 10 % of the gated gemm scan (55 evaluations)
// that end within 3 % of its optimum. docs/search.md, 300 seeds: the default 84 %
// (seeds 1..100: 83), the former one (the model first, turns of 32) 77 % (seeds
// 1..100: 77), greedy_ils alone 94 %. The bar sits between the two defaults.
TEST(DefaultStrategy, WithinThreePercentOnTheH200GemmSpaceWithTenPercentOfIt) {
  const Simulation& sim = testing::recorded_space("gemm-mma-H200-gated");
  size_t budget = (sim.size() + 9) / 10;
  Runs runs = run("gemm-mma-H200-gated", default_strategy(), 100, nullptr, budget);
  auto within = std::count_if(runs.to_within3.begin(), runs.to_within3.end(), [&](double n) { return n <= budget; });
  EXPECT_GE(within, 80) << "of 100 runs of " << budget << " evaluations";
}

// Local search alone is better on the H200 gemm scans (above: 94 % of 300 runs) but
// no default. On the large spaces, on the 5 seeds of the bars, greedy_ils falls below
// the default's bar on four of the eight Kernel Tuner spaces
// (convolution-3060_laptop -1.15, pnpoly-3090 -1.02, convolution-Titan 0.08,
// dedispersion-A100 0.32; 20 seeds in docs/search.md: -0.37, -1.32, 0.48, 0.53),
// where the first evaluations count and a model finds the good region sooner.
TEST(DefaultStrategy, BarsRejectLocalSearchAloneOnTheLargeSpaces) {
  int below = 0;
  for (const Bar& b : kBars)
    if (!std::isnan(b.kt_best) && run(b.space, "greedy_ils", kSeeds).score < b.bar) ++below;
  EXPECT_GE(below, 3);
}

// Nor on a space as small as the H200 gemm scans (docs/search.md, 2026-12-03, second
// round: a rule that gave small spaces to local search alone was measured and not
// kept): on tessera's exhaustive H200 scan of flash_attention's fa3_wgmma (130
// configurations, 18 local-search neighbourhoods against the gemm scans' 60), runs
// of 20 evaluations end within 3 % of the optimum in 100 of seeds 1..100 with the
// default's model turns and 86 with greedy_ils alone (300 seeds: 99 % and 88 %).
TEST(DefaultStrategy, ModelTurnsPayOnASmallSpaceOfTesserasOwn) {
  auto within = [](const std::string& strategy) {
    Runs runs = run("fa3-wgmma-H200", strategy, 100, nullptr, 20);
    return std::count_if(runs.to_within3.begin(), runs.to_within3.end(), [](double n) { return n <= 20; });
  };
  long with_model = within(default_strategy()), local = within("greedy_ils");
  EXPECT_GE(with_model, local + 8) << "of 100 runs of 20 evaluations: default " << with_model << ", greedy_ils "
                                   << local;
}

// Warm start: the first candidates are the other GPU's best, local search polishes
// them first, the model's prior mean is their ranking and local search restarts
// where it ranks best. docs/search.md (20 seeds): the median number of evaluations
// to get within 3 % of the optimum falls on every pair (conv A100 -> 3060 laptop
// 28.5 -> 13, A100 -> Titan 54.5 -> 13, gemm 2080 Ti -> 3090 86.5 -> 29, pnpoly
// 3090 -> Titan 199.5 -> 195). pnpoly-Titan's optimum stands alone (the next is 6 %
// slower), so when a run finds it is luck within a few hundred evaluations; its
// test takes 40 seeds (235.5 -> 155.5), the others 10 (21.5 -> 13, 48 -> 13,
// 104.5 -> 26.5). Each run lasts `budget` (a run that never gets within 3 % counts
// as budget + 1), and the warm start gets there at least as often.
struct Pair {
  const char* from;
  const char* to;
  int seeds;
  size_t budget;  // 0: 10 % of the space
};
const Pair kPairs[] = {{"convolution-A100", "convolution-3060_laptop", 10, 200},
                       {"convolution-A100", "convolution-Titan", 10, 200},
                       {"gemm-2080_Ti", "gemm-3090", 10, 200},
                       {"pnpoly-3090", "pnpoly-Titan", 40, 0}};

TEST(WarmStart, WithinThreePercentSoonerOnEveryPair) {
  for (const Pair& p : kPairs) {
    const Simulation& target = testing::recorded_space(p.to);
    auto prior = prior_from_kt_cache(target.space(), testing::recorded_cache(p.from));
    size_t budget = p.budget ? p.budget : (target.size() + 9) / 10;
    Runs cold = run(p.to, default_strategy(), p.seeds, nullptr, budget);
    Runs warm = run(p.to, default_strategy(), p.seeds, prior, budget);
    EXPECT_LT(median(warm.to_within3), median(cold.to_within3)) << p.from << " -> " << p.to;
    auto reached = [&](const Runs& r) {
      return std::count_if(r.to_within3.begin(), r.to_within3.end(), [&](double n) { return n <= budget; });
    };
    EXPECT_GE(reached(warm), reached(cold)) << p.from << " -> " << p.to << " within " << budget;
  }
}

}  // namespace
}  // namespace tessera::search
