// agent/llm/budget.h — the per-run caps on model calls, tokens and cost. One
// RunBudget is shared (through shared_ptr) by every client of a run and by every
// thread that proposes; reserve_call() is checked before a request leaves, and
// record() adds what the provider reported afterwards.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "agent/llm/config.h"

namespace tessera::llm {

struct BudgetUsage {
  int64_t calls = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost = 0;  // 0 when no price is configured
};

class RunBudget {
 public:
  explicit RunBudget(BudgetLimits limits = {});

  // Counts one call, or throws LlmError(BudgetExceeded) naming the cap that is
  // already reached (calls, tokens or cost). A call is counted even if it fails
  // later: it may have cost tokens.
  void reserve_call();
  // Adds the tokens of a finished call. A reply that crosses a cap is still
  // returned (it was paid for); the next reserve_call() refuses.
  void record(int64_t prompt_tokens, int64_t completion_tokens);

  BudgetUsage usage() const;
  const BudgetLimits& limits() const { return limits_; }
  // "12 calls, 48211 tokens, cost 0.91" for logs and the end-of-run summary.
  std::string summary() const;

 private:
  double cost_of(int64_t prompt_tokens, int64_t completion_tokens) const;

  BudgetLimits limits_;
  mutable std::mutex mutex_;
  BudgetUsage usage_;
};

}  // namespace tessera::llm
