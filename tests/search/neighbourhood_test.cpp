// tests/search/neighbourhood_test.cpp — exchanges, and the spending limit of a Tuning
// that genetic_ils hands its turns with.
#include "search/neighbourhood.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "search/simulation.h"
#include "search/strategy.h"
#include "tests/search/recorded_spaces.h"

namespace tessera::search {
namespace {

Param param(const std::string& name, std::vector<std::string> values) {
  Param p{name, std::move(values), {}};
  for (auto& v : p.values) p.numeric.push_back(std::stod(v));
  return p;
}

// BM and BN share a value list, WM does not; BM = 256 with BN = 64 is invalid.
Space tile_space() {
  return Space({param("BM", {"64", "128", "256"}), param("BN", {"64", "128", "256"}), param("WM", {"64", "128"})},
               [](const Config& c) { return !(c[0] == 2 && c[1] == 0); });
}

TEST(Exchanges, SwapTwoParametersWithTheSameValueList) {
  Space s = tile_space();
  EXPECT_EQ(exchanges(s, {1, 2, 0}), (std::vector<Config>{{2, 1, 0}}));  // 128 x 256 -> 256 x 128
  EXPECT_TRUE(exchanges(s, {1, 1, 1}).empty());                          // equal values: nothing to swap
  EXPECT_TRUE(exchanges(s, {0, 2, 0}).empty());                          // 256 x 64 is invalid
}

TEST(Exchanges, ReachTheGemmOptimumFromItsTransposedWarpTile) {
  // On the H200 scan the configuration with WM and WN swapped is at 0.93 of the
  // optimum, two single-parameter steps away from it and one exchange.
  const Simulation& sim = testing::recorded_space("gemm-mma-H200");
  const Space& s = sim.space();
  Config optimum;
  double best = 1e30;
  for (const Config& c : s.valid_configs())
    if (const Outcome* o = sim.recorded(c); o->ok && o->cost < best) best = o->cost, optimum = c;
  size_t wm = 0, wn = 0;
  for (size_t i = 0; i < s.dims(); ++i) {
    if (s.params()[i].name == "WM") wm = i;
    if (s.params()[i].name == "WN") wn = i;
  }
  Config transposed = optimum;
  std::swap(transposed[wm], transposed[wn]);
  ASSERT_NE(transposed, optimum);
  auto ex = exchanges(s, optimum);
  EXPECT_NE(std::find(ex.begin(), ex.end(), transposed), ex.end());
  auto hamming = neighbours(s, optimum, Neighbourhood::hamming);
  EXPECT_EQ(std::find(hamming.begin(), hamming.end(), transposed), hamming.end());
  EXPECT_NEAR(best / sim.recorded(transposed)->cost, 0.93, 0.01);
}

TEST(Tuning, LimitSpentStopsAndLifts) {
  Simulation sim = testing::recorded_space("gemm-mma-H200");
  Tuning t(sim.space(), sim, Budget{20, 1e30});
  const auto& all = sim.space().valid_configs();
  t.limit_spent(5);
  auto got = t.evaluate(std::vector<Config>(all.begin(), all.begin() + 8));
  EXPECT_EQ(t.spent(), 5u);
  EXPECT_TRUE(t.exhausted());
  EXPECT_EQ(got[6].failure, "budget");
  t.limit_spent(std::nullopt);
  EXPECT_FALSE(t.exhausted());
  t.evaluate(std::vector<Config>(all.begin(), all.begin() + 30));
  EXPECT_EQ(t.spent(), 20u);  // the budget still holds
}

}  // namespace
}  // namespace tessera::search
