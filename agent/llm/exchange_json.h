// agent/llm/exchange_json.h — the JSON form of conversations, replies and
// exchanges: what a recorded run file holds and what ReplayClient reads back.
// Format: {"exchanges": [{"provider", "request": {"system", "messages": [{"role",
// "content"}]}, "reply": {"text", "model", "finish_reason", "prompt_tokens",
// "completion_tokens", "latency_s", "http_status"}, "error", "error_kind", "outcome"}]}
// ("outcome", optional: what tessera made of the answer, with candidate ids).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/llm/client.h"

namespace tessera::llm {

nlohmann::json to_json(const Conversation& conversation);
nlohmann::json to_json(const Reply& reply);
nlohmann::json to_json(const Exchange& exchange);
// These throw LlmError(Config) naming the missing or mistyped field.
Conversation conversation_from_json(const nlohmann::json& j);
Reply reply_from_json(const nlohmann::json& j);
Exchange exchange_from_json(const nlohmann::json& j);

// Reads a recorded run file (or a bare JSON array of exchanges).
std::vector<Exchange> load_exchanges(const std::string& path);
void save_exchanges(const std::string& path, const std::vector<Exchange>& exchanges);

}  // namespace tessera::llm
