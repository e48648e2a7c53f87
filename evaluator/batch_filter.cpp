// evaluator/batch_filter.cpp — see batch_filter.h.
#include "evaluator/batch_filter.h"

#include <algorithm>
#include <stdexcept>

namespace tessera::evaluator {

namespace {
double median(std::vector<double> xs) {
  if (xs.empty()) return 0;
  auto mid = xs.begin() + static_cast<long>(xs.size() / 2);
  std::nth_element(xs.begin(), mid, xs.end());
  if (xs.size() % 2) return *mid;
  return (*mid + *std::max_element(xs.begin(), mid)) / 2;
}
}  // namespace

BatchSelection select_batches(const std::vector<std::vector<double>>& candidate_batches,
                              const std::vector<std::vector<double>>& baseline_batches, double prior_ms,
                              double tolerance) {
  if (candidate_batches.size() != baseline_batches.size())
    throw std::invalid_argument("select_batches: candidate and baseline batches must pair up");
  BatchSelection sel;
  sel.total = static_cast<int>(baseline_batches.size());
  std::vector<double> medians;
  for (auto& b : baseline_batches) medians.push_back(median(b));
  double lowest = 0;
  for (double m : medians)
    if (m > 0 && (lowest == 0 || m < lowest)) lowest = m;
  auto keep_within = [&](double ref) {
    sel.candidate_ms.clear();
    sel.baseline_ms.clear();
    sel.kept = 0;
    sel.reference_ms = ref;
    for (size_t i = 0; i < medians.size(); ++i) {
      if (ref > 0 && medians[i] > (1 + tolerance) * ref) continue;
      sel.candidate_ms.insert(sel.candidate_ms.end(), candidate_batches[i].begin(), candidate_batches[i].end());
      sel.baseline_ms.insert(sel.baseline_ms.end(), baseline_batches[i].begin(), baseline_batches[i].end());
      ++sel.kept;
    }
  };
  keep_within(prior_ms > 0 && (lowest == 0 || prior_ms < lowest) ? prior_ms : lowest);
  if (sel.kept == 0) {
    keep_within(lowest);
    sel.prior_met = false;
  }
  return sel;
}

}  // namespace tessera::evaluator
