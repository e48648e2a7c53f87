// search/scoring.cpp — the random-search baseline and the score of one run.
#include "search/scoring.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tessera::search {

RandomBaseline::RandomBaseline(std::vector<double> success_costs, size_t failures) {
  if (success_costs.empty()) throw std::invalid_argument("a space with no successful configuration cannot be scored");
  std::sort(success_costs.begin(), success_costs.end());
  size_t m = success_costs.size();
  median_ = m % 2 ? success_costs[m / 2] : 0.5 * (success_costs[m / 2 - 1] + success_costs[m / 2]);
  values_ = std::move(success_costs);
  values_.insert(values_.end(), failures, values_.back());
}

// P(the best of n draws is the i-th smallest, 1-based) = C(N-i, n-1) / C(N, n):
// p_1 = n/N and p_{i+1} = p_i (N-i-n+1) / (N-i).
double RandomBaseline::expected_best(size_t n) const {
  size_t total = values_.size();
  if (n == 0 || n > total) throw std::out_of_range("expected_best: n outside 1..size()");
  double p = static_cast<double>(n) / static_cast<double>(total);
  double sum = 0;
  for (size_t i = 1; i <= total - n + 1; ++i) {
    sum += values_[i - 1] * p;
    if (i < total) p *= static_cast<double>(total - i - n + 1) / static_cast<double>(total - i);
  }
  return sum;
}

std::vector<double> RandomBaseline::curve(size_t up_to) const {
  std::vector<double> out;
  for (size_t n = 1; n <= std::min(up_to, values_.size()); ++n) out.push_back(expected_best(n));
  return out;
}

size_t RandomBaseline::cutoff(double fraction) const {
  double target = median_ - fraction * (median_ - optimum());
  // expected_best falls with n: bisect.
  size_t lo = 1, hi = values_.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (expected_best(mid) <= target)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

std::vector<double> best_so_far(const std::vector<Trial>& history, double nothing_found) {
  std::vector<double> out;
  double best = std::numeric_limits<double>::infinity();
  for (const Trial& t : history) {
    if (t.outcome.ok) best = std::min(best, t.outcome.cost);
    out.push_back(std::isinf(best) ? nothing_found : best);
  }
  return out;
}

double run_score(const std::vector<double>& best, const std::vector<double>& baseline_curve, double optimum) {
  if (best.empty() || baseline_curve.empty()) return 0;
  double sum = 0;
  for (size_t n = 1; n <= baseline_curve.size(); ++n) {
    double base = baseline_curve[n - 1];
    double found = best[std::min(n, best.size()) - 1];
    double span = base - optimum;
    sum += span > 0 ? (base - found) / span : (found <= optimum ? 1.0 : 0.0);
  }
  return sum / static_cast<double>(baseline_curve.size());
}

double fraction_of_optimum(const std::vector<double>& best, size_t n, const RandomBaseline& baseline) {
  if (best.empty() || n == 0) return 0;
  return baseline.optimum() / best[std::min(n, best.size()) - 1];
}

}  // namespace tessera::search
