// tests/nightly/regression_test.cpp — regression detection on recorded data:
// the noise model, the comparison of a re-check with the stored figure, the
// verdicts of a stored re-check run, and `tessera nightly` exit codes without a
// GPU (0 all good, 3 a champion no longer compiles, 4 a step failed).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent/recheck.h"
#include "helpers.h"
#include "store/report_queries.h"

using namespace nightly_test;
using namespace tessera;

namespace {
store::StoredEvaluation stored(long long id, const std::vector<Shape>& shapes, const std::string& status = "ok") {
  store::StoredEvaluation s;
  s.id = id;
  s.info = timed(7, 1, status, shapes);
  return s;
}
}  // namespace

TEST(Noise, RelativeStandardErrorOfTheMedian) {
  EXPECT_EQ(agent::relative_noise(1.0, 1.0, 100), 0) << "no spread";
  EXPECT_EQ(agent::relative_noise(1.0, 1.2, 1), 0) << "one sample";
  // sigma = 0.12816 / 1.2816 = 0.1 ms; se = 1.2533 * 0.1 / 10 = 0.012533 (relative to 1 ms)
  EXPECT_NEAR(agent::relative_noise(1.0, 1.12816, 100), 0.012533, 1e-6);
  EXPECT_GT(agent::relative_noise(1.0, 1.12816, 9), agent::relative_noise(1.0, 1.12816, 100))
      << "fewer samples, more noise";
}

TEST(Noise, SlowerBeyondTheToleranceIsFlaggedWithinIsNot) {
  agent::NoiseModel nm;  // 5 %, z = 3
  auto old = stored(1, {{"a", 1.00, 1.01, 200, 2.0, 0.5}, {"b", 2.00, 2.02, 200, 3.0, 1.0}});
  auto same = stored(2, {{"a", 1.03, 1.04, 200, 2.0, 0.5}, {"b", 1.98, 2.00, 200, 3.0, 1.0}});
  auto r = agent::compare(old, same, nm);
  EXPECT_EQ(r.verdict, "unchanged");
  ASSERT_EQ(r.shapes.size(), 2u);
  EXPECT_NEAR(r.shapes[0].tolerance, 0.05, 1e-12) << "tight samples: the threshold decides";
  auto slow = stored(3, {{"a", 1.10, 1.11, 200, 2.0, 0.5}, {"b", 2.00, 2.02, 200, 3.0, 1.0}});
  r = agent::compare(old, slow, nm);
  EXPECT_EQ(r.verdict, "slower");
  EXPECT_TRUE(r.shapes[0].slower);
  EXPECT_FALSE(r.shapes[1].slower);
  EXPECT_NE(r.note.find("a: 10.0% slower"), std::string::npos) << r.note;
  EXPECT_NEAR(r.time_ratio, std::sqrt(1.10), 1e-9);
  auto fast = stored(4, {{"a", 0.80, 0.81, 200, 2.0, 0.5}, {"b", 2.00, 2.02, 200, 3.0, 1.0}});
  EXPECT_EQ(agent::compare(old, fast, nm).verdict, "faster");
}

TEST(Noise, NoisyFiguresWidenTheTolerance) {
  agent::NoiseModel nm;
  // Wide spread, few samples: se ~ 1.2533 * (0.5/1.2816) / sqrt(4) ~ 24 % each; 10 % slower is noise.
  auto old = stored(1, {{"a", 1.00, 1.50, 4, 2.0, 0.5}});
  auto now = stored(2, {{"a", 1.10, 1.65, 4, 2.0, 0.5}});
  auto r = agent::compare(old, now, nm);
  EXPECT_EQ(r.verdict, "unchanged");
  EXPECT_GT(r.shapes[0].tolerance, 0.5);
  // The same change measured tightly is a regression.
  auto r2 =
      agent::compare(stored(1, {{"a", 1.00, 1.01, 400, 2.0, 0.5}}), stored(2, {{"a", 1.10, 1.11, 400, 2.0, 0.5}}), nm);
  EXPECT_EQ(r2.verdict, "slower");
}

TEST(Noise, FiguresTakenWhileTheMachineWasDisturbedAreShownNotJudged) {
  agent::NoiseModel nm;
  auto old = stored(1, {{"a", 1.00, 1.01, 200, 2.0, 0.5}, {"b", 2.00, 2.02, 200, 3.0, 1.0}});
  auto now = stored(2, {{"a", 1.80, 1.81, 200, 2.0, 0.5}, {"b", 2.00, 2.02, 200, 3.0, 1.0}});
  now.info.report_json =
      R"({"timings": [{"shape": "a", "method": "events", "disturbed": true}, {"shape": "b", "method": "events"}]})";
  auto r = agent::compare(old, now, nm);
  EXPECT_EQ(r.verdict, "unchanged") << "80 % slower, but measured while the baseline itself ran slow";
  ASSERT_EQ(r.shapes.size(), 2u);
  EXPECT_TRUE(r.shapes[0].disturbed);
  EXPECT_FALSE(r.shapes[0].slower);
  EXPECT_NE(r.note.find("disturbed: a"), std::string::npos) << r.note;
  // A disturbed stored figure is not a reference either; an undisturbed one is.
  std::swap(old.info.report_json, now.info.report_json);
  EXPECT_EQ(agent::compare(old, now, nm).verdict, "unchanged");
  old.info.report_json.clear();
  EXPECT_EQ(agent::compare(old, now, nm).verdict, "slower");
}

TEST(Noise, FiguresTakenByAnotherTimingMethodAreShownNotJudged) {
  agent::NoiseModel nm;
  auto old = stored(1, {{"a", 1.00, 1.01, 200, 2.0, 0.5}, {"b", 2.00, 2.02, 200, 3.0, 1.0}});
  auto now = stored(2, {{"a", 1.50, 1.51, 200, 2.0, 0.5}, {"b", 2.00, 2.02, 200, 3.0, 1.0}});
  old.info.report_json = R"({"timings": [{"shape": "a", "method": "events"}, {"shape": "b", "method": "events"}]})";
  now.info.report_json = R"({"timings": [{"shape": "a", "method": "graph"}, {"shape": "b", "method": "events"}]})";
  auto r = agent::compare(old, now, nm);
  EXPECT_EQ(r.verdict, "unchanged") << "50 % slower, but timed by another method";
  ASSERT_EQ(r.shapes.size(), 2u);
  EXPECT_TRUE(r.shapes[0].method_changed());
  EXPECT_FALSE(r.shapes[0].slower);
  EXPECT_NE(r.note.find("a (events -> graph)"), std::string::npos) << r.note;
  // The same method on both sides (or no method recorded) is compared as before.
  now.info.report_json = R"({"timings": [{"shape": "a", "method": "events"}]})";
  EXPECT_EQ(agent::compare(old, now, nm).verdict, "slower");
  now.info.report_json.clear();
  EXPECT_EQ(agent::compare(old, now, nm).verdict, "slower");
}

TEST(Noise, NoCommonShapeIsAFirstFigure) {
  auto r = agent::compare(stored(1, {{"a", 1, 1.1, 50, 2, 0}}), stored(2, {{"z", 5, 5.1, 50, 2, 0}}), {});
  EXPECT_EQ(r.verdict, "first_figure");
  EXPECT_NE(r.note.find("spec changed"), std::string::npos);
}

// A database holding history and two re-check runs, as the nightly job leaves it.
TEST(RecordedRecheck, VerdictsOfStoredRunsFlagOnlyTheChampion) {
  TempDir dir;
  store::Store db(dir / "h.db");
  long long run = add_run(db, "rmsnorm", "NVIDIA H200", 0.9, "2026-11-28T01:00:00Z");
  long long champ = add_candidate(db, "champion", run), second = add_candidate(db, "second", run),
            third = add_candidate(db, "third", run);
  std::vector<Shape> base = {{"a", 1.00, 1.01, 300, 2.0, 0.5}, {"b", 2.00, 2.01, 300, 4.0, 1.0}};
  db.add_evaluation(timed(champ, run, "ok", base));
  db.add_evaluation(timed(second, run, "ok", {{"a", 1.2, 1.21, 300, 2.0, 0.5}, {"b", 2.4, 2.41, 300, 4.0, 1.0}}));
  db.add_evaluation(timed(third, run, "ok", {{"a", 1.5, 1.51, 300, 2.0, 0.5}, {"b", 3.0, 3.01, 300, 4.0, 1.0}}));
  auto board = store::timed_leaderboard(db, "rmsnorm", "NVIDIA H200", 5);
  ASSERT_EQ(board.size(), 3u);
  EXPECT_EQ(board[0].candidate_id, champ);

  // Night 1: the champion is 20 % slower on shape a, rank 2 now gives wrong results, rank 3 unchanged.
  long long r1 = add_run(db, "rmsnorm", "NVIDIA H200", 0.95, "2026-11-29T01:00:00Z");
  nlohmann::json s1 = {
      {"kind", "recheck"},
      {"noise", {{"threshold", 0.05}, {"z", 3}}},
      {"candidates", {{{"id", champ}, {"rank", 1}}, {{"id", second}, {"rank", 2}}, {{"id", third}, {"rank", 3}}}}};
  sql(db, "UPDATE runs SET proposer='recheck', strategy='recheck', settings='" + s1.dump() +
              "' WHERE id=" + std::to_string(r1));
  db.add_evaluation(timed(champ, r1, "ok", {{"a", 1.20, 1.21, 300, 2.0, 0.5}, {"b", 2.00, 2.01, 300, 4.0, 1.0}}));
  auto wrong = timed(second, r1, "wrong_result", {});
  wrong.message = "rel. L2 0.3 > 0.01";
  db.add_evaluation(wrong);
  db.add_evaluation(timed(third, r1, "ok", {{"a", 1.51, 1.52, 300, 2.0, 0.5}, {"b", 2.99, 3.0, 300, 4.0, 1.0}}));

  store::RunRow row;
  for (auto& r : store::runs_of(db, "rmsnorm"))
    if (r.id == r1) row = r;
  auto v = agent::verdicts_of_run(db, row);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].verdict, "slower");
  EXPECT_TRUE(v[0].champion);
  EXPECT_TRUE(v[0].regression);
  EXPECT_NEAR(v[0].speedup_before, std::sqrt(2.0 * 2.0), 1e-9);
  EXPECT_EQ(v[1].verdict, "failed");
  EXPECT_FALSE(v[1].regression) << "only the champion's regressions set the exit status";
  EXPECT_NE(v[1].note.find("wrong_result: rel. L2"), std::string::npos) << v[1].note;
  EXPECT_EQ(v[2].verdict, "unchanged");

  // Night 2 compares with the latest stored figure (night 1's), and the champion stopped validating.
  long long r2 = add_run(db, "rmsnorm", "NVIDIA H200", 0.95, "2026-11-30T01:00:00Z");
  nlohmann::json s2 = {{"kind", "recheck"}, {"candidates", {{{"id", champ}, {"rank", 1}}}}};
  sql(db, "UPDATE runs SET settings='" + s2.dump() + "' WHERE id=" + std::to_string(r2));
  db.add_evaluation(timed(champ, r2, "race", {}));
  for (auto& r : store::runs_of(db, "rmsnorm"))
    if (r.id == r2) row = r;
  v = agent::verdicts_of_run(db, row);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].verdict, "failed");
  EXPECT_TRUE(v[0].regression);
  EXPECT_EQ(v[0].status_before, "ok");

  // A run without a GPU records compile outcomes only.
  long long r3 = add_run(db, "rmsnorm", "(no GPU)", 0, "2026-11-30T02:00:00Z");
  nlohmann::json s3 = {{"kind", "recheck"},
                       {"candidates", {{{"id", third}, {"rank", 1}}, {{"id", second}, {"rank", 2}}}},
                       {"outcomes",
                        {{{"id", third}, {"status", "compile_error"}, {"note", "error: x"}},
                         {{"id", second}, {"status", "compiled"}, {"note", ""}}}}};
  sql(db, "UPDATE runs SET settings='" + s3.dump() + "' WHERE id=" + std::to_string(r3));
  for (auto& r : store::runs_of(db, "rmsnorm"))
    if (r.id == r3) row = r;
  v = agent::verdicts_of_run(db, row);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].verdict, "no_longer_compiles");
  EXPECT_TRUE(v[0].regression);
  EXPECT_EQ(v[1].verdict, "compiles");
  EXPECT_FALSE(v[1].regression);
}

namespace {
// History with real rmsnorm sources (from `optimize --gpus none`), timed by hand
// on an H200 the way a GPU node would have recorded them.
std::string history_with_real_sources(TempDir& dir, bool broken_champion) {
  std::string db_path = dir / "tessera.db";
  auto r = run_tessera("optimize rmsnorm --gpus none --budget 3 -q --db " + db_path);
  EXPECT_EQ(r.code, 0) << r.out;
  store::Store db(db_path);
  long long run = add_run(db, "rmsnorm", "NVIDIA H200", 0.93, "2026-11-29T01:00:00Z");
  double ms = 1.0;
  for (long long id = 1; id <= 3; ++id, ms += 0.1)
    db.add_evaluation(timed(id, run, "ok", {{"x", ms, ms * 1.01, 100, 2.0, 0.4}}));
  if (broken_champion) {
    store::CandidateInfo c;
    c.op = "rmsnorm";
    c.template_name = "rows";
    c.params_json = R"({"ROWS":1,"SMEM_ROW":1,"THREADS":128,"UNROLL":4,"VEC":1})";
    c.source_hash = "broken";
    c.arch = "sm_90a";
    c.origin = "test";
    long long id = db.add_candidate(c, "this is not CUDA;\n");
    db.add_evaluation(timed(id, run, "ok", {{"x", 0.5, 0.51, 100, 2.0, 0.4}}));
  }
  return db_path;
}
}  // namespace

TEST(NightlyCli, WithoutAGpuRecompilesSearchesReportsAndExitsZero) {
  TempDir dir;
  std::string db = history_with_real_sources(dir, false);
  std::ofstream(dir / "job.json") << R"({"operators": [{"name": "rmsnorm", "budget": {"evaluations": 2}, "top": 2}],
    "gpus": "none", "db": ")" << db
                                  << R"(", "report_dir": ")" << (dir / "report") << "\"}";
  auto r = run_tessera("nightly -q --config " + (dir / "job.json"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("re-check #1 (rank 1): compiles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped: re-check: re-timing and re-validation skipped (--gpus none)"), std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(dir / "report/report.html"));
  auto summary = nlohmann::json::parse(std::ifstream(dir / "report/nightly.json"));
  EXPECT_EQ(summary["exit"], 0);
  EXPECT_EQ(summary["operators"][0]["search_exit"], 0);
  store::Store st(db);
  EXPECT_EQ(scalar(st, "SELECT count(*) FROM runs WHERE proposer='recheck'"), 1);
  EXPECT_EQ(scalar(st, "SELECT count(*) FROM evaluations e JOIN runs r ON r.id=e.run_id WHERE r.proposer='recheck'"), 0)
      << "without a GPU a re-check must not replace stored timings";
}

TEST(NightlyCli, ChampionThatNoLongerCompilesExitsThreeAndFailuresExitFour) {
  TempDir dir;
  std::string db = history_with_real_sources(dir, true);
  std::ofstream(dir / "job.json") << R"({"operators": [{"name": "rmsnorm", "budget": {"evaluations": 0}}],
    "gpus": "none", "db": ")" << db
                                  << R"(", "report_dir": ")" << (dir / "report") << "\"}";
  auto r = run_tessera("nightly -q --config " + (dir / "job.json"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("no_longer_compiles — REGRESSION"), std::string::npos) << r.out;
  std::string html;
  std::getline(std::ifstream(dir / "report/report.html"), html, '\0');
  EXPECT_NE(html.find("REGRESSION"), std::string::npos);
  // A report that cannot be written is a failure, and a failure wins over a regression.
  std::ofstream(dir / "file") << "x";
  auto f = run_tessera("nightly -q --config " + (dir / "job.json") + " --report-dir " + (dir / "file/report"));
  EXPECT_EQ(f.code, 4) << f.out;
  EXPECT_NE(f.out.find("FAILED: report:"), std::string::npos) << f.out;
  // GPUs required but none here.
  std::ofstream(dir / "gpu.json") << R"({"operators": [{"name": "rmsnorm", "budget": {"evaluations": 0}, "top": 0}],
    "require_gpu": true, "gpus": "none", "db": ")"
                                  << db << R"(", "report_dir": ")" << (dir / "r2") << "\"}";
  auto g = run_tessera("nightly -q --config " + (dir / "gpu.json"));
  EXPECT_EQ(g.code, 4) << g.out;
  EXPECT_NE(g.out.find("require_gpu"), std::string::npos) << g.out;
}

TEST(RecheckCli, NamedCandidatesKeepTheirRankAndForeignOnesAreRefused) {
  TempDir dir;
  std::string db = history_with_real_sources(dir, true);  // #4, the broken one, is the champion
  // #2 is ranked 3rd (after #4 and #1); re-checked alone it is no champion.
  auto r = run_tessera("recheck rmsnorm --candidate 2 --gpus none --json --db " + db);
  EXPECT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  ASSERT_EQ(j["items"].size(), 1u);
  EXPECT_EQ(j["items"][0]["candidate"], 2);
  EXPECT_EQ(j["items"][0]["rank"], 3);
  EXPECT_EQ(j["items"][0]["verdict"], "compiles");
  // Naming the champion that no longer compiles is a regression: exit 3.
  auto c = run_tessera("recheck rmsnorm --candidate 4 --gpus none --db " + db);
  EXPECT_EQ(c.code, 3) << c.out;
  EXPECT_NE(c.out.find("no_longer_compiles !"), std::string::npos) << c.out;
  // Unknown ids and other operators' candidates are refused before anything runs.
  auto u = run_tessera("recheck rmsnorm --candidate 99 --gpus none --db " + db);
  EXPECT_EQ(u.code, 2) << u.out;
  EXPECT_NE(u.out.find("no candidate #99"), std::string::npos) << u.out;
  auto o = run_tessera("recheck gemm --candidate 2 --gpus none --db " + db);
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("is a rmsnorm candidate, not gemm"), std::string::npos) << o.out;
}

// A candidate stored before plans were (no plan with it) and judged only under another
// spec.json is re-checked with today's template plan, and the re-check says so; one with its
// plan stored, or judged under this spec, says nothing of the kind.
TEST(RecheckCli, ACandidateWithoutAPlanJudgedUnderAnotherSpecSaysSo) {
  TempDir dir;
  std::string db = history_with_real_sources(dir, false);
  {
    store::Store st(db);
    sql(st, "UPDATE candidates SET plan=NULL WHERE id=2");
    sql(st, "UPDATE evaluations SET spec_hash='0123456789abcdef' WHERE candidate_id=2");
  }
  const std::string said = "no plan stored with it, judged under another spec.json";
  auto r = run_tessera("recheck rmsnorm --candidate 2 --candidate 1 --gpus none --json --db " + db);
  EXPECT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  ASSERT_EQ(j["items"].size(), 2u);
  for (auto& it : j["items"]) {
    const std::string note = it.value("note", "");
    EXPECT_NE(note.find("compiled again, not timed (no GPU)"), std::string::npos) << note;
    EXPECT_EQ(note.find(said) != std::string::npos, it["candidate"] == 2) << it.dump();
  }
}
