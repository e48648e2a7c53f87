// tests/search/prior_test.cpp — the warm start's ranking (search/prior.h), the
// portfolio's first evaluations with and without it, and the strategy's own time
// in a Tuning's seconds.
#include "search/prior.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

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

Record rec(std::vector<std::string> values, double cost, bool ok = true) {
  Record r;
  r.values = std::move(values);
  r.outcome.ok = ok;
  r.outcome.cost = ok ? cost : 0;
  r.outcome.failure = ok ? "" : "RuntimeFailedConfig";
  return r;
}

// The other GPU measured BX 16/64 and T 1/2 (and U, which this space lacks); this
// space has BX 16/32/64/128 and T 1/2, plus V, which the other GPU did not have.
TEST(Prior, RanksByTheOtherDevicesOrderSnappingAndProjecting) {
  std::vector<Param> theirs{param("BX", {"16", "64"}), param("T", {"1", "2"}), param("U", {"0", "1"})};
  std::vector<Record> recs{rec({"16", "1", "0"}, 9), rec({"16", "1", "1"}, 3),        rec({"64", "1", "0"}, 5),
                           rec({"64", "2", "0"}, 1), rec({"64", "2", "1"}, 0, false), rec({"16", "2", "0"}, 7)};
  Space ours({param("BX", {"16", "32", "64", "128"}), param("T", {"1", "2"}), param("V", {"0", "1"})}, nullptr);
  Prior p(ours, theirs, recs, "other");
  // Successes ranked 1 (cost 1) .. 5 (cost 9): quantiles 0, .25, .5, .75, 1; the failure 1.
  EXPECT_DOUBLE_EQ(p.quantile({2, 1, 0}), 0.0);   // BX 64, T 2: cost 1 (the failure with U 1 does not count)
  EXPECT_DOUBLE_EQ(p.quantile({0, 0, 1}), 0.25);  // BX 16, T 1: the best over U (cost 3, not 9)
  EXPECT_DOUBLE_EQ(p.quantile({3, 1, 0}), 0.0);   // BX 128 snaps to 64 (log2 distance 1 < 3)
  EXPECT_DOUBLE_EQ(p.quantile({1, 0, 0}), 0.25);  // BX 32 is as near 16 as 64 (log2 1 each): the first, 16
  EXPECT_DOUBLE_EQ(p.quantile({0, 1, 1}), 0.75);  // BX 16, T 2: cost 7
  // Best first; among equals, configurations whose values were measured as such first.
  std::vector<Config> top = p.ranked(3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0], (Config{2, 1, 0}));
  EXPECT_EQ(top[1], (Config{2, 1, 1}));
  EXPECT_EQ(top[2], (Config{3, 1, 0}));  // snapped: after the exact ones
  EXPECT_EQ(p.ranked(100).size(), ours.valid_configs().size());
}

TEST(Prior, NeedsAParameterInCommon) {
  Space ours({param("A", {"1", "2"})}, nullptr);
  EXPECT_THROW(Prior(ours, {param("B", {"1"})}, {rec({"1"}, 1)}, "other"), std::invalid_argument);
}

TEST(Prior, FromTheSameSpaceRanksItsOwnOptimumFirst) {
  const Simulation& sim = testing::recorded_space("gemm-3090");
  auto prior = prior_from_kt_cache(sim.space(), testing::recorded_cache("gemm-3090"));
  Config first = prior->ranked(1).at(0);
  EXPECT_DOUBLE_EQ(sim.recorded(first)->cost, sim.sorted_costs().front());
  EXPECT_NE(prior->source().find("RTX 3090"), std::string::npos) << prior->source();
}

// The portfolio's first batch is the prior's best; without one, a spread-out design.
TEST(Portfolio, StartsFromThePriorsBestOrASpaceFillingDesign) {
  Simulation target = testing::recorded_space("gemm-3090");
  auto prior = prior_from_kt_cache(target.space(), testing::recorded_cache("gemm-2080_Ti"));
  Tuning warm(target.space(), target, Budget{8, 1e30});
  warm.set_prior(prior);
  make_strategy("portfolio")->run(warm, 3);
  std::vector<Config> first;
  for (auto& t : warm.history()) first.push_back(t.config);
  EXPECT_EQ(first, prior->ranked(8));

  // Without: no two of the 8 are as close as random draws' closest pair tends to be
  // (the smallest distance in parameter positions, averaged over seeds).
  auto closest = [&](const std::vector<Config>& cs) {
    double low = 1e30;
    for (size_t a = 0; a < cs.size(); ++a)
      for (size_t b = a + 1; b < cs.size(); ++b) {
        double d = 0;
        for (size_t i = 0; i < cs[a].size(); ++i) {
          size_t k = target.space().params()[i].values.size();
          if (k > 1) d += std::abs(cs[a][i] - cs[b][i]) / static_cast<double>(k - 1);
        }
        low = std::min(low, d);
      }
    return low;
  };
  double designed = 0, random = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Simulation a = target, b = target;
    Tuning cold(a.space(), a, Budget{8, 1e30});
    make_strategy("portfolio")->run(cold, seed);
    Tuning rnd(b.space(), b, Budget{8, 1e30});
    make_strategy("random")->run(rnd, seed);
    std::vector<Config> c1, c2;
    for (auto& t : cold.history()) c1.push_back(t.config);
    for (auto& t : rnd.history()) c2.push_back(t.config);
    ASSERT_EQ(c1.size(), 8u);
    designed += closest(c1) / 5;
    random += closest(c2) / 5;
  }
  EXPECT_GT(designed, 1.5 * random) << "closest pair: designed " << designed << ", random " << random;
}

// The strategy's own time between evaluations is in seconds() when counted, and
// only in strategy_seconds() when not.
TEST(Tuning, CountsTheStrategysOwnTimeInItsSeconds) {
  for (bool count : {true, false}) {
    Simulation sim = testing::recorded_space("convolution-A100");
    Budget budget{60, 1e30};
    budget.count_strategy_time = count;
    Tuning t(sim.space(), sim, budget);
    make_strategy("bayes")->run(t, 1);
    double evaluations = 0;
    for (auto& tr : t.history()) evaluations += tr.outcome.seconds;
    EXPECT_GT(t.strategy_seconds(), 0.0);
    EXPECT_NEAR(t.seconds(), evaluations + (count ? t.strategy_seconds() : 0.0), 1e-9 * evaluations);
  }
}

}  // namespace
}  // namespace tessera::search
