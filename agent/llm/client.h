// agent/llm/client.h — the one interface the agent uses to talk to a language
// model, and the plain data that crosses it: a Conversation goes in, a Reply comes
// out, and every finished call can be observed as an Exchange (what the store
// records and what a ReplayClient serves back). Providers (OpenAI-compatible,
// Anthropic), retries and budgets live in other files of this folder; this file
// holds no transport code.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::llm {

enum class Role { User, Assistant };

struct Message {
  Role role = Role::User;
  std::string content;
  friend bool operator==(const Message&, const Message&) = default;
};

// What the model is asked. The system text is sent the way each provider expects
// (a "system" message for OpenAI, the top-level "system" field for Anthropic).
struct Conversation {
  std::string system;
  std::vector<Message> messages;
  std::optional<int> max_output_tokens;  // overrides the config for this call
  std::optional<double> temperature;     // overrides the config for this call
  friend bool operator==(const Conversation&, const Conversation&) = default;
};

// What the model answered. Never holds the API key: the text and every message
// are passed through redaction before they leave the client.
struct Reply {
  std::string text;
  std::string model;          // the model the server says it used
  std::string finish_reason;  // "stop", "length", "end_turn", "max_tokens", ...
  long long prompt_tokens = 0;
  long long completion_tokens = 0;
  double latency_s = 0;  // the successful attempt
  double elapsed_s = 0;  // the whole call, retries and waits included
  int http_status = 0;   // 0 for a replayed reply that recorded none
  int attempts = 1;      // HTTP requests sent for this call
  friend bool operator==(const Reply&, const Reply&) = default;
};

enum class LlmErrorKind {
  Config,           // bad or incomplete configuration
  MissingKey,       // the named environment variable is not set
  BudgetExceeded,   // a cap on calls, tokens or cost was reached
  Timeout,          // no complete answer within the timeout (after retries)
  Connection,       // connection refused/reset, truncated transfer (after retries)
  RateLimited,      // 429 after all retries, or a Retry-After beyond what we wait
  Http,             // any other HTTP error status
  BadResponse,      // 2xx whose body is not the provider's JSON
  ReplayExhausted,  // a replay client has no recorded exchange left to serve
};

const char* to_string(LlmErrorKind kind);

// The one exception type of this folder. Its message is already redacted and says
// what to do (which variable to set, which cap was hit).
class LlmError : public std::runtime_error {
 public:
  LlmError(LlmErrorKind kind, const std::string& message, int http_status = 0, int attempts = 0)
      : std::runtime_error(message), kind_(kind), http_status_(http_status), attempts_(attempts) {}
  LlmErrorKind kind() const { return kind_; }
  int http_status() const { return http_status_; }
  int attempts() const { return attempts_; }

 private:
  LlmErrorKind kind_;
  int http_status_;
  int attempts_;
};

// One finished call, successful or not: the unit the store records and replays.
struct Exchange {
  Conversation request;
  Reply reply;                             // meaningful when error is empty
  std::string error;                       // redacted message of a failed call
  std::optional<LlmErrorKind> error_kind;  // set when the call failed
  std::string provider;                    // "openai", "anthropic", "replay"
  // What tessera made of the answer (JSON text: {"proposals": [{"name", "kind",
  // "candidates": [ids], ...}], "parse_errors"}), empty if unknown. Kept in record
  // files so that a replay can tell which of its own candidates an answer's "#id"
  // means: the recorded ids belong to the recording's database.
  std::string outcome;
};

using ExchangeObserver = std::function<void(const Exchange&)>;

class LlmClient {
 public:
  virtual ~LlmClient() = default;
  // Sends the conversation and returns the model's answer. Throws LlmError (already
  // redacted) when the call cannot succeed. Safe to call from several threads.
  virtual Reply complete(const Conversation& conversation) = 0;
  // A short name for logs and the store: "openai", "anthropic", "replay".
  virtual std::string provider_name() const = 0;

  // Called once per complete(), after it finished or failed (from the calling thread).
  void set_observer(ExchangeObserver observer) { observer_ = std::move(observer); }

 protected:
  void notify(const Exchange& exchange) const {
    if (observer_) observer_(exchange);
  }

 private:
  ExchangeObserver observer_;
};

// A stable fingerprint of a conversation's content (system + messages), used by the
// replay client to match requests and by the store to group identical prompts.
std::string conversation_fingerprint(const Conversation& conversation);

}  // namespace tessera::llm
