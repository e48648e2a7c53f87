// agent/llm/exchange_json.cpp — (de)serializing exchanges for recorded runs.
#include "agent/llm/exchange_json.h"

#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <sstream>

namespace tessera::llm {

using nlohmann::json;

namespace {

std::optional<LlmErrorKind> kind_from_string(const std::string& s) {
  for (auto k : {LlmErrorKind::Config, LlmErrorKind::MissingKey, LlmErrorKind::BudgetExceeded, LlmErrorKind::Timeout,
                 LlmErrorKind::Connection, LlmErrorKind::RateLimited, LlmErrorKind::Http, LlmErrorKind::BadResponse,
                 LlmErrorKind::ReplayExhausted})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

template <typename F>
auto field_errors_as_config(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const json::exception& e) {
    throw LlmError(LlmErrorKind::Config, fmt::format("recorded {} is malformed: {}", what, e.what()));
  }
}

}  // namespace

json to_json(const Conversation& c) {
  json messages = json::array();
  for (const auto& m : c.messages)
    messages.push_back({{"role", m.role == Role::Assistant ? "assistant" : "user"}, {"content", m.content}});
  json j = {{"system", c.system}, {"messages", messages}};
  if (c.max_output_tokens) j["max_output_tokens"] = *c.max_output_tokens;
  if (c.temperature) j["temperature"] = *c.temperature;
  return j;
}

json to_json(const Reply& r) {
  return {{"text", r.text},
          {"model", r.model},
          {"finish_reason", r.finish_reason},
          {"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"latency_s", r.latency_s},
          {"elapsed_s", r.elapsed_s},
          {"http_status", r.http_status},
          {"attempts", r.attempts}};
}

json to_json(const Exchange& e) {
  json j = {{"provider", e.provider}, {"request", to_json(e.request)}};
  if (e.error_kind) {
    j["error"] = e.error;
    j["error_kind"] = to_string(*e.error_kind);
  } else {
    j["reply"] = to_json(e.reply);
  }
  if (!e.outcome.empty()) {
    json outcome = json::parse(e.outcome, nullptr, false);
    if (!outcome.is_discarded()) j["outcome"] = outcome;
  }
  return j;
}

Conversation conversation_from_json(const json& j) {
  return field_errors_as_config("request", [&] {
    Conversation c;
    c.system = j.value("system", "");
    for (const auto& m : j.at("messages")) {
      std::string role = m.at("role").get<std::string>();
      if (role != "user" && role != "assistant")
        throw LlmError(LlmErrorKind::Config,
                       fmt::format("recorded message role '{}' is neither user nor assistant", role));
      c.messages.push_back({role == "assistant" ? Role::Assistant : Role::User, m.at("content").get<std::string>()});
    }
    if (j.contains("max_output_tokens")) c.max_output_tokens = j.at("max_output_tokens").get<int>();
    if (j.contains("temperature")) c.temperature = j.at("temperature").get<double>();
    return c;
  });
}

Reply reply_from_json(const json& j) {
  return field_errors_as_config("reply", [&] {
    Reply r;
    r.text = j.at("text").get<std::string>();
    r.model = j.value("model", "");
    r.finish_reason = j.value("finish_reason", "");
    r.prompt_tokens = j.value("prompt_tokens", 0LL);
    r.completion_tokens = j.value("completion_tokens", 0LL);
    r.latency_s = j.value("latency_s", 0.0);
    r.elapsed_s = j.value("elapsed_s", r.latency_s);
    r.http_status = j.value("http_status", 0);
    r.attempts = j.value("attempts", 1);
    return r;
  });
}

Exchange exchange_from_json(const json& j) {
  return field_errors_as_config("exchange", [&] {
    Exchange e;
    e.provider = j.value("provider", "");
    e.request = j.contains("request") ? conversation_from_json(j.at("request")) : Conversation{};
    if (j.contains("error_kind")) {
      auto kind = kind_from_string(j.at("error_kind").get<std::string>());
      if (!kind)
        throw LlmError(LlmErrorKind::Config,
                       "recorded exchange has an unknown error_kind: " + j.at("error_kind").dump());
      e.error_kind = kind;
      e.error = j.value("error", "");
    } else {
      e.reply = reply_from_json(j.at("reply"));
    }
    if (j.contains("outcome") && j.at("outcome").is_object())
      e.outcome = j.at("outcome").dump(-1, ' ', false, json::error_handler_t::replace);
    return e;
  });
}

std::vector<Exchange> load_exchanges(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw LlmError(LlmErrorKind::Config, fmt::format("cannot read recorded exchanges '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::exception& e) {
    throw LlmError(LlmErrorKind::Config, fmt::format("'{}' is not JSON: {}", path, e.what()));
  }
  const json& list = j.is_array() ? j : j.contains("exchanges") ? j.at("exchanges") : j;
  if (!list.is_array())
    throw LlmError(LlmErrorKind::Config, fmt::format("'{}' holds neither an array nor {{\"exchanges\": [...]}}", path));
  std::vector<Exchange> out;
  for (size_t i = 0; i < list.size(); ++i) {
    try {
      out.push_back(exchange_from_json(list[i]));
    } catch (const LlmError& e) {
      throw LlmError(LlmErrorKind::Config, fmt::format("{}: exchange {}: {}", path, i, e.what()));
    }
  }
  return out;
}

void save_exchanges(const std::string& path, const std::vector<Exchange>& exchanges) {
  json list = json::array();
  for (const auto& e : exchanges) list.push_back(to_json(e));
  std::ofstream out(path);
  out << json{{"exchanges", list}}.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  if (!out) throw LlmError(LlmErrorKind::Config, fmt::format("cannot write '{}'", path));
}

}  // namespace tessera::llm
