// tests/pipeline/pipeline_test.cpp — the agent's GPU path without a GPU: a
// fake worker (fake_worker.cpp) stands in for `tessera worker` on two "GPUs",
// and one optimize session must deal candidates to both, survive a lost
// context, a dead worker and a hang, re-measure and reject an impossible speed,
// compute roofline fractions from the measured ceilings, and rank the rest.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <vector>

#include "tests/support/hostile_targets.h"
#include "tests/support/shell.h"

namespace fs = std::filesystem;

namespace {

// stdout and stderr of a command line.
std::string run(const std::string& cmd) {
  return tessera::testing::shell(cmd).out;
}

fs::path make_targets() {
  return tessera::testing::make_hostile_targets(fs::path(TESSERA_SOURCE_DIR), "pipeline");
}

}  // namespace

TEST(Pipeline, TwoFakeGpusSurviveCrashesHangsAndCheatsAndRankTheRest) {
  fs::path targets = make_targets();
  std::string db = (targets / "pipeline.db").string();
  std::string log = (targets / "worker.log").string();
  std::string env = "TESSERA_TARGETS=" + targets.string() + " TESSERA_WORKER_CMD=" + FAKE_WORKER +
                    " TESSERA_WORKER_GPUS=2 FAKE_WORKER_LOG=" + log + " ";
  std::string out = run(env + TESSERA_BINARY +
                        " optimize hostile_rmsnorm --strategy exhaustive --budget 20 "
                        "--gpus all --timeout 3 --quiet --db " +
                        db);
  SCOPED_TRACE(out);
  EXPECT_NE(out.find("GPU 0 (Fake GPU)"), std::string::npos);
  EXPECT_NE(out.find("GPU 1 (Fake GPU)"), std::string::npos);
  EXPECT_NE(out.find("best: candidate"), std::string::npos);
  // ... and the per-shape champions' geomean beside it (issue 33), the figure that
  // `leaderboard --per-shape` shows for what `export --per-shape` serves.
  {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(per-shape champions: ([0-9.]+)x geomean over 2 shapes)")));
    const std::string table = run("TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY +
                                  " leaderboard hostile_rmsnorm --per-shape --db " + db);
    EXPECT_NE(table.find("geomean of the per-shape champions: " + m[1].str() + "x over 2 shapes"), std::string::npos)
        << table;
  }
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

  auto rows = nlohmann::json::parse(run("TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY +
                                        " leaderboard hostile_rmsnorm --json --limit 100 --db " + db));
  std::map<int, nlohmann::json> by_kind;
  for (auto& r : rows) by_kind[r["params"]["KIND"].get<int>()] = r;
  ASSERT_EQ(by_kind.size(), 20u);
  for (int k = 0; k <= 19; ++k) {
    std::string want = k == 0 || k >= 16    ? "ok"
                       : k == 11 || k == 12 ? "crashed"
                       : k == 13            ? "timeout"
                       : k == 5             ? "impossible_speed"
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
  std::string env =
      "TESSERA_TARGETS=" + targets.string() + " TESSERA_WORKER_CMD=" + FAKE_WORKER + " TESSERA_WORKER_GPUS=1 ";
  std::string cmd = env + TESSERA_BINARY +
                    " optimize hostile_rmsnorm --strategy exhaustive --budget 6 "
                    "--gpus all --timeout 3 --db " +
                    db;
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
  EXPECT_EQ(first.find(" 0 offered)"), std::string::npos) << "a new best was found, so neighbours were offered";
  std::string off = run("TESSERA_SPECULATE=0 " + cmd);
  EXPECT_NE(off.find("(speculator off)"), std::string::npos) << off;
  fs::remove_all(targets);
}

namespace {

// `tessera show ID --json` of the candidate of a kind, from the leaderboard rows.
nlohmann::json shown(const std::string& db, const std::map<int, nlohmann::json>& by_kind, int kind) {
  return nlohmann::json::parse(run(std::string(TESSERA_BINARY) + " show " +
                                   std::to_string(by_kind.at(kind)["candidate"].get<long long>()) + " --json --db " +
                                   db));
}

}  // namespace

// The worker's private channel (evaluator/channel.h): what a kernel prints never
// becomes a verdict, and anything on the channel but the expected reply ends the
// worker with protocol_error, while the candidates after it are judged as usual.
TEST(Pipeline, NothingButTheExpectedReplyOnTheChannelIsEverAVerdict) {
  fs::path targets = make_targets();
  // Kinds that break the channel first (one batch of 8), honest ones after them.
  {
    fs::path spec = targets / "hostile_rmsnorm" / "spec.json";
    std::ifstream in(spec);
    auto j = nlohmann::json::parse(in);
    j["templates"][0]["params"]["KIND"] = {20, 21, 22, 23, 24, 25, 17, 18, 0, 16, 19};
    std::ofstream(spec) << j.dump(2);
  }
  std::string db = (targets / "channel.db").string();
  std::string log = (targets / "worker.log").string();
  std::string env = "TESSERA_TARGETS=" + targets.string() + " TESSERA_WORKER_CMD=" + FAKE_WORKER +
                    " TESSERA_WORKER_GPUS=1 FAKE_WORKER_LOG=" + log + " ";
  // No --timeout: the limits are the steps' own (the fake announces 10 s, kind 25 0.5 s).
  std::string out = run(env + TESSERA_BINARY +
                        " optimize hostile_rmsnorm --strategy exhaustive --budget 11 "
                        "--gpus all --quiet --db " +
                        db);
  SCOPED_TRACE(out);
  auto rows = nlohmann::json::parse(run("TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY +
                                        " leaderboard hostile_rmsnorm --json --limit 100 --db " + db));
  std::map<int, nlohmann::json> by_kind;
  for (auto& r : rows) by_kind[r["params"]["KIND"].get<int>()] = r;
  ASSERT_EQ(by_kind.size(), 11u);
  const std::map<int, std::string> message_part = {{20, "not a JSON object"},
                                                   {21, "cut off"},
                                                   {22, "without the worker's secret"},
                                                   {23, "for request"},
                                                   {24, "more after the reply"}};
  for (auto& [kind, part] : message_part) {
    EXPECT_EQ(by_kind[kind]["status"], "protocol_error") << "KIND " << kind;
    auto ev = shown(db, by_kind, kind)["evaluations"].back();
    EXPECT_NE(ev["message"].get<std::string>().find(part), std::string::npos)
        << "KIND " << kind << ": " << ev["message"];
    EXPECT_EQ(ev["geomean_speedup"].get<double>(), 0.0) << "KIND " << kind;
  }
  // A hang inside an announced 0.5 s step ends after about that, not a minute.
  EXPECT_EQ(by_kind[25]["status"], "timeout");
  auto hung = shown(db, by_kind, 25)["evaluations"].back();
  EXPECT_NE(hung["message"].get<std::string>().find("0.5 s of timing (fake)"), std::string::npos) << hung["message"];
  EXPECT_LT(hung["seconds"].get<double>(), 10.0) << "the fake sleeps 60 s: the step's limit must end it";
  // The honest kinds, judged after every kind above by the same (restarted) worker: ok,
  // with their own figures, and what 17 and 18 printed kept with their evaluations.
  for (int kind : {0, 16, 19, 17, 18}) EXPECT_EQ(by_kind[kind]["status"], "ok") << "KIND " << kind;
  EXPECT_NEAR(by_kind[0]["geomean_speedup"].get<double>(), 1.5, 1e-9);
  EXPECT_NEAR(by_kind[18]["geomean_speedup"].get<double>(), 0.75, 1e-9) << "never the 1000x it printed";
  auto dbg = shown(db, by_kind, 17)["evaluations"].back();
  EXPECT_NE(dbg["printed"].get<std::string>().find("debug: row 0 inv=0.5"), std::string::npos);
  auto flood = shown(db, by_kind, 18)["evaluations"].back();
  EXPECT_EQ(flood["printed"].get<std::string>().size(), 4096u);
  EXPECT_GT(flood["printed_bytes"].get<long long>(), 1000000);
  EXPECT_EQ(shown(db, by_kind, 0)["evaluations"].back()["printed_bytes"], 0);
  // The text form shows it too.
  std::string text = run(std::string(TESSERA_BINARY) + " show " +
                         std::to_string(by_kind[17]["candidate"].get<long long>()) + " --db " + db);
  EXPECT_NE(text.find("  > debug: row 0 inv=0.5"), std::string::npos) << text;
  // Every honest kind came after the last channel-breaking one in the worker's order.
  std::ifstream in(log);
  std::vector<int> order;
  int g, k;
  while (in >> g >> k) order.push_back(k);
  size_t last_bad = 0, first_honest = order.size();
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] >= 20) last_bad = i;
    if ((order[i] == 0 || order[i] == 16 || order[i] == 19) && first_honest == order.size()) first_honest = i;
  }
  EXPECT_LT(last_bad, first_honest);
  fs::remove_all(targets);
}

namespace {
std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}
}  // namespace

// `tessera recheck --per-shape` judges each shape's champion again and then, in further runs,
// the shapes' new champions that it has not judged: a champion found slower leaves its
// shapes to a runner-up timed once, in its search, which must not stand unjudged.
TEST(Pipeline, PerShapeRecheckJudgesTheNewChampionsTooUntilNoneIsLeft) {
  fs::path targets = make_targets();
  {
    fs::path spec = targets / "hostile_rmsnorm" / "spec.json";
    auto j = nlohmann::json::parse(std::ifstream(spec));
    j["templates"][0]["params"]["KIND"] = {0, 16, 19};  // 1.5x, 1.2x and 1.15x at both shapes
    std::ofstream(spec) << j.dump(2);
  }
  std::string db = (targets / "per-shape.db").string();
  std::string log = (targets / "worker.log").string();
  std::string env = "TESSERA_TARGETS=" + targets.string() + " TESSERA_WORKER_CMD=" + FAKE_WORKER +
                    " TESSERA_WORKER_GPUS=1 FAKE_WORKER_LOG=" + log + " ";
  run(env + TESSERA_BINARY + " optimize hostile_rmsnorm --strategy exhaustive --budget 3 --gpus all --quiet --db " +
      db);
  auto id_of = [&](int kind) {
    for (auto& r : nlohmann::json::parse(run("TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY +
                                             " leaderboard hostile_rmsnorm --json --limit 10 --db " + db)))
      if (r["params"]["KIND"] == kind) return r["candidate"].get<long long>();
    return -1LL;
  };
  const long long k0 = id_of(0), k16 = id_of(16);
  ASSERT_GT(k0, 0);
  ASSERT_GT(k16, 0);
  const std::string board = "TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY +
                            " leaderboard hostile_rmsnorm --per-shape --db " + db;
  // The per-shape table says how often each champion was judged, and when only once.
  EXPECT_NE(run(board).find("2 of the 2 figures are of a champion judged only once"), std::string::npos) << run(board);
  // Kind 0, both shapes' champion, is twice as slow when judged again: the shapes go to
  // kind 16, which the second run judges; then every champion has been judged: no third run.
  const std::string cmd = " recheck hostile_rmsnorm --per-shape --gpus all --quiet --json --db " + db;
  const std::string first = run(env + "FAKE_WORKER_SLOWER=0 " + TESSERA_BINARY + cmd);
  auto j = nlohmann::json::parse(first.substr(first.find('{')));
  ASSERT_EQ(j["runs"].size(), 2u) << first;
  ASSERT_EQ(j["items"].size(), 2u) << first;
  EXPECT_EQ(j["items"][0]["candidate"], k0);
  EXPECT_EQ(j["items"][0]["verdict"], "slower");
  EXPECT_EQ(j["items"][1]["candidate"], k16);
  EXPECT_EQ(j["items"][1]["verdict"], "unchanged");
  {
    const auto after = nlohmann::json::parse(run(board + " --json"));
    ASSERT_EQ(after.size(), 2u);
    for (const auto& shape : after) {
      EXPECT_EQ(shape["candidate"], k16);
      EXPECT_EQ(shape["judged"], 2) << "its search's figure and the re-check's";
    }
    EXPECT_EQ(run(board).find("judged only once"), std::string::npos) << run(board);
  }
  // Again: kind 16 is the champion and stays it: one run.
  const std::string second = run(env + "FAKE_WORKER_SLOWER=0 " + TESSERA_BINARY + cmd);
  j = nlohmann::json::parse(second.substr(second.find('{')));
  EXPECT_EQ(j["runs"].size(), 1u) << second;
  ASSERT_EQ(j["items"].size(), 1u) << second;
  EXPECT_EQ(j["items"][0]["candidate"], k16);
  // The worker saw: the search's three, kind 0 and 16 in the first re-check, 16 in the second.
  std::ifstream in(log);
  std::map<int, int> requests;
  int g, k;
  while (in >> g >> k) ++requests[k];
  EXPECT_EQ(requests, (std::map<int, int>{{0, 2}, {16, 3}, {19, 1}}));
  // Named candidates and --per-shape do not go together.
  EXPECT_NE(run(std::string(TESSERA_BINARY) + " recheck hostile_rmsnorm --per-shape --candidate 1 --db " + db)
                .find("excludes"),
            std::string::npos);
  fs::remove_all(targets);
}

// A candidate keeps the launch plan it was judged with (candidates.plan): `tessera show`
// prints it, `tessera recheck` sends a template candidate to the worker as the spec's
// template while that template launches alike, and with its stored plan once the template's
// plan has changed (here its block size), and `tessera export` packs the stored plan.
TEST(Pipeline, ACandidateIsLaunchedWithThePlanItWasJudgedWith) {
  fs::path targets = make_targets();
  std::string db = (targets / "plan.db").string();
  std::string requests = (targets / "requests.log").string();
  std::string env = "TESSERA_TARGETS=" + targets.string() + " TESSERA_WORKER_CMD=" + FAKE_WORKER +
                    " TESSERA_WORKER_GPUS=1 FAKE_WORKER_REQUEST_LOG=" + requests + " ";
  std::string out = run(env + TESSERA_BINARY +
                        " optimize hostile_rmsnorm --strategy exhaustive --budget 1 --gpus all --timeout 3 --quiet "
                        "--db " +
                        db);
  SCOPED_TRACE(out);
  EXPECT_NE(run("TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY + " show 1 --db " + db)
                .find("launch plan: the template's in spec.json"),
            std::string::npos)
      << "while the template launches alike, `show` says so in one line";
  auto shown = nlohmann::json::parse(run(std::string(TESSERA_BINARY) + " show 1 --json --db " + db));
  ASSERT_TRUE(shown.contains("plan")) << shown.dump();
  EXPECT_EQ(shown["plan"]["launch"][0]["block"][0], "256");
  EXPECT_EQ(shown["plan"]["params"], nlohmann::json::parse(R"({"KIND": [0]})")) << "narrowed to its value";
  EXPECT_FALSE(shown["plan"].contains("constraints"));

  run(env + TESSERA_BINARY + " recheck hostile_rmsnorm --candidate 1 --gpus all --quiet --db " + db);
  // the template's plan changes: the kernel would now be launched with 128 threads
  fs::path spec_path = targets / "hostile_rmsnorm" / "spec.json";
  auto spec = nlohmann::json::parse(std::ifstream(spec_path));
  spec["templates"][0]["launch"][0]["block"][0] = "128";
  std::ofstream(spec_path) << spec.dump(1);
  const std::string again =
      run(env + TESSERA_BINARY + " recheck hostile_rmsnorm --candidate 1 --gpus all --quiet --json --db " + db);
  EXPECT_NE(again.find("launched with its stored plan"), std::string::npos) << again;

  const std::string shown_now =
      run("TESSERA_TARGETS=" + targets.string() + " " + TESSERA_BINARY + " show 1 --db " + db);
  EXPECT_NE(shown_now.find("launch plan (stored; the template's has changed since)"), std::string::npos) << shown_now;

  auto reqs = json_lines(requests);
  ASSERT_EQ(reqs.size(), 3u) << "the search's evaluation and two re-checks";
  EXPECT_FALSE(reqs[0].contains("program")) << "judged as the spec's template";
  EXPECT_FALSE(reqs[1].contains("program")) << "the template unchanged: still the spec's";
  ASSERT_TRUE(reqs[2].contains("program")) << reqs[2].dump();
  EXPECT_EQ(reqs[2]["program"]["launch"][0]["block"][0], "256") << "the plan it was judged with, not the spec's 128";
  EXPECT_EQ(reqs[2]["template"], "hostile");

  fs::path pkg = targets / "export";
  std::string ex = run(std::string("TESSERA_TARGETS=") + targets.string() + " " + TESSERA_BINARY +
                       " export hostile_rmsnorm --candidate 1 --format cpp --out " + pkg.string() + " --db " + db);
  std::ifstream gen(pkg / "cpp" / "src" / "tessera_hostile_rmsnorm.cpp");
  std::string launcher((std::istreambuf_iterator<char>(gen)), std::istreambuf_iterator<char>());
  EXPECT_NE(launcher.find("tessera_count(256.0, &steps[0].block[0])"), std::string::npos) << ex;
  EXPECT_EQ(launcher.find("tessera_count(128.0, &steps[0].block[0])"), std::string::npos);
}

// A suite (`extends`) is judged as an operator of its own: the worker loads the suite's
// folder (whose benchmark shapes it times), and the candidates and their leaderboard are
// the suite's, not its base's.
TEST(Pipeline, ASuiteIsJudgedFromItsOwnFolder) {
  fs::path targets = make_targets();
  fs::create_directories(targets / "hostile_rmsnorm_wide");
  std::ofstream(targets / "hostile_rmsnorm_wide" / "spec.json")
      << R"J({"extends": "../hostile_rmsnorm", "name": "hostile_rmsnorm_wide",
              "benchmark_shapes": [{"name": "wide", "M": 64, "N": 65536}]})J";
  std::string db = (targets / "suite.db").string();
  std::string requests = (targets / "suite-requests.log").string();
  std::string env = "TESSERA_TARGETS=" + targets.string() + " TESSERA_WORKER_CMD=" + FAKE_WORKER +
                    " TESSERA_WORKER_GPUS=1 FAKE_WORKER_REQUEST_LOG=" + requests + " ";
  std::string out = run(env + TESSERA_BINARY +
                        " optimize hostile_rmsnorm_wide --strategy exhaustive --budget 1 --gpus all --timeout 3 "
                        "--quiet --db " +
                        db);
  SCOPED_TRACE(out);
  auto reqs = json_lines(requests);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(fs::path(reqs[0]["operator_dir"].get<std::string>()), fs::absolute(targets / "hostile_rmsnorm_wide"));
  EXPECT_EQ(reqs[0]["template"], "hostile");
  const std::string suite = run(env + TESSERA_BINARY + " leaderboard hostile_rmsnorm_wide --json --db " + db);
  const std::string base = run(env + TESSERA_BINARY + " leaderboard hostile_rmsnorm --json --db " + db);
  auto rows = nlohmann::json::parse(suite);
  ASSERT_TRUE(rows.is_array()) << suite;
  EXPECT_EQ(rows.size(), 1u) << suite;
  EXPECT_EQ(nlohmann::json::parse(base).size(), 0u) << base;
}

// A candidate recorded before its template gained a parameter (no plan stored with it, as
// candidates of before 2026-12-02 have none) is launched with that parameter's first listed
// value, which a spec lists first because it launches as before (docs/spec-format.md):
// re-checks and exports of old history keep working when a template grows.
TEST(Pipeline, ACandidateOlderThanAParameterTakesItsFirstValue) {
  fs::path targets = make_targets();
  std::string db = (targets / "grown.db").string();
  std::string requests = (targets / "grown-requests.log").string();
  std::string env = "TESSERA_TARGETS=" + targets.string() + " TESSERA_WORKER_CMD=" + FAKE_WORKER +
                    " TESSERA_WORKER_GPUS=1 FAKE_WORKER_REQUEST_LOG=" + requests + " ";
  run(env + TESSERA_BINARY +
      " optimize hostile_rmsnorm --strategy exhaustive --budget 1 --gpus all --timeout 3 --quiet --db " + db);
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(h, "UPDATE candidates SET plan = NULL", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);
  // the template grows a parameter that its launch uses, 0 (as before) listed first
  fs::path spec_path = targets / "hostile_rmsnorm" / "spec.json";
  auto spec = nlohmann::json::parse(std::ifstream(spec_path));
  spec["templates"][0]["params"]["EXTRA"] = {0, 32};
  spec["templates"][0]["launch"][0]["block"][0] = "256 + EXTRA";
  std::ofstream(spec_path) << spec.dump(1);

  const std::string again =
      run(env + TESSERA_BINARY + " recheck hostile_rmsnorm --candidate 1 --gpus all --quiet --json --db " + db);
  auto reqs = json_lines(requests);
  ASSERT_EQ(reqs.size(), 2u) << again;
  EXPECT_FALSE(reqs[1].contains("program")) << "the spec's template";
  EXPECT_EQ(reqs[1]["params"]["EXTRA"], 0) << reqs[1].dump();
  EXPECT_EQ(reqs[1]["params"]["KIND"], reqs[0]["params"]["KIND"]);

  fs::path pkg = targets / "grown-export";
  std::string ex = run(std::string("TESSERA_TARGETS=") + targets.string() + " " + TESSERA_BINARY +
                       " export hostile_rmsnorm --candidate 1 --format cpp --out " + pkg.string() + " --db " + db);
  std::ifstream gen(pkg / "cpp" / "src" / "tessera_hostile_rmsnorm.cpp");
  std::string launcher((std::istreambuf_iterator<char>(gen)), std::istreambuf_iterator<char>());
  EXPECT_NE(launcher.find("tessera_count((256.0 + (0.0)), &steps[0].block[0])"), std::string::npos) << ex;
}
