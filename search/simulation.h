// search/simulation.h — a CostFunction that replays recorded measurements.
//
// A Simulation holds one recorded Outcome per configuration (from a Kernel Tuner
// cache, or from tessera's own recorded runs turned into Records by the caller)
// and answers evaluate() from them, so strategies can be run and scored without a
// GPU. Its Space holds exactly the recorded configurations, failed ones included:
// a failure is a measured fact a strategy must discover, a constraint is not.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "search/cost.h"
#include "search/kt_cache.h"
#include "search/space.h"

namespace tessera::search {

struct Record {
  std::vector<std::string> values;  // one per parameter, as in Param::values
  Outcome outcome;                  // cost, failure and simulated seconds
};

class Simulation final : public CostFunction {
 public:
  // Records whose values are not in `params` are an error (std::invalid_argument).
  Simulation(std::vector<Param> params, const std::vector<Record>& records);

  // cost = recorded time (ms); seconds = (compile + verification + benchmark) ms / 1000.
  // CompilationFailedConfig and RuntimeFailedConfig entries are in the space with
  // ok=false; InvalidConfig entries broke a constraint and are left out of it.
  static Simulation from_kt_cache(const KtCache& cache);
  // The records from_kt_cache replays (InvalidConfig entries left out).
  static std::vector<Record> records_of(const KtCache& cache);

  const Space& space() const { return space_; }
  std::vector<Outcome> evaluate(const std::vector<Config>& batch) override;

  // The recorded outcome of a configuration, or nullptr where none was recorded.
  const Outcome* recorded(const Config& c) const;
  // Costs of every successful record, ascending.
  std::vector<double> sorted_costs() const;
  size_t size() const { return table_->outcomes.size(); }
  size_t failed() const;
  size_t calls() const { return calls_; }  // configurations evaluated so far

 private:
  struct Table {
    std::vector<uint64_t> radix;  // mixed-radix weights of each parameter
    std::unordered_map<uint64_t, size_t> at;
    std::vector<Outcome> outcomes;
    uint64_t flat(const Config& c) const;
  };
  std::shared_ptr<Table> table_;
  Space space_;
  size_t calls_ = 0;
};

}  // namespace tessera::search
