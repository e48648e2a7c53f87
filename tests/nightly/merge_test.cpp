// tests/nightly/merge_test.cpp — `tessera merge`: shards from several nodes
// become one history; candidates deduplicated by content, every evaluation kept
// with its host and GPU, references remapped; merging again changes nothing;
// shards that grew, or started as a copy of the merged history, add only what
// is new; bad inputs are refused with a clear message.
#include "store/merge.h"

#include <gtest/gtest.h>

#include "helpers.h"

using namespace nightly_test;
using namespace tessera;

namespace {
// A shard as one node leaves it: a run, candidates (some shared with other
// nodes: same source), timed evaluations on this node's GPU.
void fill_shard(const std::string& path, const std::string& host, const std::vector<std::string>& sources) {
  store::Store db(path);
  long long run = add_run(db, "rmsnorm", "NVIDIA H200", 0.9, "2026-11-29T01:00:00Z");
  sql(db, "UPDATE runs SET host='" + host + "' WHERE id=" + std::to_string(run));
  long long prev = 0;
  for (auto& s : sources) {
    store::CandidateInfo c;
    c.op = "rmsnorm";
    c.template_name = "rows";
    c.params_json = "{}";
    c.source_hash = "hash-" + s;
    c.arch = "sm_90a";
    c.run_id = run;
    if (prev) c.parent = prev;
    long long id = db.add_candidate(c, "source " + s);
    db.add_compile(id, {true, 0.5, "", 32, 0, 0, "key-" + s});
    auto e = timed(id, run, "ok", {{"x", 1.0 + static_cast<double>(s.size()) * 0.01, 1.1, 50, 2, 0.5}});
    e.host = host;
    db.add_evaluation(e);
    prev = id;
  }
  // The compile rows of one kernel on two nodes are identical only if stamped in
  // the same second; fix the stamp so the test does not depend on how fast the
  // shards are filled (under ASan the two shards straddled a second).
  sql(db, "UPDATE compiles SET created='2026-11-29T01:00:00Z'");
}
}  // namespace

TEST(Merge, ShardsBecomeOneHistoryAndMergingAgainChangesNothing) {
  TempDir dir;
  fill_shard(dir / "shard_0.db", "node-0", {"a", "b", "c"});
  fill_shard(dir / "shard_1.db", "node-1", {"b", "c", "d"});  // b and c: same kernels found on both nodes
  auto r = run_tessera("merge " + (dir / "all.db") + " " + (dir / "shard_0.db") + " " + (dir / "shard_1.db"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("merged 2 of 2 shard(s)"), std::string::npos) << r.out;
  {
    store::Store db(dir / "all.db");
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM candidates"), 4) << "a b c d, deduplicated by content hash";
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM sources"), 4);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs"), 2);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM evaluations"), 6) << "every evaluation kept";
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM shape_results"), 6);
    // Compile rows carry no run: two identical in every column (same candidate, log,
    // registers, cache key, second) are one row.
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM compiles"), 4);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM evaluations WHERE host='node-1' AND device='NVIDIA H200'"), 3);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM evaluations e JOIN runs r ON r.id=e.run_id WHERE r.host=e.host"), 6)
        << "each evaluation points at its own node's run";
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM candidates c JOIN sources s ON s.hash=c.source_hash"), 4);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM candidates WHERE parent IS NOT NULL"), 3) << "b<-a, c<-b, d<-c";
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM candidates c JOIN candidates p ON p.id=c.parent"), 3);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM shape_results WHERE evaluation_id NOT IN (SELECT id FROM evaluations)"),
              0);
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db.raw(), "PRAGMA integrity_check", -1, &st, nullptr);
    sqlite3_step(st);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
    sqlite3_finalize(st);
  }
  // Again, in another order: nothing new.
  auto again = run_tessera("merge " + (dir / "all.db") + " " + (dir / "shard_1.db") + " " + (dir / "shard_0.db"));
  ASSERT_EQ(again.code, 0) << again.out;
  store::Store db(dir / "all.db");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM candidates"), 4);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs"), 2);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM evaluations"), 6);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM compiles"), 4);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM shape_results"), 6);
}

TEST(Merge, GrownShardsAndCopiesOfTheMergedHistoryAddOnlyWhatIsNew) {
  TempDir dir;
  fill_shard(dir / "s0.db", "node-0", {"a", "b"});
  store::Store out(dir / "all.db");
  auto st = store::merge_shard(out, dir / "s0.db");
  EXPECT_EQ(st.tables["runs"].added, 1);
  // The node runs again the next night into the same shard.
  {
    store::Store s0(dir / "s0.db");
    long long run = add_run(s0, "rmsnorm", "NVIDIA H200", 0.8, "2026-11-30T01:00:00Z");
    s0.add_evaluation(timed(1, run, "ok", {{"x", 0.9, 0.95, 50, 2, 0.5}}));
  }
  st = store::merge_shard(out, dir / "s0.db");
  EXPECT_EQ(st.tables["runs"].added, 1);
  EXPECT_EQ(st.tables["runs"].present, 1);
  EXPECT_EQ(st.tables["evaluations"].added, 1);
  EXPECT_EQ(st.tables["evaluations"].present, 2);
  // Two nodes start from a copy of the merged history and each adds a run.
  // n1: a file copy (checkpointed first: a WAL database is more than its main file);
  // n2: seeded the way runs/slurm does it, by merging the history into an empty shard.
  sql(out, "PRAGMA wal_checkpoint(TRUNCATE)");
  fs::copy_file(dir / "all.db", dir / "n1.db");
  {
    store::Store n2(dir / "n2.db");
    store::merge_shard(n2, dir / "all.db");
  }
  for (auto* n : {"n1.db", "n2.db"}) {
    store::Store s(dir / n);
    long long run = add_run(s, "rmsnorm", "NVIDIA H200", 0.7, "2026-12-01T01:00:00Z");
    s.add_evaluation(timed(2, run, "ok", {{"x", 0.8, 0.85, 50, 2, 0.5}}));
  }
  long long runs_before = scalar(out, "SELECT count(*) FROM runs");
  store::merge_shard(out, dir / "n1.db");
  store::merge_shard(out, dir / "n2.db");
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM runs"), runs_before + 2)
      << "the copied runs are recognised, the new ones kept";
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM evaluations"), 3 + 2);
  EXPECT_EQ(scalar(out, "SELECT count(*) FROM candidates"), 2);
}

TEST(Merge, RefusesMissingForeignAndSelfInputs) {
  TempDir dir;
  fill_shard(dir / "ok.db", "node-0", {"a"});
  std::ofstream(dir / "junk.db") << std::string(4096, 'z');
  auto r = run_tessera("merge " + (dir / "all.db") + " " + (dir / "junk.db") + " " + (dir / "nope.db") + " " +
                       (dir / "ok.db") + " " + (dir / "all.db"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("junk.db: cannot open it as a tessera database"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nope.db: no such database"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all.db: is the output database itself"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("merged 1 of 4 shard(s)"), std::string::npos) << r.out;
  store::Store db(dir / "all.db");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM evaluations"), 1) << "the good shard was merged";
  EXPECT_EQ(run_tessera("merge " + (dir / "all.db")).code, 2) << "no shard given";
}
