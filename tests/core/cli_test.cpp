// tests/core/cli_test.cpp — the tessera executable as a user and a script see
// it: exit codes, messages, and the no-GPU optimize path end to end.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "agent/optimize.h"
#include "store/store.h"
#include "tests/support/shell.h"

namespace fs = std::filesystem;

namespace {
using Result = tessera::testing::ShellResult;

Result run(const std::string& args) {
  return tessera::testing::shell(std::string(TESSERA_BINARY) + " " + args);
}

std::string temp_db() {
  auto p = fs::temp_directory_path() / ("tessera-cli-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
  fs::remove(p);
  return p.string();
}
}  // namespace

TEST(Cli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run("").code, 2);
  EXPECT_EQ(run("frobnicate").code, 2);
  EXPECT_EQ(run("optimize").code, 2);                      // operator missing
  EXPECT_EQ(run("optimize rmsnorm --budget -3").code, 2);  // not positive
  EXPECT_EQ(run("optimize rmsnorm --budget many").code, 2);
  auto unknown = run("optimize no_such_op --gpus none --db " + temp_db());
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.out.find("unknown operator 'no_such_op'"), std::string::npos) << unknown.out;
  EXPECT_NE(unknown.out.find("rmsnorm"), std::string::npos) << "should list the known operators";
  auto strat = run("optimize rmsnorm --gpus none --strategy psychic --db " + temp_db());
  EXPECT_EQ(strat.code, 2);
  EXPECT_NE(strat.out.find("unknown strategy 'psychic'"), std::string::npos) << strat.out;
  auto arch = run("optimize rmsnorm --gpus none --arch sm_1 --budget 1 --db " + temp_db());
  EXPECT_NE(arch.code, 0);
  EXPECT_NE(arch.out.find("sm_1"), std::string::npos) << arch.out;
}

TEST(Cli, ReadCommandsRefuseMissingOrBrokenDatabases) {
  auto missing = run("leaderboard rmsnorm --db /nonexistent/x.db");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find("no database at /nonexistent/x.db"), std::string::npos) << missing.out;
  std::string garbage = temp_db();
  std::ofstream(garbage) << std::string(8192, 'z');
  auto broken = run("leaderboard rmsnorm --db " + garbage);
  EXPECT_EQ(broken.code, 1);
  EXPECT_NE(broken.out.find("not a usable tessera database"), std::string::npos) << broken.out;
  EXPECT_EQ(run("leaderboard rmsnorm --status fast --db " + garbage).code, 2);
}

TEST(Cli, TargetsListsTheShippedOperators) {
  auto r = run("targets --json");
  auto j = nlohmann::json::parse(r.out);
  std::set<std::string> names;
  for (auto& op : j) {
    EXPECT_FALSE(op.contains("error")) << op.dump();
    names.insert(op.value("name", ""));
  }
  EXPECT_TRUE(names.count("rmsnorm"));
  EXPECT_TRUE(names.count("gemm"));
  // A template's configurations are what its constraints leave of the products of its lists:
  // kda's chunk_wgmma_seg, 2 TRN x 2 CH x 2 RC x 6 SEG x 6 NSEG, keeps RC 1 with CH 32 only and
  // one SEG beside NSEG > 0: 66 of 288.
  for (auto& op : j) {
    if (op.value("name", "") != "kda") continue;
    for (auto& t : op["templates"]) {
      EXPECT_LE(t["configurations"].get<size_t>(), t["cartesian"].get<size_t>()) << t.dump();
      if (t["name"] == "chunk_wgmma_seg") {
        EXPECT_EQ(t["cartesian"].get<size_t>(), 288u);
        EXPECT_EQ(t["configurations"].get<size_t>(), 66u);
      }
    }
  }
  auto text = run("targets");
  EXPECT_NE(text.out.find("kda                3 template(s), 104 configurations"), std::string::npos) << text.out;
}

TEST(Cli, OptimizeWithoutAGpuCompilesRecordsAndSaysSo) {
  std::string db = temp_db();
  auto r = run("optimize rmsnorm --gpus none --budget 4 --seed 5 --quiet --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("nothing was timed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sm_90a"), std::string::npos) << r.out;
  auto lb = run("leaderboard rmsnorm --status compiled --json --db " + db);
  ASSERT_EQ(lb.code, 0) << lb.out;
  auto rows = nlohmann::json::parse(lb.out);
  ASSERT_EQ(rows.size(), 4u);
  long long id = rows[0]["candidate"];
  auto show = run("show " + std::to_string(id) + " --json --db " + db);
  ASSERT_EQ(show.code, 0) << show.out;
  auto c = nlohmann::json::parse(show.out);
  EXPECT_EQ(c["status"], "compiled");
  EXPECT_NE(c["source"].get<std::string>().find("rmsnorm_rows"), std::string::npos);
  EXPECT_TRUE(c["compile"]["ok"].get<bool>());
  EXPECT_GT(c["compile"]["registers"].get<int>(), 0);
  // The same seed proposes the same candidates: a second run adds none.
  ASSERT_EQ(run("optimize rmsnorm --gpus none --budget 4 --seed 5 --quiet --db " + db).code, 0);
  EXPECT_EQ(nlohmann::json::parse(run("leaderboard rmsnorm --json --limit 100 --db " + db).out).size(), 4u);
  EXPECT_EQ(run("show 99999 --db " + db).code, 1);
}

TEST(Cli, ShowSaysHowEachShapeWasTimed) {
  std::string db = temp_db();
  long long id = 0;
  {
    tessera::store::Store st(db);
    tessera::store::CandidateInfo c;
    c.op = "rmsnorm";
    c.template_name = "rows";
    c.params_json = "{}";
    c.source_hash = "h-show";
    c.arch = "sm_90a";
    c.origin = "test";
    id = st.add_candidate(c, "__global__ void k() {}");
    tessera::store::EvaluationInfo e;
    e.candidate_id = id;
    e.device = "NVIDIA H200";
    e.status = "ok";
    e.geomean_speedup = 2;
    e.shapes.push_back({"calm", 0.05, 0.049, 0.051, 10, 0.1, 10, 2, 0.02, 0.4, 1e-3});
    e.shapes.push_back({"bumpy", 0.05, 0.049, 0.051, 10, 0.1, 10, 2, 0.02, 0.4, 1e-3});
    e.shapes.push_back({"stormy", 0.09, 0.08, 0.1, 200, 0.17, 200, 1.9, 0.02, 0.2, 1e-3});
    e.report_json = R"({"timings": [
        {"shape": "calm", "method": "graph", "batches": 1, "batches_set_aside": 0},
        {"shape": "bumpy", "method": "events", "batches": 20, "batches_set_aside": 3},
        {"shape": "stormy", "method": "events", "batches": 90, "batches_set_aside": 0, "disturbed": true}]})";
    st.add_evaluation(e);
  }
  auto r = run("show " + std::to_string(id) + " --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  auto line = [&](const std::string& shape) {
    auto at = r.out.find("  " + shape + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  EXPECT_NE(line("calm").find("graph"), std::string::npos) << r.out;
  EXPECT_EQ(line("calm").find("set aside"), std::string::npos) << r.out;
  EXPECT_NE(line("bumpy").find("events, 3 of 20 batches set aside"), std::string::npos) << r.out;
  EXPECT_NE(line("stormy").find("DISTURBED"), std::string::npos) << r.out;
}

TEST(Cli, OptimizeForBlackwellWithoutAGpu) {
  std::string db = temp_db();
  auto r = run("optimize gemm --gpus none --arch sm_103a --budget 2 --quiet --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  auto rows = nlohmann::json::parse(run("leaderboard gemm --json --db " + db).out);
  ASSERT_EQ(rows.size(), 2u);
  for (auto& row : rows) EXPECT_TRUE(row["status"] == "compiled" || row["status"] == "not_applicable") << row.dump();
}

#include "evaluator/npy.h"

namespace {
fs::path npy_inputs(long long m, long long n, long long wn) {
  auto dir = fs::temp_directory_path() / ("tessera-run-" + std::to_string(getpid()) + "-" + std::to_string(wn));
  fs::create_directories(dir);
  std::vector<float> x(m * n, 0.25f), w(wn, 1.5f);
  tessera::npy::write_as(dir / "x.npy", tessera::npy::DType::F32, x.data(), {m, n});
  tessera::npy::write_as(dir / "w.npy", tessera::npy::DType::F32, w.data(), {wn});
  return dir;
}
}  // namespace

TEST(Cli, RunChecksItsInputsAgainstTheSpec) {
  auto bad = npy_inputs(7, 1025, 1000);
  auto r = run("run rmsnorm --reference --inputs " + bad.string() + " --outputs " + (bad / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("N = 1025"), std::string::npos) << r.out;  // w has 1000, x says N is 1025
  auto missing = run("run rmsnorm --baseline --inputs " + fs::temp_directory_path().string() + " --outputs /tmp/o");
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find("input 'x' missing"), std::string::npos) << missing.out;
  EXPECT_EQ(run("run rmsnorm --inputs " + bad.string() + " --outputs /tmp/o").code, 2);  // which program?
  EXPECT_EQ(run("run rmsnorm --reference --baseline --inputs " + bad.string() + " --outputs /tmp/o").code, 2);
}

TEST(Cli, RunWithoutAGpuSaysSo) {
  auto good = npy_inputs(7, 1025, 1025);
  auto r = run("run rmsnorm --reference --inputs " + good.string() + " --outputs " + (good / "out").string());
  if (r.code == 0) GTEST_SKIP() << "a GPU is present; covered by the GPU tests";
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no GPU"), std::string::npos) << r.out;
}

TEST(Cli, LeaderboardPerShapeNamesEachShapesChampion) {
  // The recorded H200 gemm run: one template configuration cannot win every shape.
  fs::path copy = fs::temp_directory_path() / ("tessera-cli-recorded-" + std::to_string(getpid()) + ".db");
  fs::copy_file(fs::path(TESSERA_SOURCE_DIR) / "runs/recorded/h200-2026-11-30.db", copy,
                fs::copy_options::overwrite_existing);
  auto r = run("leaderboard gemm --per-shape --json --db " + copy.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 9u);  // the nine benchmark shapes of targets/gemm/spec.json
  std::map<std::string, nlohmann::json> by;
  for (auto& row : rows) by[row["shape"]] = row;
  // (the speedup against the run's steady baseline: 0.531x against the champion's own)
  EXPECT_NEAR(by["sq8192"]["speedup"].get<double>(), 0.534, 0.001);
  EXPECT_NEAR(by["sq8192"]["own_speedup"].get<double>(), 0.531, 0.001);
  EXPECT_NE(by["sq8192"]["candidate"], by["m128_qkv"]["candidate"]);
  // Every champion is at least as fast on its shape as the geomean leader is there (one run:
  // the same steady baseline for both, so the faster median wins).
  auto lb = nlohmann::json::parse(run("leaderboard gemm --status ok --json --limit 1 --db " + copy.string()).out);
  for (auto& s : lb[0]["shapes"]) {
    auto& b = by[s["shape"]];
    EXPECT_EQ(b["run"], 3) << s;
    EXPECT_LE(b["median_ms"].get<double>(), s["median_ms"].get<double>()) << s;
    EXPECT_NEAR(b["speedup"].get<double>(), b["baseline_ms"].get<double>() / b["median_ms"].get<double>(), 1e-12);
  }
  // The table ends with both figures (issue 33): the per-shape champions' geomean, which is
  // what export --per-shape serves, and the one champion over all shapes; the first is the
  // higher since every shape's champion is at least as fast there.
  double log_sum = 0;
  for (auto& row : rows) log_sum += std::log(row["speedup"].get<double>());
  auto text = run("leaderboard gemm --per-shape --db " + copy.string());
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(
      text.out.find(fmt::format("geomean of the per-shape champions: {:.3f}x over 9 shapes", std::exp(log_sum / 9))),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(fmt::format("the champion over all shapes: #{} {:.3f}x", lb[0]["candidate"].get<long long>(),
                                      lb[0]["geomean_speedup"].get<double>())),
            std::string::npos)
      << text.out;
  EXPECT_GT(std::exp(log_sum / 9), lb[0]["geomean_speedup"].get<double>());
}

// Timings rank within one GPU model: the H200's wgmma search of 2026-12-04 merged with the
// H100's decode run of 2026-12-05 (the first per-shape table of that day mixed them).
TEST(Cli, LeaderboardRanksWithinTheLatestGpuModelOrTheOneAskedFor) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-cli-models-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path rec = fs::path(TESSERA_SOURCE_DIR) / "runs/recorded";
  for (const char* f : {"h200-gemm-wgmma-2026-12-04", "h100-gemm-decode-2026-12-05"}) {
    auto z = tessera::testing::shell("gunzip -c '" + (rec / f).string() + ".db.gz' > '" + (dir / f).string() + ".db'");
    ASSERT_EQ(z.code, 0) << z.out;
  }
  const std::string db = (dir / "both.db").string();
  auto m = run("merge " + db + " " + (dir / "h200-gemm-wgmma-2026-12-04.db").string() + " " +
               (dir / "h100-gemm-decode-2026-12-05.db").string());
  ASSERT_EQ(m.code, 0) << m.out;
  const std::string err = (dir / "err.txt").string();
  auto per_shape = [&](const std::string& extra) {  // (stdout only: the note goes to stderr)
    auto r = tessera::testing::shell("(" + std::string(TESSERA_BINARY) + " leaderboard gemm --per-shape --json " +
                                     extra + " --db " + db + " 2>" + err + ")");
    EXPECT_EQ(r.code, 0) << r.out;
    std::map<std::string, nlohmann::json> by;
    for (auto& row : nlohmann::json::parse(r.out)) by[row["shape"]] = row;
    return by;
  };
  auto h100 = per_shape("");
  std::ifstream in(err);
  const std::string note((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(note.find("timings on NVIDIA H100 80GB HBM3"), std::string::npos) << note;
  EXPECT_NE(note.find("also has NVIDIA H200"), std::string::npos) << note;
  ASSERT_EQ(h100.size(), 13u);
  EXPECT_TRUE(h100["m1_qkv"]["params"].contains("WARPS")) << h100["m1_qkv"];  // the decode template
  EXPECT_NEAR(h100["m1_qkv"]["speedup"].get<double>(), 1.23, 0.01);
  auto h200 = per_shape("--device 'NVIDIA H200'");
  ASSERT_EQ(h200.size(), 13u);
  EXPECT_TRUE(h200["m1_qkv"]["params"].contains("SPLITK")) << h200["m1_qkv"];  // decode never ran there
  EXPECT_NEAR(h200["m1_qkv"]["speedup"].get<double>(), 0.983, 0.002);          // the README's figure
  for (auto& [shape, row] : h200) EXPECT_NE(h100[shape]["run"], row["run"]) << shape;
  fs::remove_all(dir);
}

// optimize shares its budget among templates evenly, but a template never gets more
// than its space holds: kda's one-configuration wgmma template beside the 18 of
// chunk_tf32 leaves the rest of a budget of 19 to the larger space.
TEST(Optimize, SharesTheBudgetAmongTemplatesWithoutWastingSmallSpaces) {
  using tessera::agent::share_budget;
  using V = std::vector<size_t>;
  EXPECT_EQ(share_budget(19, {18, 1}), (V{18, 1}));
  EXPECT_EQ(share_budget(10, {18, 1}), (V{9, 1}));
  EXPECT_EQ(share_budget(9, {5, 5}), (V{4, 5}));  // as the even split always gave
  EXPECT_EQ(share_budget(4, {543, 10}), (V{2, 2}));
  EXPECT_EQ(share_budget(100, {543, 10}), (V{90, 10}));
  EXPECT_EQ(share_budget(30, {3, 0, 100}), (V{3, 0, 27}));
  EXPECT_EQ(share_budget(7, {2, 2}), (V{2, 2}));  // more budget than configurations
  EXPECT_EQ(share_budget(0, {5, 5}), (V{0, 0}));
  EXPECT_TRUE(share_budget(5, {}).empty());
}
