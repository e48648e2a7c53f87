// evaluator/batch_filter.h — which timing batches count, with the baseline as the
// thermometer of the machine.
//
// The judge takes samples in batches of A/B rounds. The baseline is the same
// program in every batch, so a batch whose baseline ran markedly slower than the
// baseline's best was taken while the machine was disturbed, and both its candidate
// and its baseline samples are set aside. On the H200 (2026-11-30) one rmsnorm shape
// (32768x1024) went through such episodes — abrupt, tens to hundreds of milliseconds
// long, the SM clock at 1980 MHz with no clock event reason — in which the
// candidate ran ~50 us slower per launch and the baseline ~60 us: one process in
// two measured that shape 30-90 % slow, candidate and baseline alike.
#pragma once

#include <vector>

namespace tessera::evaluator {

struct BatchSelection {
  std::vector<double> candidate_ms, baseline_ms;  // samples of the kept batches
  int kept = 0, total = 0;                        // batches
  double reference_ms = 0;                        // the baseline batch median the others are held to
  bool prior_met = true;                          // false: no batch came within tolerance of the prior, so all are kept
};

// Keeps the batches whose baseline median is at most (1 + tolerance) times the
// reference: the lowest baseline batch median seen, or `prior_ms` (the baseline's
// usual time on this device, 0 if unknown) when that is lower. When no batch
// qualifies (a prior from other conditions), all are kept and the reference is the
// lowest batch median.
BatchSelection select_batches(const std::vector<std::vector<double>>& candidate_batches,
                              const std::vector<std::vector<double>>& baseline_batches, double prior_ms,
                              double tolerance);

}  // namespace tessera::evaluator
