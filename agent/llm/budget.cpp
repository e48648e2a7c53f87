// agent/llm/budget.cpp — RunBudget: counting calls, tokens and cost against the
// run's caps, under a mutex so that parallel proposers share one budget.
#include "agent/llm/budget.h"

#include <fmt/format.h>

#include "agent/llm/client.h"

namespace tessera::llm {

RunBudget::RunBudget(BudgetLimits limits) : limits_(std::move(limits)) {
  if (limits_.max_cost && !limits_.price_prompt_per_1k && !limits_.price_completion_per_1k)
    throw LlmError(LlmErrorKind::Config,
                   "a maximum cost per run needs a price per 1000 tokens "
                   "(TESSERA_LLM_PRICE_IN / TESSERA_LLM_PRICE_OUT)");
}

double RunBudget::cost_of(int64_t prompt_tokens, int64_t completion_tokens) const {
  double in = limits_.price_prompt_per_1k.value_or(limits_.price_completion_per_1k.value_or(0));
  double out = limits_.price_completion_per_1k.value_or(in);
  return (double(prompt_tokens) * in + double(completion_tokens) * out) / 1000.0;
}

void RunBudget::reserve_call() {
  std::lock_guard lock(mutex_);
  if (limits_.max_calls > 0 && usage_.calls >= limits_.max_calls)
    throw LlmError(LlmErrorKind::BudgetExceeded, fmt::format("LLM call cap reached: {} of {} calls used in this run",
                                                             usage_.calls, limits_.max_calls));
  int64_t tokens = usage_.prompt_tokens + usage_.completion_tokens;
  if (limits_.max_tokens > 0 && tokens >= limits_.max_tokens)
    throw LlmError(LlmErrorKind::BudgetExceeded,
                   fmt::format("LLM token cap reached: {} of {} tokens used in this run", tokens, limits_.max_tokens));
  if (limits_.max_cost && usage_.cost >= *limits_.max_cost)
    throw LlmError(LlmErrorKind::BudgetExceeded, fmt::format("LLM cost cap reached: {:.4f} of {:.4f} spent in this run",
                                                             usage_.cost, *limits_.max_cost));
  ++usage_.calls;
}

void RunBudget::record(int64_t prompt_tokens, int64_t completion_tokens) {
  std::lock_guard lock(mutex_);
  usage_.prompt_tokens += prompt_tokens;
  usage_.completion_tokens += completion_tokens;
  usage_.cost += cost_of(prompt_tokens, completion_tokens);
}

BudgetUsage RunBudget::usage() const {
  std::lock_guard lock(mutex_);
  return usage_;
}

std::string RunBudget::summary() const {
  BudgetUsage u = usage();
  std::string s = fmt::format("{} calls, {} tokens ({} prompt + {} completion)", u.calls,
                              u.prompt_tokens + u.completion_tokens, u.prompt_tokens, u.completion_tokens);
  if (limits_.price_prompt_per_1k || limits_.price_completion_per_1k) s += fmt::format(", cost {:.4f}", u.cost);
  return s;
}

}  // namespace tessera::llm
