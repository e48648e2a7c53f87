// search/scoring.h — how good a strategy is on a recorded space (Willemsen et al., FGCS 2024).
//
// The baseline is random search without replacement: its expected best cost after
// n evaluations, computed exactly from the space's sorted costs. A run's score at
// budget n is (baseline(n) - best found(n)) / (baseline(n) - optimum): 0 is as good
// as random search, 1 has found the optimum. The score of a run is the mean over
// n = 1 .. cutoff, where the cutoff is the budget at which random search is
// expected to have come 95% of the way from the median to the optimum.
// Running strategies and printing tables is search/bench's job.
#pragma once

#include <cstddef>
#include <vector>

#include "search/strategy.h"

namespace tessera::search {

class RandomBaseline {
 public:
  // Costs of the successful configurations of a space, and how many failed. A
  // failed configuration counts as a draw that finds nothing better than the worst
  // success, which is also what a strategy's run is charged for it.
  RandomBaseline(std::vector<double> success_costs, size_t failures);

  size_t size() const { return values_.size(); }  // configurations, failed included
  double optimum() const { return values_.front(); }
  double worst() const { return values_.back(); }
  double median() const { return median_; }  // of the successes

  // Expected minimum cost of n distinct configurations drawn uniformly (1 <= n <= size()).
  double expected_best(size_t n) const;

  // expected_best(1), ..., expected_best(up_to).
  std::vector<double> curve(size_t up_to) const;

  // Smallest n with expected_best(n) <= median - fraction * (median - optimum).
  size_t cutoff(double fraction = 0.95) const;

 private:
  std::vector<double> values_;  // ascending; failures as the worst success
  double median_ = 0;
};

// Best cost after each evaluation of a run, in order. Before the first success,
// the worst success of the space (`nothing_found`).
std::vector<double> best_so_far(const std::vector<Trial>& history, double nothing_found);

// Mean over n = 1..cutoff of (baseline(n) - best(n)) / (baseline(n) - optimum),
// where baseline_curve = RandomBaseline::curve(cutoff). A run shorter than the
// cutoff (a strategy that stopped early) keeps its last best.
double run_score(const std::vector<double>& best, const std::vector<double>& baseline_curve, double optimum);

// optimum / best found after n evaluations (1 = optimum found); 0 if nothing found.
double fraction_of_optimum(const std::vector<double>& best, size_t n, const RandomBaseline& baseline);

}  // namespace tessera::search
