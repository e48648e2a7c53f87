// tests/core/recorded_test.cpp — tessera's own recorded H200 runs
// (runs/recorded/h200-2026-11-30.db) replayed as a search space.
#include "agent/recorded.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "agent/proposer_llm.h"
#include "agent/proposer_llm_context.h"
#include "agent/template_space.h"
#include "search/strategy.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {
// A private copy: opening a database may write to it (WAL files, migrations).
std::string recorded_copy() {
  fs::path src = fs::path(TESSERA_SOURCE_DIR) / "runs/recorded/h200-2026-11-30.db";
  fs::path dst = fs::temp_directory_path() / ("tessera-recorded-" + std::to_string(getpid()) + ".db");
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
  return dst.string();
}
}  // namespace

TEST(Recorded, RmsnormRunBecomesASimulationWithItsMeasuredOptimum) {
  store::Store db(recorded_copy());
  auto op = spec::load_operator(fs::path(TESSERA_SOURCE_DIR) / "targets/rmsnorm");
  auto rs = agent::recorded_space(db, "rmsnorm", op.templates.at(0));
  EXPECT_EQ(rs.device, "NVIDIA H200");
  EXPECT_EQ(rs.candidates, 100u);
  EXPECT_EQ(rs.simulation.size(), 100u);
  auto costs = rs.simulation.sorted_costs();
  ASSERT_FALSE(costs.empty());
  // The best of that run was candidate #97 at 1.787x the baseline
  // (targets/rmsnorm/journal/2026-11-30-to-2026-12-03.md, "Measured").
  EXPECT_NEAR(1.0 / costs.front(), 1.787, 0.001);
  // Replaying exhaustively finds it; a strategy sees only recorded configurations.
  search::Tuning t(rs.simulation.space(), rs.simulation, {1000, 1e30});
  search::make_strategy("exhaustive")->run(t, 1);
  ASSERT_TRUE(t.best());
  EXPECT_DOUBLE_EQ(t.best()->outcome.cost, costs.front());
  EXPECT_EQ(t.evals(), 100u);
}

TEST(Recorded, GemmRunKeepsItsFailuresAndSearchBenchReplaysIt) {
  store::Store db(recorded_copy());
  auto op = spec::load_operator(fs::path(TESSERA_SOURCE_DIR) / "targets/gemm");
  auto rs = agent::recorded_space(db, "gemm", *op.find_template("mma"));
  EXPECT_EQ(rs.candidates, 50u);
  EXPECT_EQ(rs.simulation.failed(), 2u);  // two variants spilled (resource_limit)
  std::ostringstream out;
  EXPECT_EQ(agent::search_bench_recorded(recorded_copy(), "gemm", "mma", 3, out), 0);
  EXPECT_NE(out.str().find("gemm/mma on NVIDIA H200"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("| genetic |"), std::string::npos) << out.str();
  std::ostringstream none;
  EXPECT_EQ(agent::search_bench_recorded(recorded_copy(), "rmsnorm", "no_such_template", 3, none), 1);
  // As on 8 GPUs (search-bench --parallel 8): wider batches change what local search runs.
  std::ostringstream one, eight;
  EXPECT_EQ(agent::search_bench_recorded(recorded_copy(), "gemm", "mma", 5, one, {"greedy_ils"}, 1), 0);
  EXPECT_EQ(agent::search_bench_recorded(recorded_copy(), "gemm", "mma", 5, eight, {"greedy_ils"}, 8), 0);
  auto row = [](const std::string& text) { return text.substr(text.find("| greedy_ils |"), 60); };
  EXPECT_NE(row(one.str()), row(eight.str())) << one.str() << eight.str();
}

// The warm start of `optimize` (agent::warm_start_prior): results of the template on
// another GPU model order the first candidates; on the same model they are history
// (resumed), not a prior.
TEST(Recorded, WarmStartComesFromAnotherGpuModelOnly) {
  store::Store db(recorded_copy());
  auto op = spec::load_operator(fs::path(TESSERA_SOURCE_DIR) / "targets/gemm");
  const spec::Program& mma = *op.find_template("mma");
  search::Space space = agent::template_space(mma);
  EXPECT_EQ(agent::warm_start_prior(db, "gemm", mma, space, "NVIDIA H200", true), nullptr);
  auto prior = agent::warm_start_prior(db, "gemm", mma, space, "NVIDIA B300", true);
  ASSERT_NE(prior, nullptr);
  EXPECT_NE(prior->source().find("NVIDIA H200 (50 results)"), std::string::npos) << prior->source();
  // Its first candidate is the H200's best of that run.
  auto rs = agent::recorded_space(db, "gemm", mma);
  search::Config best;
  double lowest = 1e300;
  for (const search::Config& c : rs.simulation.space().valid_configs())
    if (const search::Outcome* o = rs.simulation.recorded(c); o && o->ok && o->cost < lowest)
      lowest = o->cost, best = c;
  ASSERT_FALSE(best.empty());
  EXPECT_EQ(prior->ranked(1).at(0), best);
  EXPECT_DOUBLE_EQ(prior->quantile(best), 0.0);
}

// A candidate judged again on another GPU model (a recheck on an H100 of an H200 champion)
// stays a record of the first model, and becomes one of the second: each model's history is
// its candidates' latest evaluations there.
TEST(Recorded, ACandidateJudgedAgainElsewhereStaysInTheFirstModelsHistory) {
  store::Store db(recorded_copy());
  auto op = spec::load_operator(fs::path(TESSERA_SOURCE_DIR) / "targets/gemm");
  const spec::Program& mma = *op.find_template("mma");
  auto before = agent::recorded_by_device(db, "gemm", mma);
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(before.at("NVIDIA H200").size(), 50u);
  long long id = 0;
  for (auto& row : db.leaderboard("gemm", "ok", 1 << 30))
    if (row.template_name == "mma") id = row.candidate_id;
  ASSERT_NE(id, 0);
  store::EvaluationInfo again = db.evaluations(id).back();
  again.device = "NVIDIA H100 80GB HBM3";
  again.geomean_speedup = 0.25;
  db.add_evaluation(again);
  auto after = agent::recorded_by_device(db, "gemm", mma);
  EXPECT_EQ(after.at("NVIDIA H200").size(), 50u);
  ASSERT_EQ(after.at("NVIDIA H100 80GB HBM3").size(), 1u);
  EXPECT_DOUBLE_EQ(after.at("NVIDIA H100 80GB HBM3")[0].outcome.cost, 4.0);
  auto prior = agent::warm_start_prior(db, "gemm", mma, agent::template_space(mma), "NVIDIA H100 80GB HBM3", true);
  ASSERT_NE(prior, nullptr);
  EXPECT_NE(prior->source().find("NVIDIA H200 (50 results)"), std::string::npos) << prior->source();
}

namespace {
// A loop that only answers what best_reports asks: the architecture, and that it times.
class TimingLoop final : public agent::Loop {
 public:
  std::vector<agent::Judged> evaluate(const spec::Program&, const std::vector<search::Config>&,
                                      const agent::Lineage&) override {
    return {};
  }
  agent::Judged reject(const std::string&, const std::string&, const std::string&, const agent::Lineage&,
                       const std::string&, const std::string&) override {
    return {};
  }
  std::vector<agent::Judged> tune(const spec::Program&, size_t, const agent::Lineage&) override { return {}; }
  size_t evaluated() const override { return 0; }
  double seconds_left() const override { return 0; }
  long long run_id() const override { return 0; }
  const std::string& arch() const override { return arch_; }
  bool timing() const override { return true; }
  std::string device_summary() const override { return ""; }
  std::string strategy() const override { return ""; }

 private:
  std::string arch_ = "sm_90a";
};
}  // namespace

// The model is shown the best candidates of one GPU model, the latest evaluation's (the run's
// own GPU once it has judged something): two candidates judged again on an H100, slower there
// than fifty on the H200, are all it sees after them.
TEST(Recorded, TheModelSeesTheBestOfOneGpuModel) {
  store::Store db(recorded_copy());
  auto op = spec::load_operator(fs::path(TESSERA_SOURCE_DIR) / "targets/gemm");
  TimingLoop loop;
  ASSERT_EQ(agent::best_reports(db, op, loop, 3).size(), 3u);
  std::set<std::string> h100;
  for (auto& row : db.leaderboard("gemm", "ok", 2)) {
    store::EvaluationInfo again = db.evaluations(row.candidate_id).back();
    again.device = "NVIDIA H100 80GB HBM3";
    again.geomean_speedup = 0.01;
    db.add_evaluation(again);
    h100.insert(agent::candidate_ref(row.candidate_id));
  }
  auto best = agent::best_reports(db, op, loop, 3);
  ASSERT_EQ(best.size(), 2u);
  for (auto& r : best) EXPECT_TRUE(h100.count(r.id)) << r.id;
}
