// tests/agent/store_migration_test.cpp — schema v2 (LLM exchanges): a database
// written by schema v1 opens, is migrated in place (table exchanges, columns
// candidates.exchange_id and candidates.plan) and keeps its rows; exchanges and
// the candidate links round-trip.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "store/store.h"

namespace fs = std::filesystem;
using tessera::store::CandidateInfo;
using tessera::store::ExchangeRecord;
using tessera::store::Store;

namespace {

// The v1 schema as released (store/store.cpp before schema v2), with one candidate.
const char* kV1 = R"SQL(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY, operator TEXT NOT NULL, started TEXT NOT NULL, finished TEXT,
  strategy TEXT, proposer TEXT, arch TEXT, device TEXT, host TEXT, budget INTEGER,
  settings TEXT, status TEXT, gpu_busy_fraction REAL);
CREATE TABLE sources(hash TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE candidates(
  id INTEGER PRIMARY KEY, operator TEXT NOT NULL, template TEXT, params TEXT,
  source_hash TEXT NOT NULL REFERENCES sources(hash), arch TEXT NOT NULL, origin TEXT,
  parent INTEGER REFERENCES candidates(id), run_id INTEGER, created TEXT NOT NULL,
  UNIQUE(operator, source_hash, arch));
INSERT INTO meta VALUES('schema_version', '1');
INSERT INTO runs(id, operator, started) VALUES(1, 'rmsnorm', '2026-01-01T00:00:00Z');
INSERT INTO sources VALUES('h1', 'old source');
INSERT INTO candidates(operator, template, params, source_hash, arch, origin, run_id, created)
  VALUES('rmsnorm', 'rows', '{"THREADS":256}', 'h1', 'sm_90a', 'search:genetic', 1, '2026-01-01T00:00:00Z');
)SQL";

fs::path temp_db(const char* name) {
  auto p = fs::temp_directory_path() / ("tessera-migration-" + std::to_string(getpid()) + "-" + name + ".db");
  fs::remove(p);
  return p;
}

}  // namespace

TEST(StoreMigration, AVersionOneDatabaseMovesToTheLatestVersionAndKeepsItsRows) {
  auto path = temp_db("v1");
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, kV1, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);

  {
    Store st(path.string());
    EXPECT_EQ(st.schema_version(), 4);
    auto old = st.candidate(1);
    ASSERT_TRUE(old);
    EXPECT_EQ(old->template_name, "rows");
    EXPECT_FALSE(old->exchange_id);
    EXPECT_EQ(old->plan_json, "");

    ExchangeRecord x;
    x.run_id = 1;
    x.turn = 2;
    x.provider = "openai";
    x.model = "m";
    x.request_json = R"({"system":"s","messages":[{"role":"user","content":"u"}]})";
    x.response = "answer";
    x.prompt_tokens = 10;
    long long xid = st.add_exchange(x);
    st.set_exchange_outcome(xid, R"({"proposals":[]})");

    CandidateInfo c;
    c.op = "rmsnorm";
    c.template_name = "llm-kernel";
    c.params_json = "{}";
    c.source_hash = "h2";
    c.arch = "sm_90a";
    c.origin = "llm";
    c.parent = 1;
    c.exchange_id = xid;
    c.plan_json = R"({"launch":[]})";
    long long id = st.add_candidate(c, "new source");
    auto back = st.candidate(id);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->exchange_id.value_or(0), xid);
    EXPECT_EQ(back->plan_json, R"({"launch":[]})");
    EXPECT_EQ(back->parent.value_or(0), 1);
    auto rx = st.exchange(xid);
    ASSERT_TRUE(rx);
    EXPECT_EQ(rx->turn, 2);
    EXPECT_EQ(rx->outcome_json, R"({"proposals":[]})");
    EXPECT_EQ(st.exchanges(1).size(), 1u);
    EXPECT_EQ(st.latest_run_with_exchanges().value_or(0), 1);
  }
  // Opening again is a no-op (the migration ran once).
  Store again(path.string());
  EXPECT_EQ(again.schema_version(), 4);
  EXPECT_EQ(again.exchanges(1).size(), 1u);
}
