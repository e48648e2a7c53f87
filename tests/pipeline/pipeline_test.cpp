// tests/pipeline/pipeline_test.cpp — the agent's GPU path without a GPU: a
// fake worker (fake_worker.cpp) stands in for `tessera worker` on two "GPUs",
// and one optimize session must deal candidates to both, survive a lost
// context, a dead worker and a hang, re-measure and reject an impossible speed,
// compute roofline fractions from the measured ceilings, and rank the rest.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/support/hostile_targets.h"
#include "tests/support/shell.h"

namespace fs = std::filesystem;

namespace {

// stdout and stderr of a command line.
std::string run(const std::string& cmd) { return tessera::testing::shell(cmd).out; }

fs::path make_targets() { return tessera::testing::make_hostile_targets(fs::path(TESSERA_SOURCE_DIR), "pipeline"); }

}  // namespace

TEST(Pipeline, TwoFakeGpusSurviveCrashesHangsAndCheatsAndRankTheRest) {
  fs::path targets = make_targets();
  std::string db = (targets / "pipeline.db").string();
  std::string log = (targets / "worker.log").string();
  std::string env = "TESSERA_TARGETS=" + targets.string() + " TESSERA_WORKER_CMD=" + FAKE_WORKER +
                    " TESSERA_WORKER_GPUS=2 FAKE_WORKER_LOG=" + log + " ";
  std::string out = run(env + TESSERA_BINARY + " optimize hostile_rmsnorm --strategy exhaustive --budget 17 "
                        "--gpus all --timeout 3 --quiet --db " + db);
  SCOPED_TRACE(out);
  EXPECT_NE(out.find("GPU 0 (Fake GPU)"), std::string::npos);
  EXPECT_NE(out.find("GPU 1 (Fake GPU)"), std::string::npos);
  EXPECT_NE(out.find("best: candidate"), std::string::npos);
  // A GPU that finished its part of a batch waits for the other (whose hanging
  // candidates take the 3 s timeout): that idle is counted apart from the compile wait.
  {
    std::regex tail_re(R"(and ([0-9.]+) s for the other GPUs at batch ends)");
    double tails = 0;
    int lines = 0;
    for (std::sregex_iterator it(out.begin(), out.end(), tail_re), end; it != end; ++it, ++lines)
      tails += std::stod((*it)[1].str());
    EXPECT_EQ(lines, 2);
    EXPECT_GT(tails, 0.5);
  }

  auto rows = nlohmann::json::parse(
      run("TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY + " leaderboard hostile_rmsnorm --json --limit 100 --db " + db));
  std::map<int, nlohmann::json> by_kind;
  for (auto& r : rows) by_kind[r["params"]["KIND"].get<int>()] = r;
  ASSERT_EQ(by_kind.size(), 17u);
  for (int k = 0; k <= 16; ++k) {
    std::string want = k == 0 || k == 16 ? "ok"
                       : k == 11 || k == 12 ? "crashed"
                       : k == 13          ? "timeout"
                       : k == 5           ? "impossible_speed"
                                          : "wrong_result";
    EXPECT_EQ(by_kind[k]["status"], want) << "KIND " << k;
  }
  EXPECT_EQ(rows[0]["params"]["KIND"], 0);
  EXPECT_NEAR(rows[0]["geomean_speedup"].get<double>(), 1.5, 1e-9);
  EXPECT_EQ(rows[1]["params"]["KIND"], 16);
  // Roofline: 4096x4096 moves 2*M*N*2 + 2*N bytes; at the fake 4e12 B/s that is
  // 0.016781 ms against a 0.1 ms candidate.
  double expect_fraction = (2.0 * 4096 * 4096 * 2 + 2 * 4096) / 4e12 * 1e3 / 0.1;
  EXPECT_NEAR(rows[0]["shapes"][0]["roofline_fraction"].get<double>(), expect_fraction, 1e-6);

  // Both workers took candidates; the impossible one was measured twice.
  std::ifstream in(log);
  std::set<int> gpus;
  std::map<int, int> requests;
  int g, k;
  while (in >> g >> k) gpus.insert(g), ++requests[k];
  EXPECT_EQ(gpus, (std::set<int>{0, 1}));
  EXPECT_EQ(requests[5], 2);
  EXPECT_EQ(requests[0], 1);

  // Each GPU's share of the run reaches the report (runs.settings "per_gpu").
  std::string rep = (targets / "report").string();
  std::string rout = run("TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY +
                         " report hostile_rmsnorm --out " + rep + " --db " + db);
  std::ifstream md(rep + "/report.md");
  std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("GPU 0 "), std::string::npos) << rout << text;
  EXPECT_NE(text.find("GPU 1 "), std::string::npos) << text;
  EXPECT_NE(text.find(" evaluated; idle "), std::string::npos) << text;
  EXPECT_NE(text.find(" s at batch ends)"), std::string::npos) << text;
  fs::remove_all(targets);
}

// The nightly "search on": a second run on the same history spends its budget on
// configurations it has not measured; the stored verdicts it meets again are free.
TEST(Pipeline, ResumedSearchSpendsItsBudgetOnNewCandidates) {
  fs::path targets = make_targets();
  std::string db = (targets / "resume.db").string();
  std::string env = "TESSERA_TARGETS=" + targets.string() + " TESSERA_WORKER_CMD=" + FAKE_WORKER +
                    " TESSERA_WORKER_GPUS=1 ";
  std::string cmd = env + TESSERA_BINARY + " optimize hostile_rmsnorm --strategy exhaustive --budget 6 "
                    "--gpus all --timeout 3 --db " + db;
  auto count = [&] {
    auto rows = nlohmann::json::parse(run("TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY +
                                          " leaderboard hostile_rmsnorm --json --limit 100 --db " + db));
    return rows.size();
  };
  std::string first = run(cmd);
  SCOPED_TRACE(first);
  EXPECT_EQ(count(), 6u);
  std::string second = run(cmd);
  SCOPED_TRACE(second);
  EXPECT_EQ(count(), 12u) << "the second run must measure six new candidates";
  EXPECT_NE(second.find("6 of them resumed from stored verdicts"), std::string::npos);
  // The progress lines count only what the budget pays for.
  EXPECT_NE(second.find("[resumed] #"), std::string::npos);
  EXPECT_NE(second.find("[6/6] #"), std::string::npos);
  EXPECT_EQ(second.find("[7/6]"), std::string::npos);
  // Idle cores compiled the neighbours of each new best ahead (agent/speculator.h);
  // the summary says how many real compiles the cache answered.
  EXPECT_NE(first.find("compiled ahead by the speculator"), std::string::npos);
  EXPECT_EQ(first.find("0 offered)"), std::string::npos) << "a new best was found, so neighbours were offered";
  std::string off = run("TESSERA_SPECULATE=0 " + cmd);
  EXPECT_NE(off.find("(speculator off)"), std::string::npos) << off;
  fs::remove_all(targets);
}
