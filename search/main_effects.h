// search/main_effects.h — the cheapest model of a space: each parameter value's
// average effect on log cost.
//
// Fitted on a Tuning's history: for every parameter and value, the mean log cost
// of the configurations evaluated with that value, less the mean of all of them
// (failures count as the worst success). A configuration's prediction is the sum
// of its values' effects; a value not seen yet contributes nothing. It ignores
// every interaction between parameters, which is why it only orders candidates
// a local search would consider anyway (greedy_ils), never replaces evaluating them.
#pragma once

#include <vector>

#include "search/strategy.h"

namespace tessera::search {

class MainEffects {
 public:
  explicit MainEffects(const Tuning& tuning);

  // Predicted log cost relative to the mean; lower is better.
  double predict(const Config& c) const;

  // Stable-sorts `configs` best predicted first (ties keep their order).
  void order(std::vector<Config>& configs) const;

 private:
  std::vector<std::vector<double>> effect_;  // [parameter][value index]
};

}  // namespace tessera::search
