// agent/llm/config.h — how to reach a model: the provider, where it listens, which
// model, the NAME of the environment variable that holds the key (never the key
// itself), timeouts, retries and the per-run caps. Filled by the CLI from flags,
// then from TESSERA_LLM_* environment variables (config_from_env). The key is read
// from the environment by the client when it is built, and nowhere else.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace tessera::llm {

enum class Provider { OpenAI, Anthropic };

const char* to_string(Provider provider);
// "openai" (also "openai-compatible", "vllm", "ollama", "llamacpp") or "anthropic".
std::optional<Provider> parse_provider(const std::string& name);

// Caps for one run, shared by every client of the run (see RunBudget). Zero or unset
// means no cap.
struct BudgetLimits {
  int64_t max_calls = 0;                          // complete() calls that reach the network
  int64_t max_tokens = 0;                         // prompt + completion tokens, summed over the run
  std::optional<double> price_prompt_per_1k;      // currency units per 1000 tokens
  std::optional<double> price_completion_per_1k;  // defaults to the prompt price
  std::optional<double> max_cost;                 // needs a price
};

struct LlmConfig {
  Provider provider = Provider::OpenAI;
  std::string base_url;  // empty: https://api.openai.com/v1 or https://api.anthropic.com
  std::string model;     // required
  // Name of the environment variable holding the key. Empty: TESSERA_LLM_KEY, then
  // OPENAI_API_KEY / ANTHROPIC_API_KEY. A key is required when the variable is named
  // explicitly or when the endpoint is the provider's hosted default; a local
  // server (vLLM, llama.cpp, Ollama) may run without one.
  std::string key_env;

  double timeout_s = 600;          // whole request, per attempt
  double connect_timeout_s = 10;   // TCP + TLS
  int max_retries = 4;             // extra attempts after the first
  double backoff_initial_s = 2;    // doubled at each retry ...
  double backoff_max_s = 60;       // ... up to this
  double max_retry_after_s = 300;  // a longer Retry-After is not waited for

  int max_output_tokens = 16384;  // per reply
  std::optional<double> temperature;
  // OpenAI-compatible only: the request field for the reply length. Newer OpenAI
  // models want "max_completion_tokens"; most servers accept "max_tokens".
  std::string max_tokens_field = "max_tokens";
  std::string anthropic_version = "2023-06-01";

  BudgetLimits limits;
};

// The URL the client will POST to ({base}/chat/completions or {base}/v1/messages).
std::string endpoint_url(const LlmConfig& config);
// The base URL with the provider default applied and trailing slashes removed.
std::string effective_base_url(const LlmConfig& config);

using EnvLookup = std::function<const char*(const char*)>;
EnvLookup process_env();

// Overlays TESSERA_LLM_PROVIDER, _BASE_URL, _MODEL, _KEY_ENV, _TIMEOUT, _MAX_RETRIES,
// _MAX_CALLS, _MAX_TOKENS, _MAX_OUTPUT_TOKENS, _MAX_TOKENS_FIELD, _PRICE_IN,
// _PRICE_OUT, _MAX_COST on
// `base`. Throws LlmError(Config) naming the variable when a value does not parse.
LlmConfig config_from_env(LlmConfig base = {}, const EnvLookup& env = process_env());

// Checks what can be checked without the network (model set, URL scheme, caps).
// Throws LlmError(Config).
void validate(const LlmConfig& config);

}  // namespace tessera::llm
