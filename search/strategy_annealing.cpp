// search/strategy_annealing.cpp — simulated annealing.
//
// A walk that moves to a random neighbour when it is better, and to a worse one
// with probability exp(-relative loss / T). The temperature falls geometrically
// with the share of the budget spent, so the walk explores first and settles
// later. Each step evaluates a small batch of neighbours at once (useful on a
// GPU) and considers the best of them. A walk that stops being accepted for a
// while restarts from the best configuration found so far.
#include <algorithm>
#include <cmath>
#include <limits>

#include "search/neighbourhood.h"
#include "search/strategy_makers.h"

namespace tessera::search {
namespace {

constexpr size_t kBatch = 4;
constexpr double kStartTemperature = 0.2;  // a 20% worse step is taken with p = 1/e at first
constexpr double kEndTemperature = 0.002;
constexpr int kPatience = 12;  // steps without acceptance before a restart

double cost_of(const Outcome& o) {
  return o.ok ? o.cost : std::numeric_limits<double>::infinity();
}

class SimulatedAnnealing final : public Strategy {
 public:
  std::string name() const override { return "annealing"; }

  void run(Tuning& t, uint64_t seed) override {
    Rng rng(seed);
    auto start = random_unseen(t, rng);
    if (!start) return;
    Config current = *start;
    double current_cost = cost_of(t.evaluate_one(current));
    int rejected = 0;
    while (!t.exhausted()) {
      std::vector<Config> batch = proposals(t, rng, current);
      if (batch.empty()) {  // every neighbour seen: jump to a fresh point (the best of
                            // one per GPU, so that the others do not idle)
        for (size_t i = 0; i < std::max<size_t>(1, t.budget().parallel); ++i)
          if (auto fresh = random_unseen(t, rng); fresh && std::find(batch.begin(), batch.end(), *fresh) == batch.end())
            batch.push_back(*fresh);
        if (batch.empty()) return;
      }
      auto got = t.evaluate(batch);
      size_t pick_at = 0;
      for (size_t j = 1; j < batch.size(); ++j)
        if (cost_of(got[j]) < cost_of(got[pick_at])) pick_at = j;
      double candidate = cost_of(got[pick_at]);
      if (accept(current_cost, candidate, temperature(t), rng)) {
        current = batch[pick_at];
        current_cost = candidate;
        rejected = 0;
      } else if (++rejected >= kPatience) {
        if (auto best = t.best()) {
          current = best->config;
          current_cost = best->outcome.cost;
        }
        rejected = 0;
      }
    }
  }

 private:
  static double temperature(const Tuning& t) {
    double spent = static_cast<double>(t.spent()) / static_cast<double>(t.budget().max_evals);
    if (t.budget().max_seconds < 1e29) spent = std::max(spent, t.seconds() / t.budget().max_seconds);
    spent = std::clamp(spent, 0.0, 1.0);
    return kStartTemperature * std::pow(kEndTemperature / kStartTemperature, spent);
  }

  static bool accept(double current, double candidate, double temp, Rng& rng) {
    if (!std::isfinite(candidate)) return false;
    if (!std::isfinite(current) || candidate < current) return true;
    double loss = (candidate - current) / current;
    return uniform01(rng) < std::exp(-loss / temp);
  }

  // Up to batch_width(kBatch) unseen neighbours, mostly adjacent, sometimes a wider hamming move.
  static std::vector<Config> proposals(const Tuning& t, Rng& rng, const Config& at) {
    std::vector<Config> near = neighbours(t.space(), at, Neighbourhood::adjacent);
    std::vector<Config> far = neighbours(t.space(), at, Neighbourhood::hamming);
    std::erase_if(near, [&](const Config& c) { return t.seen(c); });
    std::erase_if(far, [&](const Config& c) { return t.seen(c); });
    std::vector<Config> out;
    while (out.size() < t.batch_width(kBatch) && (!near.empty() || !far.empty())) {
      bool wide = near.empty() || (!far.empty() && uniform01(rng) < 0.25);
      auto& from = wide ? far : near;
      size_t i = pick(rng, from.size());
      Config c = from[i];
      from.erase(from.begin() + static_cast<long>(i));
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_simulated_annealing() {
  return std::make_unique<SimulatedAnnealing>();
}

}  // namespace tessera::search
