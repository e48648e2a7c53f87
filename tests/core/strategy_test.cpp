// tests/core/strategy_test.cpp — the Tuning bookkeeping every strategy relies
// on, on a synthetic space with a known optimum.
#include "search/strategy.h"

#include <gtest/gtest.h>

#include <set>

using namespace tessera::search;

namespace {
// cost = (a-3)^2 + (b-5)^2 + 1; configs with a+b odd fail; a == 0 is invalid.
struct Bowl : CostFunction {
  int calls = 0;
  std::set<Config> seen;
  bool repeated = false;
  std::vector<Outcome> evaluate(const std::vector<Config>& batch) override {
    std::vector<Outcome> out;
    for (auto& c : batch) {
      ++calls;
      if (!seen.insert(c).second) repeated = true;
      Outcome o;
      o.seconds = 0.5;
      if ((c[0] + c[1]) % 2)
        o.failure = "wrong_result";
      else
        o.ok = true, o.cost = (c[0] - 3) * (c[0] - 3) + (c[1] - 5) * (c[1] - 5) + 1.0;
      out.push_back(o);
    }
    return out;
  }
};
Space bowl_space() {
  Param a{"a", {}, {}}, b{"b", {}, {}};
  for (int i = 0; i < 8; ++i) a.values.push_back(std::to_string(i)), b.values.push_back(std::to_string(i));
  return Space({a, b}, [](const Config& c) { return c[0] != 0; });
}
}  // namespace

TEST(Tuning, ExhaustiveFindsTheOptimumOnce) {
  Space s = bowl_space();
  EXPECT_EQ(s.cartesian_size(), 64u);
  EXPECT_EQ(s.valid_configs().size(), 56u);
  Bowl f;
  Tuning t(s, f, {1000, 1e9});
  make_strategy("exhaustive")->run(t, 1);
  EXPECT_EQ(f.calls, 56);
  EXPECT_FALSE(f.repeated);
  ASSERT_TRUE(t.best());
  EXPECT_EQ(t.best()->config, (Config{3, 5}));
  EXPECT_DOUBLE_EQ(t.best()->outcome.cost, 1.0);
}

TEST(Tuning, BudgetsInEvaluationsAndSecondsAreHonoured) {
  Space s = bowl_space();
  for (auto& name : strategy_names()) {
    SCOPED_TRACE(name);
    Bowl f;
    Tuning t(s, f, {10, 1e9});
    make_strategy(name)->run(t, 7);
    EXPECT_LE(f.calls, 10);
    EXPECT_FALSE(f.repeated);
    Bowl g;
    Tuning u(s, g, {1000, 3.0});  // 0.5 s each: at most 6, plus one batch in flight
    make_strategy(name)->run(u, 7);
    EXPECT_LE(u.seconds(), 3.0 + 16 * 0.5);  // no batch starts once the time is spent
    EXPECT_LT(g.calls, 56);
  }
}

TEST(Tuning, MemoizesAndRefusesInvalidConfigs) {
  Space s = bowl_space();
  Bowl f;
  Tuning t(s, f, {100, 1e9});
  auto o1 = t.evaluate_one({3, 5});
  auto o2 = t.evaluate_one({3, 5});
  EXPECT_EQ(f.calls, 1);
  EXPECT_DOUBLE_EQ(o1.cost, o2.cost);
  auto bad = t.evaluate_one({0, 5});
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.failure, "invalid");
  EXPECT_EQ(f.calls, 1);
}

TEST(Tuning, RandomIsDeterministicPerSeed) {
  Space s = bowl_space();
  auto trace = [&](uint64_t seed) {
    Bowl f;
    Tuning t(s, f, {12, 1e9});
    make_strategy("random")->run(t, seed);
    std::vector<Config> out;
    for (auto& tr : t.history()) out.push_back(tr.config);
    return out;
  };
  EXPECT_EQ(trace(3), trace(3));
  EXPECT_NE(trace(3), trace(4));
}
