// search/strategy.h — search strategies and the Tuning session they drive.
//
// A Tuning wraps a CostFunction with the bookkeeping every strategy needs: a
// budget in evaluations and in seconds, memory of every configuration already
// tried (failed ones are never retried), and the best so far. Strategies only
// propose configurations; they are deterministic for a given seed.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "search/cost.h"
#include "search/space.h"

namespace tessera::search {

class Prior;  // search/prior.h

struct Budget {
  size_t max_evals = 100;
  double max_seconds = 1e30;  // wall or simulated seconds, as the CostFunction reports
  // Evaluations that can run at once (the GPU workers of a real run; 1 in replay).
  // Strategies propose at least two per worker in a batch (batch_width), so that a
  // batch keeps every GPU busy and its tail (the last evaluation, while the other
  // GPUs wait for the next batch) is a small part of it.
  size_t parallel = 1;
  // The strategy's own time (between one evaluate() and the next) counts against
  // max_seconds, so that a model that thinks for long pays for it as a GPU would
  // wait for it. In replay, budgets in evaluations are not affected.
  bool count_strategy_time = true;
};

struct Trial {
  Config config;
  Outcome outcome;
};

class Tuning {
 public:
  Tuning(const Space& space, CostFunction& cost, Budget budget);

  // Evaluates those not seen before (up to what the budget allows); returns the
  // outcome of every config in the batch (memoized ones included). Invalid
  // configurations get ok=false, failure="invalid", and cost no budget; so do
  // outcomes the cost function answers from stored history (Outcome::recorded),
  // so a resumed search spends its budget on configurations it has not measured.
  std::vector<Outcome> evaluate(const std::vector<Config>& batch);
  Outcome evaluate_one(const Config& c) { return evaluate({c}).front(); }

  bool exhausted() const;  // budget spent, or every valid config seen
  // Makes exhausted() true once `evals` evaluations are spent (the budget still
  // applies), so that a strategy can hand another one part of its budget;
  // nullopt lifts the limit.
  void limit_spent(std::optional<size_t> evals) { limit_ = evals; }
  bool seen(const Config& c) const;
  const std::vector<Trial>& history() const { return history_; }
  std::optional<Trial> best() const;
  size_t evals() const { return history_.size(); }  // configurations with an outcome
  size_t spent() const { return spent_; }           // of those, evaluated now (not recorded)
  double seconds() const { return seconds_; }       // evaluations' and (count_strategy_time) the strategy's
  double strategy_seconds() const { return strategy_seconds_; }  // the strategy's own, between evaluations
  const Space& space() const { return space_; }
  const Budget& budget() const { return budget_; }
  // What another device taught about this space (a warm start, search/prior.h), or
  // null. Strategies that know it order their first candidates by it.
  void set_prior(std::shared_ptr<const Prior> prior) { prior_ = std::move(prior); }
  const Prior* prior() const { return prior_.get(); }
  // A strategy's batch size: its own `base`, widened to 2 per parallel evaluation.
  size_t batch_width(size_t base) const { return std::max(base, 2 * std::max<size_t>(1, budget_.parallel)); }

 private:
  const Space& space_;
  CostFunction& cost_;
  Budget budget_;
  std::vector<Trial> history_;
  std::map<Config, size_t> index_;
  double seconds_ = 0;
  double strategy_seconds_ = 0;
  std::chrono::steady_clock::time_point since_;  // the last return to the strategy
  size_t spent_ = 0;
  std::optional<size_t> limit_;
  std::shared_ptr<const Prior> prior_;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // Runs until tuning.exhausted() or the strategy has nothing left to propose.
  virtual void run(Tuning& tuning, uint64_t seed) = 0;
};

// Known names: "exhaustive", "random", "annealing", "genetic", "greedy_ils", "bayes",
// "genetic_ils", "portfolio" (see strategy_names()). Throws std::invalid_argument on an unknown name.
std::unique_ptr<Strategy> make_strategy(const std::string& name);
std::vector<std::string> strategy_names();

// The strategy `tessera optimize` uses unless told otherwise: the best scorer of
// `tessera search-bench` on the recorded spaces (docs/search.md has the table).
std::string default_strategy();

}  // namespace tessera::search
