// evaluator/stopping_rule.h — when the timing of a shape stops (EVALUATION.md):
// after at least `min_samples` kept samples, once the relative standard error of the
// candidate's samples (and of the baseline's, when it is timed beside it) is below
// `target_rse`; at `max_samples` kept (or four times that taken, when batches are set
// aside); and whatever the samples say, after `max_seconds` of the shape's time cap.
#pragma once

#include <vector>

namespace tessera::evaluator {

struct StoppingRule {
  int min_samples = 10;
  int max_samples = 200;
  double target_rse = 0.01;
  double max_seconds = 1.0;

  bool out_of_time(double spent_s) const { return spent_s > max_seconds; }
  // Enough samples: `baseline` null when the baseline is timed elsewhere.
  bool enough(const std::vector<double>& candidate, const std::vector<double>* baseline, int taken) const;
};

}  // namespace tessera::evaluator
