// agent/llm/protocol.cpp — the OpenAI-compatible and Anthropic request/reply
// formats (chat completions and Messages API), and reading error bodies.
#include "agent/llm/protocol.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "agent/llm/redact.h"

namespace tessera::llm {

using nlohmann::json;

namespace {

const char* role_name(Role role) {
  return role == Role::Assistant ? "assistant" : "user";
}

json parse_body(const std::string& body, const char* provider) {
  if (body.empty())
    throw LlmError(LlmErrorKind::BadResponse, fmt::format("the {} server answered with an empty body", provider));
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    throw LlmError(LlmErrorKind::BadResponse, fmt::format("the {} server's answer is not JSON ({}): {}", provider,
                                                          e.what(), truncate_text(body, 200)));
  }
}

long long token_count(const json& usage, const char* field) {
  auto it = usage.find(field);
  return (it != usage.end() && it->is_number_integer()) ? it->get<long long>() : 0;
}

std::string string_or_empty(const json& j, const char* field) {
  auto it = j.find(field);
  return (it != j.end() && it->is_string()) ? it->get<std::string>() : std::string();
}

class OpenAiProtocol final : public ProviderProtocol {
 public:
  const char* name() const override { return "openai"; }

  std::string request_body(const Conversation& c, const LlmConfig& config) const override {
    json messages = json::array();
    if (!c.system.empty()) messages.push_back({{"role", "system"}, {"content", c.system}});
    for (const auto& m : c.messages) messages.push_back({{"role", role_name(m.role)}, {"content", m.content}});
    json body = {{"model", config.model}, {"messages", messages}};
    body[config.max_tokens_field.empty() ? "max_tokens" : config.max_tokens_field] =
        c.max_output_tokens.value_or(config.max_output_tokens);
    if (auto t = c.temperature ? c.temperature : config.temperature) body["temperature"] = *t;
    return body.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  std::vector<std::string> headers(const std::string& key, const LlmConfig&) const override {
    std::vector<std::string> h{"Content-Type: application/json", "Accept: application/json"};
    if (!key.empty()) h.push_back("Authorization: Bearer " + key);
    return h;
  }

  Reply parse_reply(const std::string& body) const override {
    json j = parse_body(body, name());
    try {
      Reply r;
      const json& choices = j.at("choices");
      if (!choices.is_array() || choices.empty())
        throw LlmError(LlmErrorKind::BadResponse, "the openai server's answer has no choices");
      const json& choice = choices.at(0);
      const json& message = choice.at("message");
      auto content = message.find("content");
      if (content != message.end() && content->is_string()) {
        r.text = content->get<std::string>();
      } else if (content != message.end() && content->is_array()) {
        for (const auto& part : *content)
          if (part.is_object() && part.value("type", "") == "text") r.text += string_or_empty(part, "text");
      } else if (auto refusal = string_or_empty(message, "refusal"); !refusal.empty()) {
        r.text = refusal;
      }
      r.finish_reason = string_or_empty(choice, "finish_reason");
      r.model = string_or_empty(j, "model");
      if (auto usage = j.find("usage"); usage != j.end() && usage->is_object()) {
        r.prompt_tokens = token_count(*usage, "prompt_tokens");
        r.completion_tokens = token_count(*usage, "completion_tokens");
      }
      return r;
    } catch (const json::exception& e) {
      throw LlmError(LlmErrorKind::BadResponse, fmt::format("the openai server's answer lacks a field ({}): {}",
                                                            e.what(), truncate_text(body, 200)));
    }
  }
};

class AnthropicProtocol final : public ProviderProtocol {
 public:
  const char* name() const override { return "anthropic"; }

  std::string request_body(const Conversation& c, const LlmConfig& config) const override {
    json messages = json::array();
    for (const auto& m : c.messages) messages.push_back({{"role", role_name(m.role)}, {"content", m.content}});
    json body = {{"model", config.model},
                 {"max_tokens", c.max_output_tokens.value_or(config.max_output_tokens)},
                 {"messages", messages}};
    if (!c.system.empty()) body["system"] = c.system;
    if (auto t = c.temperature ? c.temperature : config.temperature) body["temperature"] = *t;
    return body.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  std::vector<std::string> headers(const std::string& key, const LlmConfig& config) const override {
    std::vector<std::string> h{"Content-Type: application/json", "Accept: application/json",
                               "anthropic-version: " + config.anthropic_version};
    if (!key.empty()) h.push_back("x-api-key: " + key);
    return h;
  }

  Reply parse_reply(const std::string& body) const override {
    json j = parse_body(body, name());
    try {
      if (string_or_empty(j, "type") == "error")
        throw LlmError(LlmErrorKind::BadResponse,
                       "the anthropic server answered with an error: " + server_error_text(body));
      Reply r;
      for (const auto& block : j.at("content"))
        if (block.is_object() && block.value("type", "") == "text") r.text += string_or_empty(block, "text");
      r.finish_reason = string_or_empty(j, "stop_reason");
      r.model = string_or_empty(j, "model");
      if (auto usage = j.find("usage"); usage != j.end() && usage->is_object()) {
        r.prompt_tokens = token_count(*usage, "input_tokens") + token_count(*usage, "cache_creation_input_tokens") +
                          token_count(*usage, "cache_read_input_tokens");
        r.completion_tokens = token_count(*usage, "output_tokens");
      }
      return r;
    } catch (const json::exception& e) {
      throw LlmError(LlmErrorKind::BadResponse, fmt::format("the anthropic server's answer lacks a field ({}): {}",
                                                            e.what(), truncate_text(body, 200)));
    }
  }
};

}  // namespace

std::unique_ptr<ProviderProtocol> make_openai_protocol() {
  return std::make_unique<OpenAiProtocol>();
}
std::unique_ptr<ProviderProtocol> make_anthropic_protocol() {
  return std::make_unique<AnthropicProtocol>();
}
std::unique_ptr<ProviderProtocol> make_protocol(Provider provider) {
  return provider == Provider::Anthropic ? make_anthropic_protocol() : make_openai_protocol();
}

std::string server_error_text(const std::string& body) {
  try {
    json j = json::parse(body);
    if (j.is_object()) {
      if (auto e = j.find("error"); e != j.end()) {
        if (e->is_string()) return e->get<std::string>();
        if (e->is_object()) {
          std::string msg = string_or_empty(*e, "message");
          std::string type = string_or_empty(*e, "type");
          if (!msg.empty()) return type.empty() ? msg : type + ": " + msg;
        }
      }
      if (auto msg = string_or_empty(j, "message"); !msg.empty()) return msg;
      if (auto detail = string_or_empty(j, "detail"); !detail.empty()) return detail;
    }
  } catch (...) {
  }
  return truncate_text(body, 300);
}

}  // namespace tessera::llm
