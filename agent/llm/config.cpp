// agent/llm/config.cpp — provider names, endpoint URLs, reading TESSERA_LLM_*
// variables and checking a configuration before any request is sent. The key's
// value is never read here; only the name of its variable is handled.
#include "agent/llm/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "agent/llm/client.h"

namespace tessera::llm {

const char* to_string(Provider provider) {
  switch (provider) {
    case Provider::OpenAI:
      return "openai";
    case Provider::Anthropic:
      return "anthropic";
  }
  return "?";
}

std::optional<Provider> parse_provider(const std::string& raw) {
  std::string name = raw;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (name == "openai" || name == "openai-compatible" || name == "vllm" || name == "ollama" || name == "llamacpp" ||
      name == "llama.cpp" || name == "sglang" || name == "nim")
    return Provider::OpenAI;
  if (name == "anthropic" || name == "claude") return Provider::Anthropic;
  return std::nullopt;
}

std::string effective_base_url(const LlmConfig& config) {
  std::string base = config.base_url;
  if (base.empty())
    base = config.provider == Provider::Anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

std::string endpoint_url(const LlmConfig& config) {
  std::string base = effective_base_url(config);
  if (config.provider == Provider::Anthropic) {
    // Accept a base given with or without the version segment.
    if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) return base + "/messages";
    return base + "/v1/messages";
  }
  return base + "/chat/completions";
}

EnvLookup process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

namespace {

double parse_double(const char* var, const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= 0))
    throw LlmError(LlmErrorKind::Config, fmt::format("{}='{}' is not a non-negative number", var, text));
  return v;
}

int64_t parse_int(const char* var, const char* text) {
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 0)
    throw LlmError(LlmErrorKind::Config, fmt::format("{}='{}' is not a non-negative integer", var, text));
  return v;
}

}  // namespace

LlmConfig config_from_env(LlmConfig c, const EnvLookup& env) {
  auto get = [&](const char* name) -> const char* {
    const char* v = env(name);
    return (v && *v) ? v : nullptr;
  };
  if (const char* v = get("TESSERA_LLM_PROVIDER")) {
    auto p = parse_provider(v);
    if (!p)
      throw LlmError(LlmErrorKind::Config, fmt::format("TESSERA_LLM_PROVIDER='{}': expected openai or anthropic", v));
    c.provider = *p;
  }
  if (const char* v = get("TESSERA_LLM_BASE_URL")) c.base_url = v;
  if (const char* v = get("TESSERA_LLM_MODEL")) c.model = v;
  if (const char* v = get("TESSERA_LLM_KEY_ENV")) c.key_env = v;
  if (const char* v = get("TESSERA_LLM_MAX_TOKENS_FIELD")) c.max_tokens_field = v;
  if (const char* v = get("TESSERA_LLM_TIMEOUT")) c.timeout_s = parse_double("TESSERA_LLM_TIMEOUT", v);
  if (const char* v = get("TESSERA_LLM_MAX_RETRIES")) c.max_retries = int(parse_int("TESSERA_LLM_MAX_RETRIES", v));
  if (const char* v = get("TESSERA_LLM_MAX_CALLS")) c.limits.max_calls = parse_int("TESSERA_LLM_MAX_CALLS", v);
  if (const char* v = get("TESSERA_LLM_MAX_TOKENS")) c.limits.max_tokens = parse_int("TESSERA_LLM_MAX_TOKENS", v);
  if (const char* v = get("TESSERA_LLM_MAX_OUTPUT_TOKENS"))
    c.max_output_tokens = int(parse_int("TESSERA_LLM_MAX_OUTPUT_TOKENS", v));
  if (const char* v = get("TESSERA_LLM_PRICE_IN"))
    c.limits.price_prompt_per_1k = parse_double("TESSERA_LLM_PRICE_IN", v);
  if (const char* v = get("TESSERA_LLM_PRICE_OUT"))
    c.limits.price_completion_per_1k = parse_double("TESSERA_LLM_PRICE_OUT", v);
  if (const char* v = get("TESSERA_LLM_MAX_COST")) c.limits.max_cost = parse_double("TESSERA_LLM_MAX_COST", v);
  return c;
}

void validate(const LlmConfig& c) {
  if (c.model.empty())
    throw LlmError(LlmErrorKind::Config, "no LLM model configured: pass --llm-model or set TESSERA_LLM_MODEL");
  std::string base = effective_base_url(c);
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0)
    throw LlmError(LlmErrorKind::Config, fmt::format("LLM base URL '{}' must start with http:// or https://", base));
  if (!(c.timeout_s > 0) || !(c.connect_timeout_s > 0))
    throw LlmError(LlmErrorKind::Config, "LLM timeouts must be positive");
  if (c.max_retries < 0 || c.max_output_tokens <= 0)
    throw LlmError(LlmErrorKind::Config, "LLM max retries must be >= 0 and max output tokens > 0");
  if (c.limits.max_cost && !c.limits.price_prompt_per_1k && !c.limits.price_completion_per_1k)
    throw LlmError(LlmErrorKind::Config,
                   "a maximum cost per run needs a price per 1000 tokens "
                   "(TESSERA_LLM_PRICE_IN / TESSERA_LLM_PRICE_OUT)");
}

}  // namespace tessera::llm
