// agent/llm/protocol.h — what differs between providers, as pure functions of
// text: the request body, the headers (the only place the key is put on the wire),
// reading a reply and reading an error body. No I/O here, so each protocol is
// tested without a server; HttpLlmClient (http_client.h) does the sending.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/llm/client.h"
#include "agent/llm/config.h"

namespace tessera::llm {

class ProviderProtocol {
 public:
  virtual ~ProviderProtocol() = default;
  virtual const char* name() const = 0;
  virtual std::string request_body(const Conversation& conversation, const LlmConfig& config) const = 0;
  // `key` may be empty (a local server without authentication).
  virtual std::vector<std::string> headers(const std::string& key, const LlmConfig& config) const = 0;
  // Fills text, model, finish_reason and token counts from a 2xx body. Throws
  // LlmError(BadResponse) when the body is not the provider's JSON; the message may
  // quote the body, so the caller redacts it.
  virtual Reply parse_reply(const std::string& body) const = 0;
};

// OpenAI chat completions; also vLLM, SGLang, llama.cpp server, Ollama (/v1), NIM.
std::unique_ptr<ProviderProtocol> make_openai_protocol();
// Anthropic Messages API.
std::unique_ptr<ProviderProtocol> make_anthropic_protocol();
std::unique_ptr<ProviderProtocol> make_protocol(Provider provider);

// The human part of an error body: error.message, error (a string) or message;
// otherwise the start of the body. Never throws.
std::string server_error_text(const std::string& body);

}  // namespace tessera::llm
