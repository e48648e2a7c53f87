// tests/agent/llm_loop_test.cpp — `tessera optimize rmsnorm --proposer llm
// --gpus none` end to end against a scripted model on 127.0.0.1: what the agent
// records for good kernels (compiled, origin llm, parents), a compile error (and
// the shortened error in the next prompt), a static-check failure, garbage and
// empty answers, 429 with Retry-After, 500, a truncated body and a slow answer;
// that the API key never reaches the database, the record file or the output;
// that a recorded run replays without network to the same candidates; that a
// missing model or key is a usage error; and what `tessera show` says.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "search/strategy.h"
#include "tests/llm/answers.h"
#include "tests/llm/fake_server.h"
#include "tests/support/shell.h"
#include "tests/support/sql_rows.h"

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::llm::testing::anthropic_answer;
using tessera::llm::testing::FakeLlmServer;
using tessera::llm::testing::openai_answer;
using tessera::llm::testing::rows_kernel_source;
using tessera::llm::testing::Scripted;

namespace {

const std::string kKey = "sk-tessera-agent-test-7d1e5c9a3b";

using Result = tessera::testing::ShellResult;

Result run(const std::string& args) {
  return tessera::testing::shell(std::string(TESSERA_BINARY) + " " + args);
}

// A fresh folder per test; the database and the proposals/ folder go there.
fs::path temp_dir() {
  auto p = fs::temp_directory_path() / ("tessera-agent-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// The child inherits this process's environment: only what a test sets.
void clean_env() {
  for (const char* v : {"TESSERA_LLM_PROVIDER", "TESSERA_LLM_BASE_URL", "TESSERA_LLM_MODEL", "TESSERA_LLM_KEY_ENV",
                        "TESSERA_LLM_KEY", "TESSERA_LLM_MAX_CALLS", "TESSERA_LLM_MAX_TOKENS", "TESSERA_LLM_TIMEOUT",
                        "TESSERA_LLM_MAX_RETRIES", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "TESSERA_DB"})
    unsetenv(v);
  setenv("TESSERA_AGENT_TEST_KEY", kKey.c_str(), 1);
}

using tessera::testing::Rows;
Rows query(const fs::path& db, const std::string& sql) {
  return tessera::testing::sql_rows(db, sql);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every file under `dir` (database, WAL, record file, proposals) and the output.
void expect_no_key(const fs::path& dir, const std::string& output) {
  EXPECT_EQ(output.find(kKey), std::string::npos) << "the key is in the output";
  EXPECT_EQ(output.find(kKey.substr(8, 12)), std::string::npos) << "a piece of the key is in the output";
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string bytes = slurp(e.path());
    EXPECT_EQ(bytes.find(kKey), std::string::npos) << "the key is in " << e.path();
    EXPECT_EQ(bytes.find(kKey.substr(8, 12)), std::string::npos) << "a piece of the key is in " << e.path();
  }
}

const char* kArgs = R"(["x", "w", "y", "M", "N", "eps"])";

// One proposal: prose, the source, its plan.
std::string proposal(const std::string& prose, const std::string& name, const std::string& source,
                     const std::string& kernel, const std::string& block, const std::string& args = kArgs,
                     const std::string& grid = "M") {
  return prose + "\n\n```cuda\n" + source + "```\n\n```json\n{\"name\": \"" + name +
         "\", \"launch\": [{\"kernel\": \"" + kernel + "\", \"grid\": [\"" + grid + "\"], \"block\": [\"" + block +
         "\"], \"smem\": \"0\", \"args\": " + args + "}]}\n```\n\n";
}

const std::string kBroken = R"(extern "C" __global__ void broken(float* y, long long N) {
  long long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) y[i] = undeclared_thing * 2.0f;
}
)";

const std::string kChatty = R"(#include <cuda_bf16.h>
#include <stdio.h>
extern "C" __global__ void chatty(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                                  long long M, long long N, float eps) {
  printf("hello from the GPU\n");
}
)";

std::string turn1_answer() {
  return proposal("One block per row with a warp-shuffle reduction.", "rows-a", rows_kernel_source("rms_a"), "rms_a",
                  "256") +
         proposal("The same with 128 threads.", "rows-a128", rows_kernel_source("rms_a"), "rms_a", "128") +
         proposal("A vector kernel.", "broken", kBroken, "broken", "256", R"(["y", "N"])", "cdiv(N, 256)") +
         proposal("Print for debugging.", "chatty", kChatty, "chatty", "32");
}

std::string turn4_answer() {
  return proposal("This refines #1: the same reduction, renamed kernel.", "refined-b", rows_kernel_source("rms_b"),
                  "rms_b", "256") +
         proposal("A different idea with 512 threads.", "fresh-c", rows_kernel_source("rms_c"), "rms_c", "512");
}

std::string last_user_message(const std::string& body) {
  json j = json::parse(body);
  return j.at("messages").back().at("content").get<std::string>();
}

std::map<std::string, std::vector<std::string>> candidates_by_name(const fs::path& db) {
  std::map<std::string, std::vector<std::string>> out;  // name -> id, origin, parent name, status, exchange turn
  for (auto& r : query(db,
                       "SELECT c.template, c.id, c.origin, IFNULL(p.template, '-'), "
                       "(SELECT status FROM evaluations WHERE candidate_id=c.id ORDER BY id DESC LIMIT 1), "
                       "IFNULL((SELECT turn FROM exchanges WHERE id=c.exchange_id), -1), c.source_hash "
                       "FROM candidates c LEFT JOIN candidates p ON p.id = c.parent ORDER BY c.id"))
    out[r[0]] = {r[1], r[2], r[3], r[4], r[5], r[6]};
  return out;
}

}  // namespace

TEST(LlmLoop, RecordsKernelsFailuresLineageAndEveryExchange) {
  clean_env();
  setenv("TESSERA_LLM_MAX_RETRIES", "1", 1);
  FakeLlmServer server;
  server.script({
      {429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "1"}}},
      {200, openai_answer(turn1_answer(), 5000, 900)},
      {200, openai_answer(tessera::llm::testing::kGarbageAnswer)},
      {500, R"({"error":{"message":"internal"}})"},
      {500, R"({"error":{"message":"internal again"}})"},
      {200, openai_answer(turn4_answer(), 7000, 800)},
      {200, openai_answer("")},
  });
  fs::path dir = temp_dir();
  fs::path db = dir / "t.db", rec = dir / "exchanges.json";
  auto r =
      run(fmt::format("optimize rmsnorm --proposer llm --gpus none --budget 10 --db {} --llm-base-url {}/v1 "
                      "--llm-model fake-gpt --llm-key-env TESSERA_AGENT_TEST_KEY --llm-max-calls 5 "
                      "--llm-record {}",
                      db.string(), server.base_url(), rec.string()));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("5 model calls"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cap"), std::string::npos) << "the run says why it stopped:\n" << r.out;

  // What the server saw: 7 requests (the 429 and the first 500 were retried), the key in the header.
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_EQ(seen[0].header("Authorization"), "Bearer " + kKey);
  // Turn 2's prompt carries the compile error (shortened) and the static-check violation.
  std::string t2 = last_user_message(seen[2].body);
  EXPECT_NE(t2.find("undeclared_thing"), std::string::npos) << t2;
  EXPECT_NE(t2.find("failed at compile"), std::string::npos) << t2;
  EXPECT_NE(t2.find("failed at static_check"), std::string::npos) << t2;
  EXPECT_NE(t2.find("stdio.h"), std::string::npos) << t2;
  EXPECT_NE(t2.find("Candidate #2"), std::string::npos) << "the compiled candidates are shown:\n" << t2;
  // After the garbage, the model is told its answer could not be used (and the retry after the 500s too).
  EXPECT_NE(last_user_message(seen[3].body).find("could not use your last answer"), std::string::npos);
  EXPECT_EQ(seen[5].body, seen[3].body) << "a failed call is asked again";

  // Candidates: statuses, origin, parents, exchanges.
  auto c = candidates_by_name(db);
  ASSERT_EQ(c.size(), 6u);
  for (auto& [name, row] : c) EXPECT_EQ(row[1], "llm") << name;
  EXPECT_EQ(c["rows-a"][3], "compiled");
  EXPECT_EQ(c["rows-a128"][3], "compiled");
  EXPECT_EQ(c["broken"][3], "compile_error");
  EXPECT_EQ(c["chatty"][3], "rejected_static");
  EXPECT_EQ(c["refined-b"][3], "compiled");
  EXPECT_EQ(c["fresh-c"][3], "compiled");
  EXPECT_NE(c["rows-a"][5], c["rows-a128"][5]) << "one source, two plans: two candidates";
  EXPECT_EQ(c["rows-a"][2], "-") << "nothing to refine on turn 1";
  EXPECT_EQ(c["refined-b"][2], "rows-a") << "the parent the model named (#1)";
  EXPECT_EQ(c["fresh-c"][2], "rows-a128") << "no parent named: the best shown (newest compiled)";
  EXPECT_EQ(c["rows-a"][4], "1");
  EXPECT_EQ(c["refined-b"][4], "4");
  auto msg = query(db,
                   "SELECT e.message FROM evaluations e JOIN candidates c ON c.id=e.candidate_id "
                   "WHERE c.template='chatty'");
  ASSERT_EQ(msg.size(), 1u);
  EXPECT_NE(msg[0][0].find("[include]"), std::string::npos) << msg[0][0];

  // Every exchange, failed or not: 5 calls; the 500 recorded as an http error, the garbage kept.
  auto x = query(db,
                 "SELECT turn, provider, model, error_kind, response, prompt_tokens, attempts, outcome, request "
                 "FROM exchanges ORDER BY id");
  ASSERT_EQ(x.size(), 5u);
  EXPECT_EQ(x[0][0], "1");
  EXPECT_EQ(x[0][1], "openai");
  EXPECT_EQ(x[0][2], "fake-gpt");
  EXPECT_EQ(x[0][5], "5000");
  EXPECT_EQ(x[0][6], "2") << "429 then 200";
  EXPECT_NE(x[1][4].find("tensor cores"), std::string::npos);
  EXPECT_NE(x[1][7].find("parse_errors"), std::string::npos);
  EXPECT_EQ(x[2][3], "http");
  EXPECT_EQ(x[3][0], "4");
  EXPECT_EQ(x[4][4], "");
  EXPECT_NE(x[4][7].find("empty"), std::string::npos) << x[4][7];
  EXPECT_NE(x[0][8].find("rmsnorm"), std::string::npos) << "the prompt is stored";
  EXPECT_EQ(query(db, "SELECT value FROM meta WHERE key='schema_version'")[0][0], "4");
  EXPECT_EQ(query(db, "SELECT proposer FROM runs")[0][0], "llm");

  // The record file is replayable JSON with the same 5 exchanges.
  json recorded = json::parse(slurp(rec));
  EXPECT_EQ(recorded.at("exchanges").size(), 5u);

  // show: lineage and the exchange.
  std::string id_b = c["refined-b"][0], id_a = c["rows-a"][0];
  auto shown = run(fmt::format("show {} --db {} --json", id_b, db.string()));
  ASSERT_EQ(shown.code, 0) << shown.out;
  json sj = json::parse(shown.out);
  ASSERT_EQ(sj.at("lineage").size(), 1u);
  EXPECT_EQ(sj["lineage"][0]["template"], "rows-a");
  EXPECT_EQ(sj["exchange"]["turn"], 4);
  EXPECT_EQ(sj["exchange"]["model"], "fake-gpt");
  EXPECT_NE(sj["exchange"]["response"].get<std::string>().find("refines #1"), std::string::npos);
  EXPECT_EQ(sj["plan"]["launch"][0]["kernel"], "rms_b");
  auto text = run(fmt::format("show {} --db {}", id_b, db.string()));
  EXPECT_NE(text.out.find(fmt::format("lineage: #{} <- #{} (rows-a, llm, compiled)", id_b, id_a)), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("proposed by exchange"), std::string::npos) << text.out;

  expect_no_key(dir, r.out + shown.out + text.out);
}

TEST(LlmLoop, ARecordedRunReplaysToTheSameCandidatesWithoutNetwork) {
  clean_env();
  setenv("TESSERA_LLM_MAX_RETRIES", "0", 1);
  fs::path dir = temp_dir();
  {
    FakeLlmServer server;
    server.script({{200, openai_answer(proposal("Rows.", "rows-a", rows_kernel_source("rms_a"), "rms_a", "256") +
                                       proposal("Broken.", "broken", kBroken, "broken", "256", R"(["y", "N"])"))},
                   {500, R"({"error":{"message":"internal"}})"},
                   {200, openai_answer(turn4_answer())}});
    auto r =
        run(fmt::format("optimize rmsnorm --proposer llm --gpus none --budget 10 --db {} --llm-base-url {} "
                        "--llm-model fake-gpt --llm-key-env TESSERA_AGENT_TEST_KEY --llm-max-calls 3 "
                        "--llm-record {}",
                        (dir / "first.db").string(), server.base_url(), (dir / "rec.json").string()));
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(server.request_count(), 3u);
  }
  unsetenv("TESSERA_AGENT_TEST_KEY");  // a replay needs no key, no model, no server
  auto from_file = run(fmt::format("optimize rmsnorm --proposer llm --gpus none --budget 10 --db {} --llm-replay {}",
                                   (dir / "second.db").string(), (dir / "rec.json").string()));
  ASSERT_EQ(from_file.code, 0) << from_file.out;
  EXPECT_NE(from_file.out.find("replay"), std::string::npos) << from_file.out;
  auto from_db = run(fmt::format("optimize rmsnorm --proposer llm --gpus none --budget 10 --db {} --llm-replay {}",
                                 (dir / "third.db").string(), (dir / "first.db").string()));
  ASSERT_EQ(from_db.code, 0) << from_db.out;
  auto first = candidates_by_name(dir / "first.db");
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first["refined-b"][2], "rows-a");
  EXPECT_EQ(first["broken"][3], "compile_error");
  EXPECT_EQ(candidates_by_name(dir / "second.db"), first);
  EXPECT_EQ(candidates_by_name(dir / "third.db"), first);
  auto x = query(dir / "second.db", "SELECT error_kind, response FROM exchanges ORDER BY id");
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(x[1][0], "http") << "a recorded failure replays as the same failure";
}

TEST(LlmLoop, AnthropicTruncatedAndSlowAnswersAreRecordedAndTheRunGoesOn) {
  clean_env();
  setenv("TESSERA_LLM_MAX_RETRIES", "0", 1);
  setenv("TESSERA_LLM_TIMEOUT", "1", 1);
  FakeLlmServer server;
  std::string good = proposal("Rows.", "rows-a", rows_kernel_source("rms_a"), "rms_a", "256");
  Scripted truncated{200, anthropic_answer(good)};
  truncated.truncate = true;
  Scripted slow{200, anthropic_answer(good)};
  slow.delay_s = 3;
  server.script({truncated, slow, {200, anthropic_answer(good, 300, 200)}});
  fs::path dir = temp_dir();
  auto r =
      run(fmt::format("optimize rmsnorm --proposer llm --gpus none --budget 1 --db {} --llm-provider anthropic "
                      "--llm-base-url {} --llm-model fake-claude --llm-key-env TESSERA_AGENT_TEST_KEY",
                      (dir / "t.db").string(), server.base_url()));
  ASSERT_EQ(r.code, 0) << r.out;
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].path, "/v1/messages");
  EXPECT_EQ(seen[0].header("x-api-key"), kKey);
  auto x = query(dir / "t.db", "SELECT provider, error_kind, model FROM exchanges ORDER BY id");
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(x[0][0], "anthropic");
  EXPECT_EQ(x[0][1], "connection");
  EXPECT_EQ(x[1][1], "timeout");
  EXPECT_EQ(x[2][1], "");
  EXPECT_EQ(x[2][2], "fake-claude");
  auto c = candidates_by_name(dir / "t.db");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c["rows-a"][3], "compiled");
  expect_no_key(dir, r.out);
}

TEST(LlmLoop, NoModelOrNoKeyIsAUsageError) {
  clean_env();
  fs::path dir = temp_dir();
  auto none = run(fmt::format("optimize rmsnorm --proposer llm --gpus none --db {}", (dir / "a.db").string()));
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_NE(none.out.find("--llm-model"), std::string::npos) << none.out;
  auto no_key =
      run(fmt::format("optimize rmsnorm --proposer hybrid --gpus none --db {} --llm-model m "
                      "--llm-key-env TESSERA_AGENT_UNSET_KEY",
                      (dir / "b.db").string()));
  EXPECT_EQ(no_key.code, 2) << no_key.out;
  EXPECT_NE(no_key.out.find("TESSERA_AGENT_UNSET_KEY"), std::string::npos) << no_key.out;
  auto hosted = run(
      fmt::format("optimize rmsnorm --proposer llm --gpus none --db {} --llm-model gpt-x", (dir / "c.db").string()));
  EXPECT_EQ(hosted.code, 2) << hosted.out;
  EXPECT_NE(hosted.out.find("OPENAI_API_KEY"), std::string::npos) << hosted.out;
  auto bad = run(fmt::format("optimize rmsnorm --proposer oracle --db {}", (dir / "d.db").string()));
  EXPECT_EQ(bad.code, 2) << bad.out;
  auto replay = run(fmt::format("optimize rmsnorm --proposer llm --gpus none --db {} --llm-replay {}",
                                (dir / "e.db").string(), (dir / "missing.json").string()));
  EXPECT_EQ(replay.code, 2) << replay.out;
  EXPECT_FALSE(fs::exists(dir / "a.db")) << "nothing is written before the configuration is known to work";
}

TEST(LlmLoop, HybridTunesAProposedTemplateWithTheSearch) {
  clean_env();
  FakeLlmServer server;
  std::string tmpl = "A tunable version: THREADS threads per row.\n\n```cuda\n" + rows_kernel_source("rms_t") +
                     "```\n\n```json\n{\"name\": \"rows-t\", \"params\": {\"THREADS\": [64, 128, 256, 512]}, "
                     "\"constraints\": [\"THREADS >= 128\"], \"launch\": [{\"kernel\": \"rms_t\", \"grid\": [\"M\"], "
                     "\"block\": [\"THREADS\"], \"args\": [\"x\", \"w\", \"y\", \"M\", \"N\", \"eps\"]}]}\n```\n";
  server.script({{200, openai_answer(tmpl)}});
  fs::path dir = temp_dir();
  fs::path db = dir / "t.db";
  auto r =
      run(fmt::format("optimize rmsnorm --proposer hybrid --gpus none --budget 8 --db {} --llm-base-url {} "
                      "--llm-model fake-gpt --llm-key-env TESSERA_AGENT_TEST_KEY --llm-max-calls 1 "
                      "--llm-template-budget 3",
                      db.string(), server.base_url()));
  ASSERT_EQ(r.code, 0) << r.out;
  // The model saw the search's candidates; the template is its own candidates, one per configuration tried.
  EXPECT_NE(last_user_message(server.requests().at(0).body).find("Best candidates so far"), std::string::npos);
  EXPECT_NE(server.requests().at(0).body.find("params"), std::string::npos) << "templates are allowed in hybrid mode";
  auto search = query(db, "SELECT COUNT(*) FROM candidates WHERE origin LIKE 'search:%'");
  EXPECT_EQ(search[0][0], "4");
  auto tuned = query(db,
                     "SELECT c.params, c.origin, p.origin, x.turn, "
                     "(SELECT status FROM evaluations WHERE candidate_id=c.id ORDER BY id DESC LIMIT 1) "
                     "FROM candidates c LEFT JOIN candidates p ON p.id=c.parent "
                     "LEFT JOIN exchanges x ON x.id=c.exchange_id WHERE c.template='rows-t'");
  ASSERT_EQ(tuned.size(), 3u) << r.out;
  std::set<std::string> params;
  for (auto& t : tuned) {
    params.insert(t[0]);
    EXPECT_EQ(t[1], "llm-template:" + tessera::search::default_strategy()) << "tuned by the default strategy";
    EXPECT_EQ(t[2].rfind("search:", 0), 0u) << "the parent is the best search candidate shown";
    EXPECT_EQ(t[3], "1");
    EXPECT_EQ(t[4], "compiled");
  }
  EXPECT_EQ(params.size(), 3u);
  EXPECT_FALSE(params.count(R"({"THREADS":64})")) << "the constraint excludes 64";
}
