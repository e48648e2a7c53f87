// evaluator/stopping_rule.h — when the timing of a shape stops (EVALUATION.md). Two
// criteria, chosen by name (`--stopping-rule`), under the same caps:
//   rse (the default): once the relative standard error of the candidate's kept
//        samples (and of the baseline's, when it is timed beside it) is below
//        `target_rse`;
//   plateau: once the entropy of the samples' distribution has stopped rising over
//        the last `plateau.window` samples, for the candidate and the baseline alike
//        (after nvbench's "entropy" criterion; see PlateauRule).
// Either way: never before `min_samples` kept; always at `max_samples` kept (or four
// times that taken, when batches are set aside); and whatever the samples say, after
// `max_seconds` of the shape's time cap.
//
// What does not live here: how samples are taken and which batches are kept
// (judge_timing.cpp, batch_filter.h), and their statistics (report.h's summarize).
#pragma once

#include <string>
#include <vector>

namespace tessera::evaluator {

enum class StoppingCriterion { rse, plateau };
const char* stopping_criterion_name(StoppingCriterion c);          // "rse" | "plateau"
StoppingCriterion parse_stopping_criterion(const std::string& s);  // throws std::invalid_argument naming the choices

// The plateau criterion. Its running measure is the Shannon entropy (bits) of the
// samples seen so far, binned on a log scale (bins `bin_width` wide relative to the
// value, centred on the first sample: scale-free, so a 5 µs and a 5 ms kernel are
// judged alike). While samples
// keep landing in new bins (a drifting machine, a distribution not yet covered) the
// entropy rises; once they only refill bins already seen it levels off. The rule
// fits a line to the entropy after each of the last `window` samples and stops when
// that line rises by at most `max_rise` bits across the window (a falling entropy,
// samples concentrating, stops too). A quiet stream fills few bins and levels off
// early; a noisy one fills more and takes longer; a drifting one never levels off
// and runs to its cap.
//
// nvbench's entropy criterion (nvbench/detail/entropy_criterion.cxx) keys on exact
// sample values, keeps a window of 299 entropies and stops when the regression's
// slope is under 0.048 degrees with R² >= 0.36. tessera's samples come in batches of
// ten and are capped at 200, so the window is shorter and the values are binned (the
// event timer's 0.5 µs steps are finer than the noise of most kernels timed here,
// and exact keys would make every sample of a long kernel a bin of its own); R² is
// not asked for: a levelled entropy wanders about a constant, where a line explains
// nothing and R² is near 0 by construction.
struct PlateauRule {
  int window = 50;           // samples the entropy's trend is fitted over
  double bin_width = 0.005;  // relative width of a bin (0.5 %)
  double max_rise = 0.05;    // bits the fitted entropy may rise across the window
  // Entropy (bits) of samples[0..n) for each n in [1, samples.size()].
  std::vector<double> entropy_trace(const std::vector<double>& samples) const;
  // Bits the least-squares line through the last `window` entropies rises across the
  // window; +infinity while there are fewer than `window` samples.
  double rise(const std::vector<double>& samples) const;
  bool levelled(const std::vector<double>& samples) const { return rise(samples) <= max_rise; }
};

struct StoppingRule {
  int min_samples = 10;
  int max_samples = 200;
  double target_rse = 0.01;
  double max_seconds = 1.0;
  StoppingCriterion criterion = StoppingCriterion::rse;
  PlateauRule plateau;

  bool out_of_time(double spent_s) const { return spent_s > max_seconds; }
  // Enough samples: `baseline` null when the baseline is timed elsewhere.
  bool enough(const std::vector<double>& candidate, const std::vector<double>* baseline, int taken) const;

 private:
  bool settled(const std::vector<double>& samples) const;  // by the criterion alone
};

}  // namespace tessera::evaluator
