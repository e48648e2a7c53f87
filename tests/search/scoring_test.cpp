// tests/search/scoring_test.cpp — the random-search baseline and the run score.
#include "search/scoring.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "search/bench.h"
#include "search/strategy.h"

namespace tessera::search {
namespace {

// Brute force: the mean of min over every n-subset.
double brute_expected_best(const std::vector<double>& v, size_t n) {
  std::vector<bool> take(v.size(), false);
  std::fill(take.begin(), take.begin() + static_cast<long>(n), true);
  double sum = 0;
  size_t count = 0;
  do {
    double m = 1e300;
    for (size_t i = 0; i < v.size(); ++i)
      if (take[i]) m = std::min(m, v[i]);
    sum += m;
    ++count;
  } while (std::prev_permutation(take.begin(), take.end()));
  return sum / static_cast<double>(count);
}

TEST(RandomBaseline, ExpectedBestIsExactHypergeometric) {
  std::vector<double> costs{5, 1, 4, 2, 9, 3, 7};
  RandomBaseline b(costs, 0);
  EXPECT_DOUBLE_EQ(b.optimum(), 1);
  EXPECT_DOUBLE_EQ(b.median(), 4);
  for (size_t n = 1; n <= costs.size(); ++n) EXPECT_NEAR(b.expected_best(n), brute_expected_best(costs, n), 1e-12);
  EXPECT_NEAR(b.expected_best(2), (1 * 6 + 2 * 5 + 3 * 4 + 4 * 3 + 5 * 2 + 7 * 1) / 21.0, 1e-12);
}

TEST(RandomBaseline, FailuresAreDrawsOfTheWorstSuccess) {
  RandomBaseline b({1, 2, 3}, 2);
  EXPECT_EQ(b.size(), 5u);
  EXPECT_NEAR(b.expected_best(2), brute_expected_best({1, 2, 3, 3, 3}, 2), 1e-12);
}

TEST(RandomBaseline, CutoffIsWhereRandomSearchComes95PercentOfTheWay) {
  std::vector<double> costs;
  for (int i = 1; i <= 1000; ++i) costs.push_back(i);
  RandomBaseline b(costs, 0);
  size_t n = b.cutoff();
  double target = b.median() - 0.95 * (b.median() - b.optimum());
  EXPECT_LE(b.expected_best(n), target);
  EXPECT_GT(b.expected_best(n - 1), target);
  // E[min] of n draws of 1..1000 is 1001/(n+1): it reaches 25.975 at n = 38.
  EXPECT_EQ(n, 38u);
}

TEST(RunScore, OptimumScoresOneRandomExpectationScoresZero) {
  RandomBaseline b({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0);
  auto curve = b.curve(5);
  ASSERT_EQ(curve.size(), 5u);
  EXPECT_DOUBLE_EQ(run_score(std::vector<double>(5, 1.0), curve, b.optimum()), 1.0);
  EXPECT_NEAR(run_score(curve, curve, b.optimum()), 0.0, 1e-12);
  // Worse than random is negative; a short run keeps its last best.
  EXPECT_LT(run_score(std::vector<double>(5, 10.0), curve, b.optimum()), 0.0);
  EXPECT_DOUBLE_EQ(run_score({1.0}, curve, b.optimum()), 1.0);
}

TEST(RunScore, BestSoFarChargesFailuresAndFractionOfOptimum) {
  std::vector<Trial> h(4);
  h[0].outcome.ok = false;
  h[1].outcome = {true, 4.0, "", 0};
  h[2].outcome = {true, 6.0, "", 0};
  h[3].outcome = {true, 2.0, "", 0};
  auto best = best_so_far(h, 9.0);
  EXPECT_EQ(best, (std::vector<double>{9, 4, 4, 2}));
  RandomBaseline b({1, 2, 9}, 0);
  EXPECT_DOUBLE_EQ(fraction_of_optimum(best, 2, b), 0.25);
  EXPECT_DOUBLE_EQ(fraction_of_optimum(best, 99, b), 0.5);
}

}  // namespace
}  // namespace tessera::search

namespace tessera::search {
namespace {

TEST(BenchStrategies, AllButExhaustiveByDefaultOrTheNamedOnes) {
  auto all = bench_strategies({});
  EXPECT_EQ(std::count(all.begin(), all.end(), "exhaustive"), 0);
  EXPECT_EQ(all.size(), strategy_names().size() - 1);
  EXPECT_EQ(bench_strategies({"greedy_ils", "random"}), (std::vector<std::string>{"random", "greedy_ils"}));
  EXPECT_THROW(bench_strategies({"genetic", "simplex"}), std::invalid_argument);
}

}  // namespace
}  // namespace tessera::search
