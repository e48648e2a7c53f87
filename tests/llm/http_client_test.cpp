// tests/llm/http_client_test.cpp — the OpenAI-compatible and Anthropic clients
// against a loopback server with scripted answers: good and bad kernels, garbage,
// empty and truncated bodies, 429 with Retry-After, 5xx, timeouts, caps; and the
// rule that the API key never appears in anything the client returns or reports.
#include "agent/llm/http_client.h"

#include <gtest/gtest.h>

#include <chrono>

#include "agent/llm/exchange_json.h"
#include "agent/llm/proposal.h"
#include "agent/llm/sanitize.h"
#include "answers.h"
#include "fake_server.h"

namespace tessera::llm {
namespace {

using testing::anthropic_answer;
using testing::FakeLlmServer;
using testing::openai_answer;
using testing::Scripted;

const std::string kKey = "sk-test-7fQ2wZr9LmX4vB8nK1pT5yHs";  // only ever in the fake env

class HttpClientTest : public ::testing::Test {
 protected:
  LlmConfig config(Provider provider = Provider::OpenAI) {
    LlmConfig c;
    c.provider = provider;
    c.base_url = provider == Provider::OpenAI ? server.base_url() + "/v1" : server.base_url();
    c.model = "test-model";
    c.key_env = "TESSERA_TEST_KEY";
    c.timeout_s = 2;
    c.connect_timeout_s = 1;
    c.max_retries = 2;
    c.backoff_initial_s = 0.01;
    c.backoff_max_s = 0.05;
    c.max_retry_after_s = 5;
    return c;
  }

  std::unique_ptr<LlmClient> client(const LlmConfig& c) {
    EnvLookup env = [](const char* name) -> const char* {
      return std::string(name) == "TESSERA_TEST_KEY" ? kKey.c_str() : nullptr;
    };
    auto made = make_client(c, nullptr, env);
    made->set_observer([this](const Exchange& e) { exchanges.push_back(e); });
    if (auto* http = dynamic_cast<HttpLlmClient*>(made.get()))
      http->set_log([this](const std::string& line) { logs.push_back(line); });
    return made;
  }

  // Runs a call that must fail; returns the error and keeps its text for the key sweep.
  LlmError expect_failure(LlmClient& c, const Conversation& conv = ask()) {
    try {
      Reply r = c.complete(conv);
      ADD_FAILURE() << "expected an LlmError, got a reply: " << r.text;
    } catch (const LlmError& e) {
      errors.push_back(e.what());
      return e;
    }
    return LlmError(LlmErrorKind::Config, "unreachable");
  }

  static Conversation ask() {
    Conversation c;
    c.system = "You write CUDA kernels.";
    c.messages.push_back({Role::User, "Propose a kernel for rmsnorm."});
    return c;
  }

  // Nothing the client produced may hold the key or an 8-character piece of it.
  void TearDown() override {
    std::vector<std::string> texts = logs;
    texts.insert(texts.end(), errors.begin(), errors.end());
    for (const auto& e : exchanges)
      texts.push_back(to_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    for (const auto& t : texts) {
      EXPECT_EQ(t.find(kKey), std::string::npos) << t;
      for (size_t i = 0; i + 8 <= kKey.size(); ++i) EXPECT_EQ(t.find(kKey.substr(i, 8)), std::string::npos) << t;
    }
  }

  FakeLlmServer server;
  std::vector<Exchange> exchanges;
  std::vector<std::string> logs;
  std::vector<std::string> errors;
};

TEST_F(HttpClientTest, OpenAiGoodKernelIsReturnedParsedAndRecorded) {
  server.script({{200, openai_answer(testing::kGoodKernelAnswer, 1234, 567)}});
  auto c = client(config());
  Reply r = c->complete(ask());
  EXPECT_EQ(r.text, testing::kGoodKernelAnswer);
  EXPECT_EQ(r.model, "fake-gpt");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.prompt_tokens, 1234);
  EXPECT_EQ(r.completion_tokens, 567);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_GT(r.latency_s, 0);

  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[0].header("Authorization"), "Bearer " + kKey);
  auto body = nlohmann::json::parse(seen[0].body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "Propose a kernel for rmsnorm.");
  EXPECT_EQ(body["max_tokens"], 16384);

  ParseResult parsed = parse_proposals(r.text);
  ASSERT_TRUE(parsed.ok()) << parsed.errors.front();
  EXPECT_EQ(parsed.proposals[0].name, "rows-shuffle");
  EXPECT_TRUE(check_source(parsed.proposals[0].source).empty())
      << format_violations(check_source(parsed.proposals[0].source));

  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0].provider, "openai");
  EXPECT_EQ(exchanges[0].request, ask());
  EXPECT_EQ(exchanges[0].reply, r);
  EXPECT_FALSE(exchanges[0].error_kind.has_value());
}

TEST_F(HttpClientTest, AnthropicGoodKernelUsesMessagesApi) {
  server.script({{200, anthropic_answer(testing::kGoodKernelAnswer, 900, 300)}});
  auto c = client(config(Provider::Anthropic));
  Reply r = c->complete(ask());
  EXPECT_EQ(r.text, testing::kGoodKernelAnswer);
  EXPECT_EQ(r.model, "fake-claude");
  EXPECT_EQ(r.finish_reason, "end_turn");
  EXPECT_EQ(r.prompt_tokens, 900);
  EXPECT_EQ(r.completion_tokens, 300);

  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/messages");
  EXPECT_EQ(seen[0].header("x-api-key"), kKey);
  EXPECT_EQ(seen[0].header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(seen[0].header("Authorization"), "");
  auto body = nlohmann::json::parse(seen[0].body);
  EXPECT_EQ(body["system"], "You write CUDA kernels.");
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["max_tokens"], 16384);
  EXPECT_EQ(exchanges.at(0).provider, "anthropic");
}

TEST_F(HttpClientTest, CompileErrorAndWrongKernelsPassTheClientAndTheStaticChecks) {
  // Neither is the client's business: NVRTC and validation catch them later.
  server.script(
      {{200, openai_answer(testing::kCompileErrorAnswer)}, {200, anthropic_answer(testing::kWrongKernelAnswer)}});
  auto openai = client(config());
  ParseResult broken = parse_proposals(openai->complete(ask()).text);
  ASSERT_TRUE(broken.ok());
  EXPECT_NE(broken.proposals[0].source.find("undeclared_thing"), std::string::npos);
  EXPECT_TRUE(check_source(broken.proposals[0].source).empty());

  auto anthropic = client(config(Provider::Anthropic));
  ParseResult wrong = parse_proposals(anthropic->complete(ask()).text);
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong.proposals[0].kernel_names(), std::vector<std::string>{"rmsnorm_wrong"});
  EXPECT_TRUE(check_source(wrong.proposals[0].source).empty());
  EXPECT_EQ(server.request_count(), 2u);
}

TEST_F(HttpClientTest, GarbageAndEmptyAnswersAreRepliesThatDoNotParse) {
  server.script({{200, openai_answer(testing::kGarbageAnswer)}, {200, openai_answer("")}});
  auto c = client(config());
  Reply garbage = c->complete(ask());
  EXPECT_EQ(garbage.text, testing::kGarbageAnswer);
  ParseResult g = parse_proposals(garbage.text);
  EXPECT_TRUE(g.proposals.empty());
  ASSERT_FALSE(g.errors.empty());

  Reply empty = c->complete(ask());
  EXPECT_EQ(empty.text, "");
  ParseResult e = parse_proposals(empty.text);
  ASSERT_EQ(e.errors.size(), 1u);
  EXPECT_NE(e.errors[0].find("empty"), std::string::npos);
  EXPECT_EQ(exchanges.size(), 2u);
}

TEST_F(HttpClientTest, NonJsonBodyIsABadResponseAndIsNotRetried) {
  server.script({{200, "<html>gateway says hi \xff\xfe</html>"}});
  auto c = client(config());
  LlmError e = expect_failure(*c);
  EXPECT_EQ(e.kind(), LlmErrorKind::BadResponse);
  EXPECT_NE(std::string(e.what()).find("not JSON"), std::string::npos);
  EXPECT_EQ(server.request_count(), 1u);
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0].error_kind, LlmErrorKind::BadResponse);
  // The recorded error is valid UTF-8, so the store can keep it as JSON text.
  EXPECT_NO_THROW(to_json(exchanges[0]).dump());
  EXPECT_NE(exchanges[0].error.find("gateway says hi \xEF\xBF\xBD\xEF\xBF\xBD"), std::string::npos);
}

TEST_F(HttpClientTest, TruncatedBodyIsRetriedThenReportedAsConnectionError) {
  std::string full = openai_answer(testing::kGoodKernelAnswer);
  server.script({{200, full, {}, 0, true}, {200, full, {}, 0, true}, {200, full, {}, 0, true}});
  auto c = client(config());
  LlmError e = expect_failure(*c);
  EXPECT_EQ(e.kind(), LlmErrorKind::Connection);
  EXPECT_EQ(e.attempts(), 3);
  EXPECT_EQ(server.request_count(), 3u);  // 1 + max_retries
  EXPECT_EQ(logs.size(), 3u);             // two retry notices and the final failure
}

TEST_F(HttpClientTest, TruncatedBodyThenSuccess) {
  std::string full = openai_answer("ok");
  server.script({{200, full, {}, 0, true}, {200, full}});
  auto c = client(config());
  Reply r = c->complete(ask());
  EXPECT_EQ(r.text, "ok");
  EXPECT_EQ(r.attempts, 2);
}

TEST_F(HttpClientTest, RateLimitHonoursRetryAfterSeconds) {
  server.script({{429, R"({"error":{"message":"slow down","type":"rate_limit_error"}})", {{"Retry-After", "1"}}},
                 {200, openai_answer("after the wait")}});
  auto c = client(config());
  auto start = std::chrono::steady_clock::now();
  Reply r = c->complete(ask());
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.text, "after the wait");
  EXPECT_EQ(r.attempts, 2);
  EXPECT_GE(waited, 0.95);  // the backoff alone would be 0.01 s
  EXPECT_GE(r.elapsed_s, 0.95);
  EXPECT_EQ(server.request_count(), 2u);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("HTTP 429"), std::string::npos);
  EXPECT_NE(logs[0].find("slow down"), std::string::npos);
}

TEST_F(HttpClientTest, RetryAfterLongerThanTheLimitFailsAtOnce) {
  server.script({{429, R"({"error":{"message":"quota"}})", {{"Retry-After", "3600"}}}});
  auto c = client(config(Provider::Anthropic));
  auto start = std::chrono::steady_clock::now();
  LlmError e = expect_failure(*c);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_EQ(e.kind(), LlmErrorKind::RateLimited);
  EXPECT_EQ(e.http_status(), 429);
  EXPECT_NE(std::string(e.what()).find("3600"), std::string::npos);
  EXPECT_EQ(server.request_count(), 1u);
}

TEST_F(HttpClientTest, ServerErrorsAreRetriedWithGrowingBackoff) {
  server.script(
      {{500, R"({"error":{"message":"boom"}})"}, {503, "overloaded"}, {200, anthropic_answer("third time lucky")}});
  LlmConfig cfg = config(Provider::Anthropic);
  cfg.backoff_initial_s = 0.1;
  cfg.backoff_max_s = 1;
  auto c = client(cfg);
  Reply r = c->complete(ask());
  EXPECT_EQ(r.text, "third time lucky");
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(server.request_count(), 3u);
  EXPECT_GE(r.elapsed_s, 0.1 + 0.2);  // 0.1 then 0.2 (plus jitter)
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_NE(logs[0].find("HTTP 500"), std::string::npos);
  EXPECT_NE(logs[1].find("HTTP 503"), std::string::npos);
}

TEST_F(HttpClientTest, PersistentServerErrorGivesUpAfterMaxRetries) {
  server.script({{500, "{}"}, {502, "{}"}, {500, R"({"error":"still broken"})"}, {200, openai_answer("late")}});
  auto c = client(config());
  LlmError e = expect_failure(*c);
  EXPECT_EQ(e.kind(), LlmErrorKind::Http);
  EXPECT_EQ(e.http_status(), 500);
  EXPECT_EQ(e.attempts(), 3);
  EXPECT_NE(std::string(e.what()).find("still broken"), std::string::npos);
  EXPECT_EQ(server.request_count(), 3u);
}

TEST_F(HttpClientTest, SlowAnswerPastTheTimeoutIsATimeout) {
  server.script({{200, openai_answer("too late"), {}, 0.6}, {200, openai_answer("too late"), {}, 0.6}});
  LlmConfig cfg = config();
  cfg.timeout_s = 0.2;
  cfg.max_retries = 1;
  auto c = client(cfg);
  auto start = std::chrono::steady_clock::now();
  LlmError e = expect_failure(*c);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(e.kind(), LlmErrorKind::Timeout);
  EXPECT_EQ(e.attempts(), 2);
  EXPECT_LT(took, 1.0);  // did not wait for the server's 0.6 s twice
  EXPECT_EQ(server.request_count(), 2u);
  EXPECT_EQ(exchanges.at(0).error_kind, LlmErrorKind::Timeout);
}

TEST_F(HttpClientTest, UnauthorizedIsNotRetriedAndTheEchoedKeyIsRedacted) {
  // An echoing server puts the whole key and a fragment of it in its error body.
  std::string body = R"({"error":{"message":"Incorrect API key provided: )" + kKey + " (also known as " +
                     kKey.substr(4, 12) + R"x(...)","type":"invalid_request_error"}})x";
  server.script({{401, body}});
  auto c = client(config());
  LlmError e = expect_failure(*c);
  std::string what = e.what();
  EXPECT_EQ(e.kind(), LlmErrorKind::Http);
  EXPECT_EQ(e.http_status(), 401);
  EXPECT_EQ(server.request_count(), 1u);
  EXPECT_NE(what.find("[REDACTED]"), std::string::npos);
  EXPECT_NE(what.find("$TESSERA_TEST_KEY"), std::string::npos);  // names the variable
  EXPECT_EQ(what.find(kKey), std::string::npos);
  EXPECT_EQ(exchanges.at(0).error, what);
}

TEST_F(HttpClientTest, ReplyTextThatEchoesTheKeyIsRedacted) {
  server.script({{200, openai_answer("your key is " + kKey + ", right?")}});
  auto c = client(config());
  Reply r = c->complete(ask());
  EXPECT_EQ(r.text, "your key is [REDACTED], right?");
}

TEST_F(HttpClientTest, CallCapIsEnforcedBeforeSending) {
  server.script({{200, openai_answer("1")}, {200, openai_answer("2")}, {200, openai_answer("3")}});
  LlmConfig cfg = config();
  cfg.limits.max_calls = 2;
  auto c = client(cfg);
  EXPECT_EQ(c->complete(ask()).text, "1");
  EXPECT_EQ(c->complete(ask()).text, "2");
  LlmError e = expect_failure(*c);
  EXPECT_EQ(e.kind(), LlmErrorKind::BudgetExceeded);
  EXPECT_NE(std::string(e.what()).find("2 of 2 calls"), std::string::npos);
  EXPECT_EQ(server.request_count(), 2u);
}

TEST_F(HttpClientTest, TokenAndCostCapsAreSharedAcrossClients) {
  server.script({{200, openai_answer("a", 80, 40)}, {200, anthropic_answer("b", 10, 10)}});
  BudgetLimits limits;
  limits.max_tokens = 100;
  auto budget = std::make_shared<RunBudget>(limits);
  EnvLookup env = [](const char* name) -> const char* {
    return std::string(name) == "TESSERA_TEST_KEY" ? kKey.c_str() : nullptr;
  };
  auto openai = make_client(config(), budget, env);
  auto anthropic = make_client(config(Provider::Anthropic), budget, env);
  EXPECT_EQ(openai->complete(ask()).text, "a");  // crosses the cap: still returned
  EXPECT_EQ(budget->usage().prompt_tokens + budget->usage().completion_tokens, 120);
  LlmError e = expect_failure(*anthropic);
  EXPECT_EQ(e.kind(), LlmErrorKind::BudgetExceeded);
  EXPECT_NE(std::string(e.what()).find("token cap"), std::string::npos);
  EXPECT_EQ(server.request_count(), 1u);

  BudgetLimits money;
  money.price_prompt_per_1k = 1.0;
  money.price_completion_per_1k = 2.0;
  money.max_cost = 0.15;
  RunBudget priced(money);
  priced.reserve_call();
  priced.record(100, 50);  // 0.1 + 0.1
  EXPECT_DOUBLE_EQ(priced.usage().cost, 0.2);
  try {
    priced.reserve_call();
    ADD_FAILURE() << "cost cap not enforced";
  } catch (const LlmError& err) {
    EXPECT_EQ(err.kind(), LlmErrorKind::BudgetExceeded);
    EXPECT_NE(std::string(err.what()).find("cost cap"), std::string::npos);
  }
}

TEST_F(HttpClientTest, MissingKeyIsAClearErrorAndLocalServersNeedNone) {
  LlmConfig cfg = config();
  cfg.key_env = "TESSERA_TEST_UNSET_KEY";
  EnvLookup empty = [](const char*) -> const char* { return nullptr; };
  try {
    make_client(cfg, nullptr, empty);
    ADD_FAILURE() << "expected MissingKey";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), LlmErrorKind::MissingKey);
    EXPECT_NE(std::string(e.what()).find("TESSERA_TEST_UNSET_KEY"), std::string::npos);
  }
  // A hosted default endpoint without any key variable set is refused too.
  LlmConfig hosted;
  hosted.model = "gpt-x";
  EXPECT_THROW(make_client(hosted, nullptr, empty), LlmError);

  // A local server (no key variable named, none set): no Authorization header.
  cfg.key_env.clear();
  server.script({{200, openai_answer("local")}});
  auto local = make_client(cfg, nullptr, empty);
  EXPECT_EQ(local->complete(ask()).text, "local");
  EXPECT_EQ(server.requests().at(0).header("Authorization"), "");
}

TEST_F(HttpClientTest, ConnectionRefusedIsRetriedThenReported) {
  int dead_port;
  {
    FakeLlmServer gone;
    dead_port = gone.port();
  }
  LlmConfig cfg = config();
  cfg.base_url = "http://127.0.0.1:" + std::to_string(dead_port) + "/v1";
  cfg.max_retries = 1;
  auto c = client(cfg);
  LlmError e = expect_failure(*c);
  EXPECT_EQ(e.kind(), LlmErrorKind::Connection);
  EXPECT_EQ(e.attempts(), 2);
}

TEST_F(HttpClientTest, NotFoundPointsAtBaseUrlAndModel) {
  server.script({{404, R"({"error":"model 'test-model' not found"})"}});
  auto c = client(config());
  LlmError e = expect_failure(*c);
  EXPECT_EQ(e.http_status(), 404);
  EXPECT_NE(std::string(e.what()).find("check the base URL"), std::string::npos);
  EXPECT_EQ(server.request_count(), 1u);
}

}  // namespace
}  // namespace tessera::llm
