// search/prior.h — what another GPU taught about a space: the warm start.
//
// A Prior ranks the configurations of a space by how they did elsewhere: recorded
// results of the same template (or kernel) on another device. Only the order of
// those results travels, never their times (another GPU is faster or slower as a
// whole), as a rank quantile: 0 the best recorded there, 1 the worst, failures 1.
//
// Parameters are matched by name. A value this space has and the other device did
// not record is snapped to the nearest recorded one (by number, on a log scale
// where both are positive: a block of 96 is judged like the 112 or 64 measured
// there); parameters only the other device had are projected out (a
// configuration takes the best quantile of the recorded ones that agree with it on
// the shared parameters); parameters only this space has are free. Strategies use
// it to order what they try first (strategy_portfolio.cpp), as the model's prior
// mean (strategy_bayes.cpp) and to restart local search (strategy_greedy_ils.cpp);
// nothing here runs.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "search/simulation.h"
#include "search/space.h"

namespace tessera::search {

class Prior {
 public:
  // `params` and `records` are the other device's (Record values are strings of
  // its Param::values). Throws std::invalid_argument when no parameter is shared.
  Prior(const Space& space, const std::vector<Param>& params, const std::vector<Record>& records, std::string source);

  const std::string& source() const { return source_; }  // e.g. "NVIDIA A100-PCIE-40GB, 4362 results"
  size_t records() const { return records_; }

  // Rank quantile on the other device of c's shared-parameter projection; NaN
  // where no recorded configuration agrees with it.
  double quantile(const Config& c) const;

  // The space's valid configurations with a quantile, best first (ties: fewer
  // snapped values first, then lexicographic), at most `n` of them.
  std::vector<Config> ranked(size_t n) const;
  // All of them with their quantiles, in that order.
  const std::vector<std::pair<Config, double>>& ranking() const { return ranked_; }

 private:
  std::vector<int> project(const Config& c, int* snapped) const;

  std::string source_;
  size_t records_ = 0;
  std::vector<std::vector<int>> snap_;             // [target parameter][value] -> source value index, -1 unshared
  std::vector<std::vector<bool>> exact_;           // [target parameter][value] -> recorded as such there
  std::vector<int> source_of_;                     // target parameter -> source parameter, -1 unshared
  std::map<std::vector<int>, double> best_;        // projection onto the shared parameters -> best quantile
  std::vector<std::pair<Config, double>> ranked_;  // valid configs with a quantile, sorted
};

// A Prior from a Kernel Tuner cache of the same kernel on another device.
std::shared_ptr<const Prior> prior_from_kt_cache(const Space& space, const KtCache& other);

}  // namespace tessera::search
