// tests/llm/replay_lineage_test.cpp — `tessera optimize rmsnorm --proposer llm
// --gpus none` recorded against a scripted model, then replayed into databases that
// already hold candidates (as runs/tessera.db does on a GPU machine): the answers'
// "#id" parent references are the recording's ids, and the replay must map them to
// its own candidates (through the outcomes kept in the record file and the
// database), not take them at face value.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "answers.h"
#include "fake_server.h"
#include "tests/support/shell.h"
#include "tests/support/sql_rows.h"

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::llm::testing::FakeLlmServer;
using tessera::llm::testing::openai_answer;
using tessera::llm::testing::rows_kernel_source;

namespace {

using Result = tessera::testing::ShellResult;

Result run(const std::string& args) {
  return tessera::testing::shell(std::string(TESSERA_BINARY) + " " + args);
}

using tessera::testing::Rows;
Rows query(const fs::path& db, const std::string& sql) {
  return tessera::testing::sql_rows(db, sql);
}

// LLM candidates by name -> {id, parent's name}.
std::map<std::string, std::pair<std::string, std::string>> llm_parents(const fs::path& db) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (auto& r : query(db,
                       "SELECT c.template, c.id, IFNULL(p.template, '-') FROM candidates c "
                       "LEFT JOIN candidates p ON p.id = c.parent WHERE c.origin = 'llm'"))
    out[r[0]] = {r[1], r[2]};
  return out;
}

std::string proposal(const std::string& prose, const std::string& name, const std::string& kernel,
                     const std::string& block) {
  return prose + "\n\n```cuda\n" + rows_kernel_source(kernel) + "```\n\n```json\n{\"name\": \"" + name +
         "\", \"launch\": [{\"kernel\": \"" + kernel + "\", \"grid\": [\"M\"], \"block\": [\"" + block +
         "\"], \"args\": [\"x\", \"w\", \"y\", \"M\", \"N\", \"eps\"]}]}\n```\n\n";
}

}  // namespace

TEST(ReplayLineage, ParentIdsAreTheRecordingsAndAreMappedInAFullerDatabase) {
  for (const char* v : {"TESSERA_LLM_PROVIDER", "TESSERA_LLM_BASE_URL", "TESSERA_LLM_MODEL", "TESSERA_LLM_KEY_ENV",
                        "TESSERA_LLM_KEY", "TESSERA_LLM_MAX_CALLS", "OPENAI_API_KEY", "TESSERA_DB"})
    unsetenv(v);
  setenv("TESSERA_LLM_MAX_RETRIES", "0", 1);
  fs::path dir = fs::temp_directory_path() / ("tessera-replay-lineage-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path first = dir / "first.db", rec = dir / "rec.json";
  {
    // Turn 2 names #1 (rows-a); without a name the parent would be the newest
    // compiled candidate shown (rows-a128).
    FakeLlmServer server;
    server.script({{200, openai_answer(proposal("Rows.", "rows-a", "rms_a", "256") +
                                       proposal("Smaller blocks.", "rows-a128", "rms_a", "128"))},
                   {200, openai_answer(proposal("This refines #1 (rows-a).", "refined-b", "rms_b", "256"))}});
    auto r =
        run(fmt::format("optimize rmsnorm --proposer llm --gpus none --budget 10 --db {} --llm-base-url {} "
                        "--llm-model fake-gpt --llm-max-calls 2 --llm-record {}",
                        first.string(), server.base_url(), rec.string()));
    ASSERT_EQ(r.code, 0) << r.out;
  }
  auto recorded = llm_parents(first);
  ASSERT_EQ(recorded.size(), 3u);
  ASSERT_EQ(recorded["rows-a"].first, "1") << "the recording starts from an empty database";
  EXPECT_EQ(recorded["refined-b"].second, "rows-a");

  // The record file keeps what became of each answer, with the recording's ids.
  std::ifstream in(rec);
  std::stringstream text;
  text << in.rdbuf();
  json file = json::parse(text.str());
  ASSERT_EQ(file.at("exchanges").size(), 2u);
  EXPECT_EQ(file["exchanges"][0]["outcome"]["proposals"][0]["candidates"], json::array({1}));

  // Databases that already hold candidates: the replay's ids differ from the recording's.
  for (const std::string& source : {rec.string(), first.string()}) {
    fs::path db = dir / (source == rec.string() ? "from-file.db" : "from-db.db");
    auto pre = run(fmt::format("optimize rmsnorm --gpus none --budget 4 --db {}", db.string()));
    ASSERT_EQ(pre.code, 0) << pre.out;
    auto r = run(fmt::format("optimize rmsnorm --proposer llm --gpus none --budget 10 --db {} --llm-replay {}",
                             db.string(), source));
    ASSERT_EQ(r.code, 0) << r.out;
    auto replayed = llm_parents(db);
    ASSERT_EQ(replayed.size(), 3u) << r.out;
    EXPECT_NE(replayed["rows-a"].first, "1") << "the search's candidates came first";
    EXPECT_EQ(replayed["rows-a"].second, "rows") << "turn 1 starts from the best search candidate shown";
    EXPECT_EQ(replayed["refined-b"].second, "rows-a") << "#1 of the recording is rows-a here too (" << source << ")";
  }
  fs::remove_all(dir);
}
