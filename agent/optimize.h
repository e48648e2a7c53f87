// agent/optimize.h — the optimization loop: a strategy proposes template
// configurations, codegen compiles them on all cores, workers (one per GPU)
// judge them, and every outcome lands in the store.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/gpu_selection.h"
#include "agent/proposer_llm.h"
#include "evaluator/l2_flush.h"
#include "evaluator/stopping_rule.h"

namespace tessera::agent {

// Who proposes candidates: the search over the templates, the language model, or
// hybrid (the search with half the budget, then the model).
enum class Proposer { search, llm, hybrid };
const char* proposer_name(Proposer p);          // "search" | "llm" | "hybrid"
Proposer parse_proposer(const std::string& s);  // throws std::invalid_argument naming the choices

struct OptimizeOptions {
  std::string op;
  std::string db = "runs/tessera.db";
  size_t budget = 100;         // evaluations (candidates proposed)
  double time_limit_s = 1e30;  // wall-clock limit
  std::string strategy;        // empty: the default strategy
  std::string arch;            // empty: the local GPU's, else sm_90a
  GpuSelection gpus;           // all (default) | none | 0,1,...
  std::string template_name;   // empty: every template
  bool warm_start = true;      // start from the template's results on another GPU model in the store
  unsigned long long seed = 1;
  double request_timeout_s = 0;  // 0: derived from the baseline's time
  bool quiet = false;
  int seeds = 3;                                            // validation seeds per shape
  double max_seconds_per_shape = 1.0;                       // timing cap per benchmark shape
  evaluator::L2Flush l2_flush = evaluator::L2Flush::write;  // how L2 is evicted before each timed launch
  // What ends a shape's timing under its caps (evaluator/stopping_rule.h)
  evaluator::StoppingCriterion stopping_rule = evaluator::StoppingCriterion::rse;
  double graph_below_ms = 0.02;  // programs shorter than this are timed as a replayed graph (0: never)
  Proposer proposer = Proposer::search;
  LlmOptions llm;  // --llm-* (proposer llm or hybrid)
};

// The strategy optimize uses when none is named (see docs/search.md).
std::string default_strategy();

// How `budget` evaluations are shared among templates whose spaces hold `sizes` valid
// configurations: evenly, except that no template gets more than its space holds and
// what a small one cannot use goes to the others (smallest first, each taking at most
// an even share of what is left). Shares are in the order of `sizes`.
std::vector<size_t> share_budget(size_t budget, const std::vector<size_t>& sizes);

// Runs the loop; returns a process exit code (0 ok, 2 usage error, 1 failure).
int optimize(const OptimizeOptions& o);

}  // namespace tessera::agent
