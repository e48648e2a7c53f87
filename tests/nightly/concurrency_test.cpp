// tests/nightly/concurrency_test.cpp — two tessera processes writing one
// database at the same time (WAL, busy timeout, short transactions): no
// corruption, no lost writes, both runs complete with all their candidates.
#include <gtest/gtest.h>

#include <thread>

#include "helpers.h"

using namespace nightly_test;
using namespace tessera;

TEST(Concurrency, TwoOptimizeProcessesShareOneDatabase) {
  TempDir dir;
  std::string db = dir / "shared.db";
  // Started together by one shell so that they overlap; different seeds.
  auto r =
      sh("cd " + dir.path().string() + " && { (" + TESSERA_BINARY +
         " optimize rmsnorm --gpus none --budget 40 --seed 11 -q --db " + db + " > a.log 2>&1; echo $? > a.rc) & (" +
         TESSERA_BINARY + " optimize rmsnorm --gpus none --budget 40 --seed 22 -q --db " + db +
         " > b.log 2>&1; echo $? > b.rc) & wait; }");
  ASSERT_EQ(r.code, 0) << r.out;
  for (auto* f : {"a", "b"}) {
    std::string rc, log;
    std::getline(std::ifstream(dir / (std::string(f) + ".rc")), rc);
    std::getline(std::ifstream(dir / (std::string(f) + ".log")), log, '\0');
    EXPECT_EQ(rc, "0") << f << ": " << log;
  }
  store::Store st(db);
  sqlite3_stmt* s;
  sqlite3_prepare_v2(st.raw(), "PRAGMA integrity_check", -1, &s, nullptr);
  sqlite3_step(s);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "ok");
  sqlite3_finalize(s);
  EXPECT_EQ(scalar(st, "SELECT count(*) FROM runs WHERE status='finished'"), 2);
  // Each run recorded a verdict for every candidate it proposed (shared kernels once per run).
  EXPECT_EQ(scalar(st, "SELECT count(DISTINCT run_id) FROM evaluations"), 2);
  for (long long run : {1, 2})
    EXPECT_EQ(scalar(st, "SELECT count(*) FROM evaluations WHERE run_id=" + std::to_string(run)), 40) << "run " << run;
  EXPECT_EQ(scalar(st, "SELECT count(*) FROM evaluations WHERE candidate_id NOT IN (SELECT id FROM candidates)"), 0);
  EXPECT_EQ(scalar(st, "SELECT count(*) FROM candidates WHERE source_hash NOT IN (SELECT hash FROM sources)"), 0);
  EXPECT_EQ(scalar(st,
                   "SELECT count(*) FROM (SELECT operator, source_hash, arch FROM candidates GROUP BY 1,2,3 HAVING "
                   "count(*) > 1)"),
            0);
  EXPECT_GE(scalar(st, "SELECT count(*) FROM candidates"), 40);
}
