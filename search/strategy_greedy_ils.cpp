// search/strategy_greedy_ils.cpp — greedy iterated local search.
//
// From a random start, evaluate the neighbours of the current configuration a
// batch at a time in random order and move to the best of a batch as soon as it
// improves (first improvement, batched). At a local optimum, kick the best
// configuration found so far with a short random walk and search locally again.
// Adjacent neighbours are tried first; the wider hamming neighbourhood only when
// the adjacent one is spent, so a step is cheap and a local optimum is real.
#include <algorithm>
#include <limits>

#include "search/neighbourhood.h"
#include "search/strategy_makers.h"

namespace tessera::search {
namespace {

constexpr size_t kBatch = 8;
constexpr int kKickSteps = 3;

double cost_of(const Outcome& o) { return o.ok ? o.cost : std::numeric_limits<double>::infinity(); }

class GreedyIls final : public Strategy {
 public:
  std::string name() const override { return "greedy_ils"; }

  void run(Tuning& t, uint64_t seed) override {
    Rng rng(seed);
    auto start = random_unseen(t, rng);
    if (!start) return;
    Config current = *start;
    double current_cost = cost_of(t.evaluate_one(current));
    while (!t.exhausted()) {
      if (!descend(t, rng, current, current_cost)) {
        // Local optimum: kick from the best so far, or jump anywhere if nothing works yet.
        auto best = t.best();
        Config from = best ? best->config : current;
        Config next = random_walk(t.space(), from, kKickSteps, rng);
        if (t.seen(next)) {
          auto fresh = random_unseen(t, rng);
          if (!fresh) return;
          next = best ? nearest_unseen(t, rng, from).value_or(*fresh) : *fresh;
        }
        current = next;
        current_cost = cost_of(t.evaluate_one(current));
      }
    }
  }

 private:
  // One improving move; false at a local optimum (or when the budget runs out).
  bool descend(Tuning& t, Rng& rng, Config& current, double& current_cost) {
    for (Neighbourhood kind : {Neighbourhood::adjacent, Neighbourhood::hamming}) {
      auto cands = neighbours(t.space(), current, kind);
      std::shuffle(cands.begin(), cands.end(), rng);
      // Seen neighbours cost nothing: take an improving one at once.
      for (auto& c : cands) {
        if (!t.seen(c)) continue;
        double v = cost_of(t.evaluate_one(c));
        if (v < current_cost) {
          current = c;
          current_cost = v;
          return true;
        }
      }
      std::erase_if(cands, [&](const Config& c) { return t.seen(c); });
      for (size_t i = 0; i < cands.size() && !t.exhausted(); i += kBatch) {
        std::vector<Config> batch(cands.begin() + i, cands.begin() + std::min(cands.size(), i + kBatch));
        auto got = t.evaluate(batch);
        size_t best = batch.size();
        for (size_t j = 0; j < batch.size(); ++j)
          if (cost_of(got[j]) < current_cost && (best == batch.size() || cost_of(got[j]) < cost_of(got[best])))
            best = j;
        if (best < batch.size()) {
          current = batch[best];
          current_cost = cost_of(got[best]);
          return true;
        }
      }
    }
    return false;
  }

  // An unseen configuration a short walk away from `from`, if one is found quickly.
  std::optional<Config> nearest_unseen(const Tuning& t, Rng& rng, const Config& from) {
    for (int steps = kKickSteps; steps <= 4 * kKickSteps; ++steps)
      for (int tries = 0; tries < 8; ++tries) {
        Config c = random_walk(t.space(), from, steps, rng);
        if (!t.seen(c)) return c;
      }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_greedy_ils() { return std::make_unique<GreedyIls>(); }

}  // namespace tessera::search
