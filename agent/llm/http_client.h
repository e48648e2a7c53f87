// agent/llm/http_client.h — the LlmClient that talks to a real server: reads the
// key from the environment once, sends through a ProviderProtocol, retries with
// exponential backoff on 429/408/409/5xx, timeouts and connection errors (honouring
// Retry-After), charges the run's RunBudget and redacts the key from everything it
// returns, throws or logs. make_client() is the entry point for the CLI.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "agent/llm/budget.h"
#include "agent/llm/client.h"
#include "agent/llm/config.h"
#include "agent/llm/protocol.h"
#include "agent/llm/redact.h"

namespace tessera::llm {

using LogSink = std::function<void(const std::string&)>;

class HttpLlmClient final : public LlmClient {
 public:
  // Throws LlmError(Config) for an invalid config and LlmError(MissingKey) when the
  // key's variable is required but unset. `budget` may be shared with other clients;
  // null gives this client its own, built from config.limits.
  HttpLlmClient(LlmConfig config, std::unique_ptr<ProviderProtocol> protocol,
                std::shared_ptr<RunBudget> budget = nullptr, const EnvLookup& env = process_env());

  Reply complete(const Conversation& conversation) override;
  std::string provider_name() const override { return protocol_->name(); }

  // Receives one line per retry and per failed call, already redacted.
  void set_log(LogSink log) { log_ = std::move(log); }
  const LlmConfig& config() const { return config_; }
  RunBudget& budget() { return *budget_; }
  bool has_key() const { return !key_.empty(); }

 private:
  Reply attempt_until_done(const std::string& body);
  void log(const std::string& line) const;

  LlmConfig config_;
  std::unique_ptr<ProviderProtocol> protocol_;
  std::shared_ptr<RunBudget> budget_;
  std::string key_;           // never leaves this object except in the request headers
  std::string key_variable_;  // its variable's name, for error hints
  Redactor redact_;
  std::string url_;
  LogSink log_;
};

// Which environment variable the key is read from, and whether it must be set;
// exposed for `tessera doctor` and the CLI's error messages. Never returns the key.
struct KeySource {
  std::string variable;  // empty: none found and none required
  bool required = false;
  bool present = false;
};
KeySource locate_key(const LlmConfig& config, const EnvLookup& env = process_env());

std::unique_ptr<LlmClient> make_client(const LlmConfig& config, std::shared_ptr<RunBudget> budget = nullptr,
                                       const EnvLookup& env = process_env());

}  // namespace tessera::llm
