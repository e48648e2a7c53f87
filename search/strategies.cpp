// search/strategies.cpp — exhaustive and random search, and the strategy registry.
//
// The other strategies live one per file (strategy_*.cpp) and are registered here.
//
// Each strategy proposes batches so that a real CostFunction can compile and
// evaluate several configurations at once.
#include <algorithm>
#include <stdexcept>

#include "search/strategy.h"
#include "search/strategy_makers.h"

namespace tessera::search {
namespace {

constexpr size_t kBatch = 8;

class Exhaustive final : public Strategy {
 public:
  std::string name() const override { return "exhaustive"; }
  void run(Tuning& t, uint64_t) override {
    const auto& all = t.space().valid_configs();
    const size_t width = t.batch_width(kBatch);
    for (size_t i = 0; i < all.size() && !t.exhausted(); i += width) {
      std::vector<Config> batch(all.begin() + i, all.begin() + std::min(all.size(), i + width));
      t.evaluate(batch);
    }
  }
};

// Uniform sampling without replacement over the valid configurations.
class RandomSample final : public Strategy {
 public:
  std::string name() const override { return "random"; }
  void run(Tuning& t, uint64_t seed) override {
    std::vector<Config> order = t.space().valid_configs();
    std::mt19937_64 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    const size_t width = t.batch_width(kBatch);
    for (size_t i = 0; i < order.size() && !t.exhausted(); i += width) {
      std::vector<Config> batch(order.begin() + i, order.begin() + std::min(order.size(), i + width));
      t.evaluate(batch);
    }
  }
};

}  // namespace

std::vector<std::string> strategy_names() {
  return {"exhaustive", "random", "annealing", "genetic", "greedy_ils", "bayes", "genetic_ils", "portfolio"};
}

std::string default_strategy() {
  return "portfolio";
}

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  if (name == "exhaustive") return std::make_unique<Exhaustive>();
  if (name == "random") return std::make_unique<RandomSample>();
  if (name == "annealing") return make_simulated_annealing();
  if (name == "genetic") return make_genetic_algorithm();
  if (name == "greedy_ils") return make_greedy_ils();
  if (name == "bayes") return make_bayes_opt();
  if (name == "genetic_ils") return make_genetic_ils();
  if (name == "portfolio") return make_portfolio();
  std::string known;
  for (auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown strategy '" + name + "' (known: " + known + ")");
}

}  // namespace tessera::search
