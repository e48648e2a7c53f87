// evaluator/stopping_rule.cpp — see stopping_rule.h.
#include "evaluator/stopping_rule.h"

#include "evaluator/report.h"

namespace tessera::evaluator {

bool StoppingRule::enough(const std::vector<double>& candidate, const std::vector<double>* baseline, int taken) const {
  const int kept = static_cast<int>(candidate.size());
  if (kept >= max_samples || taken >= 4 * max_samples) return true;
  return kept >= min_samples && summarize(candidate).rse < target_rse &&
         (!baseline || summarize(*baseline).rse < target_rse);
}

}  // namespace tessera::evaluator
