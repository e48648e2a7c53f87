// tests/search/strategies_test.cpp — every strategy on every recorded space: budget
// in evaluations and in seconds, constraints, no retries, determinism per seed.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "search/neighbourhood.h"
#include "search/strategy.h"
#include "tests/search/recorded_spaces.h"

namespace tessera::search {
namespace {

// Wraps the replay to see exactly what reaches the "GPU".
class Recorder final : public CostFunction {
 public:
  explicit Recorder(Simulation sim) : sim_(std::move(sim)) {}
  std::vector<Outcome> evaluate(const std::vector<Config>& batch) override {
    for (auto& c : batch) ++count_[c];
    batches_.push_back(batch.size());
    return sim_.evaluate(batch);
  }
  const Space& space() const { return sim_.space(); }
  std::map<Config, int> count_;
  std::vector<size_t> batches_;

 private:
  Simulation sim_;
};

std::vector<Config> run(const std::string& strategy, const std::string& space, uint64_t seed, Budget budget,
                        Recorder** keep = nullptr, double* strategy_seconds = nullptr) {
  static std::vector<std::unique_ptr<Recorder>> alive;
  alive.push_back(std::make_unique<Recorder>(testing::recorded_space(space)));
  Recorder& rec = *alive.back();
  Tuning tuning(rec.space(), rec, budget);
  make_strategy(strategy)->run(tuning, seed);
  std::vector<Config> order;
  for (auto& t : tuning.history()) order.push_back(t.config);
  if (keep) *keep = &rec;
  if (strategy_seconds) *strategy_seconds = tuning.strategy_seconds();
  EXPECT_LE(tuning.evals(), budget.max_evals);
  return order;
}

struct Case {
  std::string strategy, space;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.strategy << " on " << c.space;
}

class EveryStrategy : public ::testing::TestWithParam<Case> {};

TEST_P(EveryStrategy, SpendsBudgetOnValidNewConfigsOnly) {
  const Case& c = GetParam();
  Recorder* rec = nullptr;
  auto order = run(c.strategy, c.space, 7, Budget{150, 1e30}, &rec);
  EXPECT_EQ(order.size(), 150u) << "stopped before the budget was spent";
  for (auto& [config, times] : rec->count_) {
    EXPECT_EQ(times, 1) << "evaluated twice: " << rec->space().key(config);
    EXPECT_TRUE(rec->space().is_valid(config)) << "invalid: " << rec->space().key(config);
  }
  EXPECT_EQ(rec->count_.size(), 150u);
}

TEST_P(EveryStrategy, IsDeterministicPerSeed) {
  const Case& c = GetParam();
  auto a = run(c.strategy, c.space, 11, Budget{80, 1e30});
  auto b = run(c.strategy, c.space, 11, Budget{80, 1e30});
  auto other = run(c.strategy, c.space, 12, Budget{80, 1e30});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
}

// A second run of the same search on a history (the nightly "search on"): what the
// cost function answers from stored verdicts costs no budget, so the run still
// measures `budget` configurations it had not measured before.
class Resuming final : public CostFunction {
 public:
  Resuming(Simulation sim, std::set<Config> stored) : sim_(std::move(sim)), stored_(std::move(stored)) {}
  std::vector<Outcome> evaluate(const std::vector<Config>& batch) override {
    auto out = sim_.evaluate(batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (stored_.count(batch[i])) {
        out[i].recorded = true;
        out[i].seconds = 0;
      } else {
        ++measured;
      }
    }
    return out;
  }
  const Space& space() const { return sim_.space(); }
  size_t measured = 0;

 private:
  Simulation sim_;
  std::set<Config> stored_;
};

TEST_P(EveryStrategy, ResumedOutcomesCostNoBudget) {
  const Case& c = GetParam();
  auto first = run(c.strategy, c.space, 5, Budget{60, 1e30});
  Resuming again(testing::recorded_space(c.space), std::set<Config>(first.begin(), first.end()));
  Tuning tuning(again.space(), again, Budget{60, 1e30});
  make_strategy(c.strategy)->run(tuning, 5);
  EXPECT_EQ(again.measured, 60u) << "a resumed run must spend its budget on new configurations";
  EXPECT_EQ(tuning.spent(), 60u);
  EXPECT_GE(tuning.evals(), 60u);
}

TEST_P(EveryStrategy, HonoursSimulatedSecondsBudget) {
  const Case& c = GetParam();
  Recorder* rec = nullptr;
  Simulation sim = testing::recorded_space(c.space);
  double limit = 120;  // simulated seconds: tens to a thousand evaluations
  double thought = 0;  // the strategy's own seconds, which count too (Budget::count_strategy_time)
  run(c.strategy, c.space, 3, Budget{100000, limit}, &rec, &thought);
  double spent = 0, largest = 0;
  size_t evals = 0;
  for (auto& [config, times] : rec->count_) {
    double s = sim.recorded(config)->seconds;
    spent += s;
    largest = std::max(largest, s);
    evals += static_cast<size_t>(times);
  }
  EXPECT_GE(spent + thought, limit - largest);  // did not stop early
  EXPECT_LT(spent, limit + 16 * largest);       // one batch may start before the limit and end after it
  EXPECT_GT(evals, 10u);
}

// With 8 GPU workers a batch of 8 leaves each GPU one candidate and the tail of
// every batch idle: strategies widen their batches to two per worker (restarts to
// one per worker), so most evaluations run in batches at least as wide as the node.
TEST_P(EveryStrategy, BatchesKeepEightWorkersBusy) {
  const Case& c = GetParam();
  Recorder* one = nullptr;
  Recorder* eight = nullptr;
  run(c.strategy, c.space, 9, Budget{120, 1e30, 1}, &one);
  run(c.strategy, c.space, 9, Budget{120, 1e30, 8}, &eight);
  auto wide_share = [](const Recorder& r) {
    size_t wide = 0, all = 0;
    for (size_t b : r.batches_) all += b, wide += b >= 8 ? b : 0;
    return all ? static_cast<double>(wide) / static_cast<double>(all) : 0.0;
  };
  auto sizes = [](const Recorder& r) {
    std::string s;
    for (size_t b : r.batches_) s += std::to_string(b) + " ";
    return s;
  };
  EXPECT_GE(wide_share(*eight), 0.75) << "evaluations in batches of 8 or more, with 8 workers; batches: "
                                      << sizes(*eight);
  EXPECT_LE(eight->batches_.size(), one->batches_.size()) << "more batches (and idle tails) with more workers";
}

// The speculator (agent/speculator.h) compiles the neighbours (adjacent, exchanges,
// hamming) of each result within Speculator::kNearBest (1.05) of the best while a
// batch is judged, betting that local search asks for them next. The default
// (portfolio) gives half its turns or more to a Gaussian-process model, whose
// proposals are often elsewhere: on the ten recorded spaces (5 seeds, 100
// evaluations, 1 and 8 workers) 39–60 % of what it proposes after its first batch
// is in that set (genetic_ils, the former default: 64–99 % on the first three
// spaces). Random proposals would hit ~5 % (a few hundred offered of thousands).
// If a strategy change breaks the bet entirely, the speculator is wasted work and
// this test says so.
constexpr double kNearBest = 1.05;  // agent/speculator.h (this test does not link the agent)
class Speculation final : public CostFunction {
 public:
  explicit Speculation(Simulation sim) : sim_(std::move(sim)) {}
  std::vector<Outcome> evaluate(const std::vector<Config>& batch) override {
    if (batches_++ > 0)
      for (auto& c : batch) hits_ += offered_.count(c), asked_ += 1;
    auto out = sim_.evaluate(batch);
    for (size_t i = 0; i < batch.size(); ++i)
      if (out[i].ok && out[i].cost < best_ * kNearBest) {
        best_ = std::min(best_, out[i].cost);
        for (auto& n : neighbours(sim_.space(), batch[i], Neighbourhood::adjacent)) offered_.insert(n);
        for (auto& n : exchanges(sim_.space(), batch[i])) offered_.insert(n);
        for (auto& n : neighbours(sim_.space(), batch[i], Neighbourhood::hamming)) offered_.insert(n);
      }
    return out;
  }
  const Space& space() const { return sim_.space(); }
  double hit_rate() const { return asked_ ? static_cast<double>(hits_) / static_cast<double>(asked_) : 0.0; }
  size_t offered() const { return offered_.size(); }

 private:
  Simulation sim_;
  std::set<Config> offered_;
  double best_ = 1e300;
  size_t batches_ = 0, hits_ = 0, asked_ = 0;
};

TEST(Speculation, NeighboursOfNearBestResultsCoverMostOfTheDefaultStrategysNextBatches) {
  for (const std::string& space : testing::recorded_space_names())
    for (size_t parallel : {1, 8}) {
      double rate = 0, offered = 0;
      for (uint64_t seed = 1; seed <= 5; ++seed) {
        Speculation spec(testing::recorded_space(space));
        Tuning tuning(spec.space(), spec, Budget{100, 1e30, parallel});
        make_strategy(default_strategy())->run(tuning, seed);
        rate += spec.hit_rate() / 5;
        offered += static_cast<double>(spec.offered()) / 5;
      }
      EXPECT_GE(rate, 0.35) << space << " with " << parallel << " workers (" << offered
                            << " configurations offered per run of 100)";
    }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (auto& s : strategy_names())
    if (s != "exhaustive")
      for (auto& sp : testing::structural_space_names()) out.push_back({s, sp});
  return out;
}

INSTANTIATE_TEST_SUITE_P(RecordedSpaces, EveryStrategy, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.strategy + "_" + i.param.space;
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// genetic_ils plans with its budget: local search alone up to 128 evaluations, the
// genetic algorithm's first 64 evaluations (then local search) beyond.
TEST(GeneticIls, SmallBudgetIsGreedyLocalSearch) {
  auto mixed = run("genetic_ils", "gemm-mma-H200", 4, Budget{100, 1e30});
  EXPECT_EQ(mixed, run("greedy_ils", "gemm-mma-H200", 4, Budget{100, 1e30}));
  EXPECT_NE(mixed, run("genetic", "gemm-mma-H200", 4, Budget{100, 1e30}));
}

TEST(GeneticIls, LargeBudgetStartsWithTheGeneticAlgorithmThenSearchesLocally) {
  auto mixed = run("genetic_ils", "convolution-A100", 4, Budget{300, 1e30});
  auto genetic = run("genetic", "convolution-A100", 4, Budget{64, 1e30});
  ASSERT_EQ(mixed.size(), 300u);
  EXPECT_EQ(std::vector<Config>(mixed.begin(), mixed.begin() + 64), genetic);
  auto longer = run("genetic", "convolution-A100", 4, Budget{300, 1e30});
  EXPECT_NE(mixed, longer) << "the local-search turn after 64 evaluations changed nothing";
}

// A template without parameters (a fixed kernel, a test fixture) is one configuration, the
// empty one: every strategy must judge it once, not find nothing to do.
TEST(EveryStrategyOnASpaceWithoutParameters, JudgesTheOneEmptyConfigurationOnce) {
  struct Fixed final : CostFunction {
    std::vector<Outcome> evaluate(const std::vector<Config>& batch) override {
      calls += batch.size();
      for (auto& c : batch) EXPECT_TRUE(c.empty());
      return std::vector<Outcome>(batch.size(), Outcome{true, 1.0, "", 0.1, false});
    }
    size_t calls = 0;
  };
  Space none({});
  ASSERT_EQ(none.valid_configs().size(), 1u);
  Space refused({}, [](const Config&) { return false; });
  EXPECT_TRUE(refused.valid_configs().empty()) << "a constraint that refuses everything still refuses the empty config";
  for (auto& name : strategy_names()) {
    Fixed cost;
    Tuning tuning(none, cost, Budget{10, 1e30});
    make_strategy(name)->run(tuning, 3);
    EXPECT_EQ(cost.calls, 1u) << name;
    EXPECT_EQ(tuning.history().size(), 1u) << name;
  }
}

TEST(StrategyRegistry, UnknownNameListsKnownOnes) {
  try {
    make_strategy("no-such");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bayes"), std::string::npos);
  }
}

TEST(StrategyRegistry, ExhaustiveVisitsEveryRecordedConfigOnce) {
  Recorder* rec = nullptr;
  auto order = run("exhaustive", "convolution-A100", 1, Budget{100000, 1e30}, &rec);
  EXPECT_EQ(order.size(), 4362u);
  EXPECT_EQ(rec->count_.size(), 4362u);
}

}  // namespace
}  // namespace tessera::search
