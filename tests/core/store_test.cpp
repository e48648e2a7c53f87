// tests/core/store_test.cpp — the SQLite history: dedup, evaluations,
// leaderboard order, and survival of a process killed mid-run.
#include "store/store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/merge.h"
#include "store/report_queries.h"

using namespace tessera::store;
namespace fs = std::filesystem;

namespace {
std::string temp_db(const std::string& tag) {
  auto p = fs::temp_directory_path() / ("tessera-store-" + tag + "-" + std::to_string(getpid()) + ".db");
  fs::remove(p);
  fs::remove(p.string() + "-wal");
  fs::remove(p.string() + "-shm");
  return p.string();
}

CandidateInfo cand(const std::string& hash) {
  CandidateInfo c;
  c.op = "rmsnorm";
  c.template_name = "rows";
  c.params_json = R"({"T":1})";
  c.source_hash = hash;
  c.arch = "sm_90a";
  c.origin = "test";
  return c;
}

EvaluationInfo eval(long long id, const std::string& status, double speedup) {
  EvaluationInfo e;
  e.candidate_id = id;
  e.device = "NVIDIA H200";
  e.spec_hash = "s1";
  e.status = status;
  e.geomean_speedup = speedup;
  e.shapes.push_back({"a", 1.0, 0.9, 1.1, 20, speedup, 20, speedup, 0.5, 0.5, 1e-3});
  return e;
}
}  // namespace

TEST(Store, DeduplicatesSourcesAndCandidates) {
  Store st(temp_db("dedup"));
  long long a = st.add_candidate(cand("h1"), "source one");
  long long b = st.add_candidate(cand("h1"), "source one");
  long long c = st.add_candidate(cand("h2"), "source two");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(st.source("h2").value(), "source two");
  auto other_arch = cand("h1");
  other_arch.arch = "sm_103a";
  EXPECT_NE(st.add_candidate(other_arch, "source one"), a);
  EXPECT_EQ(st.schema_version(), 4);
}

TEST(Store, KeepsWhatACandidatePrintedWithItsEvaluation) {
  Store st(temp_db("printed"));
  long long id = st.add_candidate(cand("p"), "p");
  auto e = eval(id, "ok", 1.5);
  e.printed = std::string("debug: row 0\n{\"ok\":true}\n") + std::string(1, '\0') + "tail";
  e.printed_bytes = 123456;
  st.add_evaluation(e);
  st.add_evaluation(eval(id, "ok", 1.4));  // a later evaluation that printed nothing
  auto evals = st.evaluations(id);
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals[0].printed, e.printed);  // bytes kept whole, NUL included
  EXPECT_EQ(evals[0].printed_bytes, 123456);
  EXPECT_EQ(evals[1].printed, "");
  EXPECT_EQ(evals[1].printed_bytes, 0);
}

TEST(Store, LeaderboardRanksTimedCandidatesBySpeedup) {
  Store st(temp_db("lb"));
  long long slow = st.add_candidate(cand("slow"), "s");
  long long fast = st.add_candidate(cand("fast"), "f");
  long long wrong = st.add_candidate(cand("wrong"), "w");
  st.add_evaluation(eval(slow, "ok", 1.2));
  st.add_evaluation(eval(fast, "ok", 2.5));
  st.add_evaluation(eval(wrong, "wrong_result", 9.0));
  auto rows = st.leaderboard("rmsnorm", "", 10);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].candidate_id, fast);
  EXPECT_EQ(rows[1].candidate_id, slow);
  EXPECT_EQ(rows[2].candidate_id, wrong);  // failures never outrank a timed candidate
  ASSERT_EQ(rows[0].shapes.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].shapes[0].speedup, 2.5);
  auto only_wrong = st.leaderboard("rmsnorm", "wrong_result", 10);
  ASSERT_EQ(only_wrong.size(), 1u);
  EXPECT_EQ(only_wrong[0].candidate_id, wrong);
  // The latest evaluation is the one that counts.
  st.add_evaluation(eval(fast, "race", 0));
  EXPECT_EQ(st.leaderboard("rmsnorm", "ok", 10).size(), 1u);
  EXPECT_EQ(st.status_of(fast), "race");
}

// Timings compare only within one GPU model: the H100 figures of 2026-12-05 merged with the
// H200's made a per-shape table of both (a decode kernel timed on the H100 beside wgmma ones
// timed on the H200). A leaderboard on a model ranks each candidate by its latest evaluation
// there; by default, the model of the latest evaluation where the history has several.
TEST(Store, LeaderboardOfOneGpuModelRanksByItsEvaluationsThere) {
  Store st(temp_db("lb-device"));
  long long a = st.add_candidate(cand("a"), "a");
  long long b = st.add_candidate(cand("b"), "b");
  long long c = st.add_candidate(cand("c"), "c");
  st.add_evaluation(eval(a, "ok", 1.5));  // H200
  st.add_evaluation(eval(b, "ok", 1.2));  // H200
  EvaluationInfo h100 = eval(b, "ok", 2.0);
  h100.device = "NVIDIA H100 80GB HBM3";
  st.add_evaluation(h100);  // b's latest, on the H100
  h100.candidate_id = c;
  h100.geomean_speedup = 0.9;
  st.add_evaluation(h100);
  auto h200 = st.leaderboard("rmsnorm", "ok", 10, "NVIDIA H200");
  ASSERT_EQ(h200.size(), 2u);  // c was never timed there
  EXPECT_EQ(h200[0].candidate_id, a);
  EXPECT_EQ(h200[1].candidate_id, b);
  EXPECT_DOUBLE_EQ(h200[1].geomean_speedup, 1.2);  // its H200 figure, not the later H100 one
  auto h100s = st.leaderboard("rmsnorm", "ok", 10, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(h100s.size(), 2u);
  EXPECT_EQ(h100s[0].candidate_id, b);
  EXPECT_EQ(h100s[1].candidate_id, c);
  EXPECT_EQ(st.leaderboard("rmsnorm", "ok", 10).size(), 3u);  // no model: each candidate's latest
  std::string note;
  EXPECT_EQ(leaderboard_device(st, "rmsnorm", "", &note), "NVIDIA H100 80GB HBM3");
  EXPECT_NE(note.find("also has NVIDIA H200"), std::string::npos) << note;
  EXPECT_EQ(leaderboard_device(st, "rmsnorm", "NVIDIA H200", &note), "NVIDIA H200");
  Store one(temp_db("lb-one-device"));
  one.add_evaluation(eval(one.add_candidate(cand("a"), "a"), "ok", 1.5));
  note.clear();
  EXPECT_EQ(leaderboard_device(one, "rmsnorm", "", &note), "");  // one model: every evaluation
  EXPECT_TRUE(note.empty());
}

// A shape's champion is judged against its run's steady baseline, not the baseline timed
// beside it: the H200 case of 2026-12-03 (b1_h32_n8192_d128), where candidate 2's baseline
// came out 3.4 % slow and made it the champion with a kernel 2.6 % slower than candidate 13's.
TEST(Store, PerShapeChampionsAreJudgedAgainstTheirRunsSteadyBaseline) {
  auto row = [](long long id, long long run, double base_ms, double cand_ms) {
    LeaderboardRow r;
    r.candidate_id = id;
    r.run_id = run;
    ShapeRow s;
    s.shape = "n8192";
    s.base_median_ms = base_ms;
    s.cand_median_ms = cand_ms;
    s.speedup = base_ms / cand_ms;
    r.shapes.push_back(s);
    return r;
  };
  std::vector<LeaderboardRow> rows{row(2, 1, 4.3607, 1.7426), row(13, 1, 4.2220, 1.6980), row(1, 1, 4.2153, 1.7144)};
  ASSERT_GT(rows[0].shapes[0].speedup, rows[1].shapes[0].speedup);  // by its own baseline, 2 looks faster
  auto best = per_shape_champions(rows);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].shape, "n8192");
  EXPECT_EQ(best[0].candidate_id, 13);
  EXPECT_DOUBLE_EQ(best[0].baseline_ms, 4.2220);  // the median of the run's three
  EXPECT_DOUBLE_EQ(best[0].speedup, 4.2220 / 1.6980);
  EXPECT_DOUBLE_EQ(best[0].row.speedup, 4.2220 / 1.6980);  // the stored figures stay as they were
  // Another run on a slower day (its baseline 10 % slower too): judged by its own baseline, so
  // a candidate 5 % faster than its run's baseline suggests wins although its time is higher.
  rows.push_back(row(30, 2, 4.65, 1.78));
  rows.push_back(row(31, 2, 4.64, 1.90));
  best = per_shape_champions(rows);
  EXPECT_EQ(best[0].candidate_id, 30);
  EXPECT_EQ(best[0].run_id, 2);
  EXPECT_DOUBLE_EQ(best[0].baseline_ms, 0.5 * (4.65 + 4.64));
  // A run with one row falls back to that row's own figure; rows without a time are passed over.
  std::vector<LeaderboardRow> one{row(7, 3, 2.0, 1.0), row(8, 3, 0, 0)};
  best = per_shape_champions(one);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].candidate_id, 7);
  EXPECT_DOUBLE_EQ(best[0].speedup, 2.0);
  EXPECT_TRUE(per_shape_champions({}).empty());
}

TEST(Store, ResumeFindsFinishedEvaluationsForTheSameDeviceAndSpec) {
  Store st(temp_db("resume"));
  long long id = st.add_candidate(cand("r"), "r");
  EXPECT_FALSE(st.last_evaluation(id, "NVIDIA H200", "s1"));
  st.add_evaluation(eval(id, "ok", 1.5));
  auto e = st.last_evaluation(id, "NVIDIA H200", "s1");
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->geomean_speedup, 1.5);
  EXPECT_EQ(e->shapes.size(), 1u);
  EXPECT_FALSE(st.last_evaluation(id, "NVIDIA B300", "s1"));  // another GPU: judged again
  EXPECT_FALSE(st.last_evaluation(id, "NVIDIA H200", "s2"));  // the spec changed: judged again
}

TEST(Store, BaselineMediansComeFromOkEvaluationsOfTheSameDeviceAndSpec) {
  Store st(temp_db("prior"));
  long long id = st.add_candidate(cand("p"), "p");
  EXPECT_TRUE(st.baseline_medians("rmsnorm", "NVIDIA H200", "s1").empty());
  for (double ms : {0.112, 0.175, 0.111}) st.add_evaluation(eval(id, "ok", ms));  // eval(): base median = speedup
  st.add_evaluation(eval(id, "wrong_result", 0.01));
  auto other_gpu = eval(id, "ok", 0.05);
  other_gpu.device = "NVIDIA B300";
  st.add_evaluation(other_gpu);
  auto other_spec = eval(id, "ok", 0.05);
  other_spec.spec_hash = "s2";
  st.add_evaluation(other_spec);
  auto m = st.baseline_medians("rmsnorm", "NVIDIA H200", "s1");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_DOUBLE_EQ(m.at("a"), 0.112);  // the median: one disturbed measurement does not move it
  EXPECT_TRUE(st.baseline_medians("gemm", "NVIDIA H200", "s1").empty());
}

TEST(Store, SurvivesAProcessKilledMidRun) {
  std::string path = temp_db("kill");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Store st(path);
    for (int i = 0; i < 5; ++i) {
      std::string hash = "k";
      hash += std::to_string(i);  // (not "k" + ...: GCC 12 warns falsely on that form)
      long long id = st.add_candidate(cand(hash), "src");
      st.add_evaluation(eval(id, "ok", 1.0 + i));
    }
    // Die in the middle of a transaction, as a SIGKILL would leave it.
    sqlite3_exec(st.raw(), "BEGIN IMMEDIATE; INSERT INTO sources(hash, text) VALUES('half', 'x');", nullptr, nullptr,
                 nullptr);
    kill(getpid(), SIGKILL);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  Store st(path);
  auto rows = st.leaderboard("rmsnorm", "ok", 100);
  EXPECT_EQ(rows.size(), 5u);       // every finished evaluation is there
  EXPECT_FALSE(st.source("half"));  // the interrupted transaction is not
  EXPECT_DOUBLE_EQ(rows[0].geomean_speedup, 5.0);
}

TEST(Store, RefusesAFileThatIsNotADatabase) {
  std::string path = temp_db("garbage");
  std::ofstream(path) << std::string(4096, 'x');
  try {
    Store st(path);
    FAIL() << "opened garbage";
  } catch (StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Store, CeilingsPerDeviceAndDriver) {
  Store st(temp_db("ceil"));
  st.put_ceilings({"NVIDIA H200", "13000", "host", "", 4.3e12, 7.9e14});
  auto c = st.ceilings("NVIDIA H200", "13000");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->copy_bytes_per_s, 4.3e12);
  EXPECT_FALSE(st.ceilings("NVIDIA H200", "12000"));
}

// Schema v4: a rendered source is its prefix plus its template's text, kept once.
namespace {
const std::string kTemplateText = "#include <cuda.h>\n__global__ void k() { /* body */ }\n#line 1\n";
std::string rendered(int t) {
  return "// tessera variant: T=" + std::to_string(t) + "\n#define T " + std::to_string(t) + "\n#line 1\n" +
         kTemplateText;
}
long long count(Store& st, const char* sql) {
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(st.raw(), sql, -1, &s, nullptr);
  long long n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
  sqlite3_finalize(s);
  return n;
}
}  // namespace

TEST(Store, AVersionThreeDatabaseKeepsEachTemplateTextOnceAndRebuildsSourcesExactly) {
  auto path = temp_db("v3");
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  std::string sql = R"SQL(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE sources(hash TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE candidates(
  id INTEGER PRIMARY KEY, operator TEXT NOT NULL, template TEXT, params TEXT,
  source_hash TEXT NOT NULL REFERENCES sources(hash), arch TEXT NOT NULL, origin TEXT,
  parent INTEGER REFERENCES candidates(id), run_id INTEGER, created TEXT NOT NULL,
  exchange_id INTEGER, plan TEXT, UNIQUE(operator, source_hash, arch));
INSERT INTO meta VALUES('schema_version', '3');
INSERT INTO sources VALUES('llm', 'extern "C" __global__ void k() {}');
)SQL";
  ASSERT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  for (int t : {1, 2, 3}) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(h, "INSERT INTO sources VALUES(?, ?)", -1, &s, nullptr);
    std::string hash = "r" + std::to_string(t), text = rendered(t);
    sqlite3_bind_text(s, 1, hash.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, text.c_str(), -1, SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
  }
  sqlite3_close(h);

  Store st(path);
  EXPECT_EQ(st.schema_version(), 4);
  for (int t : {1, 2, 3}) EXPECT_EQ(st.source("r" + std::to_string(t)).value(), rendered(t));
  EXPECT_EQ(st.source("llm").value(), R"(extern "C" __global__ void k() {})");
  EXPECT_EQ(count(st, "SELECT count(*) FROM template_texts"), 1);
  EXPECT_EQ(count(st, "SELECT count(*) FROM sources WHERE template_hash IS NULL"), 1);
  EXPECT_EQ(count(st, "SELECT max(length(text)) FROM sources WHERE template_hash IS NOT NULL"),
            static_cast<long long>(rendered(3).size() - kTemplateText.size()));

  // A new rendered candidate shares the template text; the round trip is exact.
  st.add_candidate(cand("r4"), rendered(4));
  EXPECT_EQ(st.source("r4").value(), rendered(4));
  EXPECT_EQ(count(st, "SELECT count(*) FROM template_texts"), 1);
  EXPECT_EQ(count(st, "SELECT count(*) FROM sources WHERE template_hash IS NOT NULL"), 4);
}

TEST(Store, MergingTwoVersionFourDatabasesKeepsTheirSources) {
  auto a_path = temp_db("v4a"), b_path = temp_db("v4b");
  {
    Store b(b_path);
    b.add_candidate(cand("r2"), rendered(2));
    b.add_candidate(cand("llm"), "plain program");
  }
  Store a(a_path);
  a.add_candidate(cand("r1"), rendered(1));
  merge_shard(a, b_path);
  EXPECT_EQ(a.source("r1").value(), rendered(1));
  EXPECT_EQ(a.source("r2").value(), rendered(2));
  EXPECT_EQ(a.source("llm").value(), "plain program");
  EXPECT_EQ(count(a, "SELECT count(*) FROM template_texts"), 1);
}

// A database of a newer schema than this tessera's (as a newer tessera would leave it):
// refused by name, version and this tessera's version, and left exactly as it was.
namespace {
std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
// A database made by this tessera, then raised to `version` (and, as a newer schema
// might, without the devices table) by raw SQL; closed, so its file is all of it.
std::string newer_database(const std::string& tag, const std::string& version) {
  auto path = temp_db(tag);
  {
    Store st(path);
    st.add_candidate(cand("r1"), rendered(1));
  }
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  std::string sql = "PRAGMA journal_mode=DELETE; DROP TABLE devices; UPDATE meta SET value='" + version +
                    "' WHERE key='schema_version'";
  EXPECT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  sqlite3_close(h);
  return path;
}
}  // namespace

TEST(Store, RefusesADatabaseOfANewerSchemaAndLeavesItAsItWas) {
  const int newer = kSchemaVersion + 1;
  auto path = newer_database("newer", std::to_string(newer));
  const std::string before = bytes_of(path);
  try {
    Store st(path);
    FAIL() << "opened a schema v" << newer << " database";
  } catch (const NewerSchema& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << "names the file: " << m;
    EXPECT_NE(m.find("schema version " + std::to_string(newer)), std::string::npos) << "its version: " << m;
    EXPECT_NE(m.find("this tessera's (" + std::to_string(kSchemaVersion) + ")"), std::string::npos)
        << "this binary's: " << m;
  }
  EXPECT_EQ(bytes_of(path), before) << "nothing written: no migration, no table re-created, no WAL switch";
  EXPECT_FALSE(fs::exists(path + "-wal"));
  // The current version itself still opens (the rule is "newer than", not "other than").
  auto current = newer_database("current", std::to_string(kSchemaVersion));
  Store st(current);
  EXPECT_EQ(st.schema_version(), kSchemaVersion);
  EXPECT_EQ(st.source("r1").value(), rendered(1));
}

TEST(Store, RefusesASchemaVersionThatIsNotANumber) {
  auto path = newer_database("nan", "4b");
  try {
    Store st(path);
    FAIL() << "opened a database whose version reads '4b'";
  } catch (const NewerSchema& e) {
    EXPECT_NE(std::string(e.what()).find("schema version '4b' is not a number"), std::string::npos) << e.what();
  }
}

TEST(Store, MergeRefusesAShardOfANewerSchema) {
  const int newer = kSchemaVersion + 1;
  auto shard = newer_database("newer-shard", std::to_string(newer));
  const std::string before = bytes_of(shard);
  Store out(temp_db("merge-out"));
  try {
    merge_shard(out, shard);
    FAIL() << "merged a schema v" << newer << " shard";
  } catch (const NewerSchema& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(shard), std::string::npos) << m;
    EXPECT_NE(m.find("schema version " + std::to_string(newer)), std::string::npos) << m;
  }
  EXPECT_EQ(bytes_of(shard), before) << "the shard is not tagged with run identities";
  EXPECT_EQ(count(out, "SELECT count(*) FROM candidates"), 0);
  EXPECT_EQ(count(out, "SELECT count(*) FROM pragma_database_list WHERE name='shard'"), 0) << "detached";
}
