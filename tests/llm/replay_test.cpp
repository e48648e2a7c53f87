// tests/llm/replay_test.cpp — serving recorded exchanges without a network (in
// order, by request, from a file, failures included), recording a live exchange
// and replaying it, and reading the configuration from the environment.
#include "agent/llm/replay.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "agent/llm/exchange_json.h"
#include "agent/llm/http_client.h"
#include "agent/llm/redact.h"
#include "answers.h"
#include "fake_server.h"

namespace tessera::llm {
namespace {

Conversation ask(const std::string& text) {
  Conversation c;
  c.system = "sys";
  c.messages.push_back({Role::User, text});
  return c;
}

Exchange recorded(const std::string& question, const std::string& answer) {
  Exchange e;
  e.provider = "openai";
  e.request = ask(question);
  e.reply.text = answer;
  e.reply.model = "m";
  e.reply.prompt_tokens = 10;
  e.reply.completion_tokens = 20;
  e.reply.latency_s = 1.5;
  e.reply.http_status = 200;
  return e;
}

TEST(Replay, ServesInOrderThenRunsOut) {
  ReplayClient c({recorded("a", "A"), recorded("b", "B")});
  std::vector<Exchange> seen;
  c.set_observer([&](const Exchange& e) { seen.push_back(e); });
  EXPECT_EQ(c.complete(ask("whatever")).text, "A");
  Reply b = c.complete(ask("else"));
  EXPECT_EQ(b.text, "B");
  EXPECT_EQ(b.prompt_tokens, 10);
  EXPECT_DOUBLE_EQ(b.latency_s, 1.5);
  EXPECT_EQ(c.remaining(), 0u);
  try {
    c.complete(ask("more"));
    ADD_FAILURE() << "expected ReplayExhausted";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), LlmErrorKind::ReplayExhausted);
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].request, ask("else"));  // what this run asked
  EXPECT_EQ(c.provider_name(), "replay");
}

TEST(Replay, ByRequestMatchesTheConversation) {
  ReplayClient c({recorded("a", "A"), recorded("b", "B"), recorded("a", "A2")}, ReplayMatch::ByRequest);
  EXPECT_EQ(c.complete(ask("b")).text, "B");
  EXPECT_EQ(c.complete(ask("a")).text, "A");
  EXPECT_EQ(c.complete(ask("a")).text, "A2");
  EXPECT_THROW(c.complete(ask("a")), LlmError);
  EXPECT_NE(conversation_fingerprint(ask("a")), conversation_fingerprint(ask("b")));
  Conversation split1 = ask("ab"), split2 = ask("a");
  split2.messages.push_back({Role::User, "b"});
  EXPECT_NE(conversation_fingerprint(split1), conversation_fingerprint(split2));
}

TEST(Replay, FileRoundTripIncludingFailures) {
  Exchange failed;
  failed.provider = "anthropic";
  failed.request = ask("c");
  failed.error = "HTTP 500 from http://x: boom (gave up after 3 attempts)";
  failed.error_kind = LlmErrorKind::Http;
  std::vector<Exchange> all = {recorded("a", "A"), failed};
  std::string path =
      (std::filesystem::temp_directory_path() / ("tessera_replay_" + std::to_string(::getpid()) + ".json")).string();
  save_exchanges(path, all);
  std::vector<Exchange> back = load_exchanges(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].reply, all[0].reply);
  EXPECT_EQ(back[0].request, all[0].request);
  EXPECT_EQ(back[1].error_kind, LlmErrorKind::Http);

  ReplayClient c = ReplayClient::from_file(path);
  EXPECT_EQ(c.complete(ask("a")).text, "A");
  try {
    c.complete(ask("c"));
    ADD_FAILURE() << "a recorded failure must be replayed as one";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), LlmErrorKind::Http);
    EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos);
  }
  std::remove(path.c_str());
  EXPECT_THROW(load_exchanges(path), LlmError);
}

// The outcome (what tessera made of the answer, with candidate ids) travels with
// the exchange through the file and reaches the replay's observer: it is how a
// replay maps the answers' "#id" references to its own candidates.
TEST(Replay, OutcomeRoundTripsAndIsServed) {
  Exchange e = recorded("a", "A");
  e.outcome = R"({"parse_errors":[],"proposals":[{"candidates":[7],"kind":"kernel","name":"rows-a"}]})";
  Exchange none = recorded("b", "B");
  std::string path =
      (std::filesystem::temp_directory_path() / ("tessera_replay_outcome_" + std::to_string(::getpid()) + ".json"))
          .string();
  save_exchanges(path, {e, none});
  std::vector<Exchange> back = load_exchanges(path);
  std::remove(path.c_str());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(back[0].outcome), nlohmann::json::parse(e.outcome));
  EXPECT_TRUE(back[1].outcome.empty());
  EXPECT_FALSE(to_json(none).contains("outcome")) << "older files stay as they were";
  // A malformed or non-object outcome is ignored, not an error.
  nlohmann::json j = to_json(none);
  j["outcome"] = "not an object";
  EXPECT_TRUE(exchange_from_json(j).outcome.empty());

  ReplayClient c(back);
  std::vector<Exchange> seen;
  c.set_observer([&](const Exchange& x) { seen.push_back(x); });
  c.complete(ask("anything"));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].outcome, back[0].outcome);
}

TEST(Replay, RecordsALiveRunAndReplaysItWithoutTheServer) {
  std::vector<Exchange> log;
  Reply live;
  {
    testing::FakeLlmServer server;
    server.script({{200, testing::openai_answer(testing::kGoodKernelAnswer, 321, 123)}});
    LlmConfig cfg;
    cfg.base_url = server.base_url() + "/v1";
    cfg.model = "m";
    auto client = make_client(cfg, nullptr, [](const char*) -> const char* { return nullptr; });
    client->set_observer([&](const Exchange& e) { log.push_back(e); });
    live = client->complete(ask("kernel please"));
  }  // the server is gone
  nlohmann::json stored = to_json(log.at(0));
  ReplayClient replay({exchange_from_json(stored)}, ReplayMatch::ByRequest);
  Reply again = replay.complete(ask("kernel please"));
  EXPECT_EQ(again, live);
  EXPECT_EQ(again.prompt_tokens, 321);
}

TEST(Text, RedactionAndUtf8) {
  Redactor r("sk-abcdefghijklmnop");
  EXPECT_EQ(r("key sk-abcdefghijklmnop end"), "key [REDACTED] end");
  EXPECT_EQ(r("part cdefghijkl end"), "part [REDACTED] end");  // a 10-char fragment
  EXPECT_EQ(r("short abcdefg end"), "short abcdefg end");      // 7 chars: kept
  EXPECT_EQ(Redactor("tiny")("a tiny key"), "a [REDACTED] key");
  EXPECT_EQ(Redactor()("nothing to hide"), "nothing to hide");
  EXPECT_EQ(to_valid_utf8("ok \xc3\xa9 \xff \xe2\x82"), "ok \xc3\xa9 \xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(truncate_text("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9 [... 2 more bytes]");
}

TEST(Config, FromEnvironment) {
  std::map<std::string, std::string> vars = {{"TESSERA_LLM_PROVIDER", "anthropic"},
                                             {"TESSERA_LLM_MODEL", "claude-x"},
                                             {"TESSERA_LLM_BASE_URL", "http://gw.local/"},
                                             {"TESSERA_LLM_KEY_ENV", "MY_KEY"},
                                             {"TESSERA_LLM_TIMEOUT", "30.5"},
                                             {"TESSERA_LLM_MAX_CALLS", "7"},
                                             {"TESSERA_LLM_MAX_TOKENS", "100000"},
                                             {"TESSERA_LLM_PRICE_IN", "0.003"},
                                             {"TESSERA_LLM_MAX_COST", "2"},
                                             {"TESSERA_LLM_MAX_TOKENS_FIELD", "max_completion_tokens"}};
  EnvLookup env = [&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  LlmConfig c = config_from_env({}, env);
  EXPECT_EQ(c.provider, Provider::Anthropic);
  EXPECT_EQ(c.model, "claude-x");
  EXPECT_EQ(c.key_env, "MY_KEY");
  EXPECT_EQ(c.max_tokens_field, "max_completion_tokens");
  EXPECT_DOUBLE_EQ(c.timeout_s, 30.5);
  EXPECT_EQ(c.limits.max_calls, 7);
  EXPECT_EQ(c.limits.max_tokens, 100000);
  EXPECT_DOUBLE_EQ(*c.limits.max_cost, 2.0);
  EXPECT_EQ(endpoint_url(c), "http://gw.local/v1/messages");
  EXPECT_NO_THROW(validate(c));

  KeySource k = locate_key(c, env);
  EXPECT_EQ(k.variable, "MY_KEY");
  EXPECT_TRUE(k.required);
  EXPECT_FALSE(k.present);

  vars["TESSERA_LLM_MAX_CALLS"] = "many";
  try {
    config_from_env({}, env);
    ADD_FAILURE() << "expected a config error";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), LlmErrorKind::Config);
    EXPECT_NE(std::string(e.what()).find("TESSERA_LLM_MAX_CALLS"), std::string::npos);
  }
  vars["TESSERA_LLM_MAX_CALLS"] = "1";
  vars["TESSERA_LLM_PROVIDER"] = "gemini";
  EXPECT_THROW(config_from_env({}, env), LlmError);
}

TEST(Config, EndpointsAndValidation) {
  LlmConfig c;
  c.model = "gpt";
  EXPECT_EQ(endpoint_url(c), "https://api.openai.com/v1/chat/completions");
  c.base_url = "http://localhost:11434/v1/";
  EXPECT_EQ(endpoint_url(c), "http://localhost:11434/v1/chat/completions");
  c.provider = Provider::Anthropic;
  c.base_url.clear();
  EXPECT_EQ(endpoint_url(c), "https://api.anthropic.com/v1/messages");
  c.base_url = "https://proxy/v1";
  EXPECT_EQ(endpoint_url(c), "https://proxy/v1/messages");

  LlmConfig bad;
  EXPECT_THROW(validate(bad), LlmError);  // no model
  bad.model = "m";
  bad.base_url = "file:///etc/passwd";
  EXPECT_THROW(validate(bad), LlmError);
  bad.base_url.clear();
  bad.limits.max_cost = 1;  // no price
  EXPECT_THROW(validate(bad), LlmError);
  EXPECT_EQ(parse_provider("vLLM"), Provider::OpenAI);
  EXPECT_EQ(parse_provider("nope"), std::nullopt);
}

}  // namespace
}  // namespace tessera::llm
