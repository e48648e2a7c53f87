// tests/search/strategy_quality_test.cpp — the default strategy beats random search
// by a wide margin on the recorded spaces, by the score of search/scoring, and
// finds the gemm space's lone optimum far more often than the former default.
//
// Thresholds come from the tables in docs/search.md: the default strategy's mean
// score minus about two standard errors of a 10-seed mean. Random search scores
// about 0 by construction of the score; its check here pins that the baseline and
// the runs are measured the same way.
#include <gtest/gtest.h>

#include <cmath>

#include "search/bench.h"
#include "search/strategy.h"
#include "tests/search/recorded_spaces.h"

namespace tessera::search {
namespace {

constexpr int kSeeds = 10;

StrategyScore scored(const std::string& space, const std::string& strategy, int seeds = kSeeds) {
  return score_strategies(space, testing::recorded_space(space), {strategy}, seeds).at(0);
}

TEST(StrategyQuality, DefaultStrategyOnConvolution) {
  double best = scored("convolution-A100", default_strategy()).score;
  double random = scored("convolution-A100", "random").score;
  EXPECT_GT(best, 0.45);
  EXPECT_GT(best - random, 0.4);
  EXPECT_LT(std::abs(random), 0.45);  // random's sd is ~0.5 per run on this space
}

TEST(StrategyQuality, DefaultStrategyOnDedispersion) {
  double best = scored("dedispersion-A100", default_strategy()).score;
  double random = scored("dedispersion-A100", "random").score;
  EXPECT_GT(best, 0.35);
  EXPECT_GT(best - random, 0.3);
  EXPECT_LT(std::abs(random), 0.35);
}

// Issue 4's question on the H200 gemm scan: within 3% of the optimum (here: the
// optimum itself, the next configuration is 4% below) with a budget of 10% of the
// space. 50 seeds: the default does so in 50% of runs, genetic (the former
// default) in 26%, random in 10%; a 50-seed share has a standard error of ~7%.
TEST(StrategyQuality, DefaultStrategyFindsTheGemmOptimumWithTenPercent) {
  EXPECT_GE(scored("gemm-mma-H200", default_strategy(), 50).within3_budget_10pct, 0.38);
  EXPECT_LT(scored("gemm-mma-H200", "genetic", 50).within3_budget_10pct, 0.38);
}

}  // namespace
}  // namespace tessera::search
