// agent/llm/http_client.cpp — HttpLlmClient: key lookup, the retry loop with
// backoff and Retry-After, budget charging, error classification and redaction.
#include "agent/llm/http_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "agent/llm/http.h"

namespace tessera::llm {

namespace {

const char* default_key_variable(Provider p) {
  return p == Provider::Anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
}

bool is_hosted_default(const LlmConfig& config) {
  std::string base = effective_base_url(config);
  return base.find("api.openai.com") != std::string::npos || base.find("api.anthropic.com") != std::string::npos;
}

bool retryable_status(int status) {
  return status == 408 || status == 409 || status == 429 || (status >= 500 && status <= 599);
}

std::string status_hint(int status, const LlmConfig& config, const std::string& key_variable) {
  if (status == 401 || status == 403)
    return key_variable.empty() ? " (the server wants a key: set TESSERA_LLM_KEY or name a variable with "
                                  "TESSERA_LLM_KEY_ENV)"
                                : fmt::format(" (check the key in ${})", key_variable);
  if (status == 404)
    return fmt::format(" (check the base URL '{}' and the model '{}')", effective_base_url(config), config.model);
  return "";
}

double jitter(double seconds) {
  thread_local std::mt19937 rng{std::random_device{}()};
  return seconds * std::uniform_real_distribution<double>(1.0, 1.25)(rng);
}

}  // namespace

KeySource locate_key(const LlmConfig& config, const EnvLookup& env) {
  KeySource source;
  auto present = [&](const std::string& name) {
    const char* v = env(name.c_str());
    return v != nullptr && *v != '\0';
  };
  if (!config.key_env.empty()) {
    source.variable = config.key_env;
    source.required = true;
    source.present = present(config.key_env);
    return source;
  }
  for (std::string name : {std::string("TESSERA_LLM_KEY"), std::string(default_key_variable(config.provider))}) {
    if (present(name)) {
      source.variable = name;
      source.present = true;
      source.required = is_hosted_default(config);
      return source;
    }
  }
  source.required = is_hosted_default(config);
  if (source.required) source.variable = default_key_variable(config.provider);
  return source;
}

HttpLlmClient::HttpLlmClient(LlmConfig config, std::unique_ptr<ProviderProtocol> protocol,
                             std::shared_ptr<RunBudget> budget, const EnvLookup& env)
    : config_(std::move(config)), protocol_(std::move(protocol)), budget_(std::move(budget)) {
  validate(config_);
  if (!budget_) budget_ = std::make_shared<RunBudget>(config_.limits);
  KeySource source = locate_key(config_, env);
  if (source.required && !source.present)
    throw LlmError(LlmErrorKind::MissingKey,
                   fmt::format("the API key for {} at {} is not set: export {}=<your key> "
                               "(or name another variable with TESSERA_LLM_KEY_ENV)",
                               protocol_->name(), effective_base_url(config_), source.variable));
  if (source.present) {
    key_ = env(source.variable.c_str());
    key_variable_ = source.variable;
  }
  redact_ = Redactor(key_);
  url_ = endpoint_url(config_);
}

void HttpLlmClient::log(const std::string& line) const {
  if (log_) log_(to_valid_utf8(redact_(line)));
}

Reply HttpLlmClient::complete(const Conversation& conversation) {
  budget_->reserve_call();  // throws BudgetExceeded before anything is sent
  Exchange exchange{conversation, {}, {}, std::nullopt, protocol_->name()};
  try {
    exchange.reply = attempt_until_done(protocol_->request_body(conversation, config_));
    notify(exchange);
    return exchange.reply;
  } catch (const LlmError& e) {
    exchange.error = to_valid_utf8(redact_(e.what()));
    exchange.error_kind = e.kind();
    notify(exchange);
    log(fmt::format("LLM call failed: {}", exchange.error));
    throw LlmError(e.kind(), exchange.error, e.http_status(), e.attempts());
  }
}

Reply HttpLlmClient::attempt_until_done(const std::string& body) {
  HttpRequest request{url_, protocol_->headers(key_, config_), body, config_.timeout_s, config_.connect_timeout_s};
  auto start = std::chrono::steady_clock::now();
  const int attempts_allowed = config_.max_retries + 1;

  for (int attempt = 1;; ++attempt) {
    HttpResult result = http_post(request);
    LlmErrorKind kind;
    std::string what;
    bool retry = false;
    std::optional<double> retry_after;

    if (result.failure != TransportFailure::None) {
      kind = result.failure == TransportFailure::Timeout ? LlmErrorKind::Timeout : LlmErrorKind::Connection;
      what = result.failure == TransportFailure::Timeout
                 ? fmt::format("no complete answer from {} within {:g} s ({})", url_, config_.timeout_s,
                               result.failure_text)
                 : fmt::format("connection to {} failed: {}", url_, result.failure_text);
      retry = true;
    } else if (result.status >= 200 && result.status < 300) {
      Reply reply;
      try {
        reply = protocol_->parse_reply(result.body);
      } catch (const LlmError& e) {
        throw LlmError(e.kind(), redact_(e.what()), result.status, attempt);
      }
      reply.text = redact_(reply.text);
      reply.model = redact_(reply.model.empty() ? config_.model : reply.model);
      reply.finish_reason = redact_(reply.finish_reason);
      reply.http_status = result.status;
      reply.attempts = attempt;
      reply.latency_s = result.seconds;
      reply.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      budget_->record(reply.prompt_tokens, reply.completion_tokens);
      return reply;
    } else {
      kind = result.status == 429 ? LlmErrorKind::RateLimited : LlmErrorKind::Http;
      what = fmt::format("HTTP {} from {}: {}{}", result.status, url_, server_error_text(result.body),
                         status_hint(result.status, config_, key_variable_));
      retry = retryable_status(result.status);
      retry_after = result.retry_after_s;
    }

    what = redact_(what);
    if (!retry || attempt >= attempts_allowed) {
      if (retry && attempts_allowed > 1) what += fmt::format(" (gave up after {} attempts)", attempt);
      throw LlmError(kind, what, result.status, attempt);
    }
    double wait = std::min(config_.backoff_initial_s * double(1LL << std::min(attempt - 1, 30)), config_.backoff_max_s);
    wait = jitter(wait);
    if (retry_after) {
      if (*retry_after > config_.max_retry_after_s)
        throw LlmError(kind,
                       what + fmt::format(" (the server asks to wait {:g} s, more than the "
                                          "{:g} s tessera waits)",
                                          *retry_after, config_.max_retry_after_s),
                       result.status, attempt);
      wait = *retry_after;
    }
    log(fmt::format("{}; retry {} of {} in {:.1f} s", what, attempt, config_.max_retries, wait));
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
}

std::unique_ptr<LlmClient> make_client(const LlmConfig& config, std::shared_ptr<RunBudget> budget,
                                       const EnvLookup& env) {
  return std::make_unique<HttpLlmClient>(config, make_protocol(config.provider), std::move(budget), env);
}

}  // namespace tessera::llm
