// evaluator/stopping_rule.cpp — see stopping_rule.h.
#include "evaluator/stopping_rule.h"

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "evaluator/report.h"

namespace tessera::evaluator {

const char* stopping_criterion_name(StoppingCriterion c) {
  return c == StoppingCriterion::plateau ? "plateau" : "rse";
}

StoppingCriterion parse_stopping_criterion(const std::string& s) {
  if (s == "rse") return StoppingCriterion::rse;
  if (s == "plateau") return StoppingCriterion::plateau;
  throw std::invalid_argument("stopping rule '" + s + "': expected rse or plateau");
}

// H(n) = log2 n - (1/n) sum_b c_b log2 c_b over the bins' counts c_b, kept as the
// running sum of c log2 c so that each sample costs one bin update. Bins are centred
// on the first sample, so that the same stream in other units falls in the same bins.
std::vector<double> PlateauRule::entropy_trace(const std::vector<double>& samples) const {
  const double log_step = std::log1p(bin_width);
  const double origin = !samples.empty() && samples[0] > 0 && std::isfinite(samples[0]) ? std::log(samples[0]) : 0;
  std::map<long long, long long> counts;
  double sum_clogc = 0;
  std::vector<double> trace;
  trace.reserve(samples.size());
  auto clogc = [](long long c) { return c > 0 ? static_cast<double>(c) * std::log2(static_cast<double>(c)) : 0.0; };
  for (size_t i = 0; i < samples.size(); ++i) {
    const double x = samples[i];
    // Samples that are not positive and finite (never a real time) share one bin.
    const long long bin = x > 0 && std::isfinite(x)
                              ? static_cast<long long>(std::llround((std::log(x) - origin) / log_step))
                              : std::numeric_limits<long long>::min();
    long long& c = counts[bin];
    sum_clogc += clogc(c + 1) - clogc(c);
    ++c;
    const double n = static_cast<double>(i + 1);
    trace.push_back(std::max(0.0, std::log2(n) - sum_clogc / n));
  }
  return trace;
}

double PlateauRule::rise(const std::vector<double>& samples) const {
  const int w = window < 2 ? 2 : window;
  if (static_cast<int>(samples.size()) < w) return std::numeric_limits<double>::infinity();
  std::vector<double> h = entropy_trace(samples);
  const double mean_x = (w - 1) / 2.0;
  double mean_y = 0;
  for (size_t i = h.size() - w; i < h.size(); ++i) mean_y += h[i];
  mean_y /= w;
  double num = 0, den = 0;
  for (int i = 0; i < w; ++i) {
    const double dx = i - mean_x;
    num += dx * (h[h.size() - w + i] - mean_y);
    den += dx * dx;
  }
  return num / den * (w - 1);  // the line's rise from the window's first sample to its last
}

bool StoppingRule::settled(const std::vector<double>& samples) const {
  if (criterion == StoppingCriterion::plateau) return plateau.levelled(samples);
  return summarize(samples).rse < target_rse;
}

bool StoppingRule::enough(const std::vector<double>& candidate, const std::vector<double>* baseline, int taken) const {
  const int kept = static_cast<int>(candidate.size());
  if (kept >= max_samples || taken >= 4 * max_samples) return true;
  return kept >= min_samples && settled(candidate) && (!baseline || settled(*baseline));
}

}  // namespace tessera::evaluator
