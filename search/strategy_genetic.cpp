// search/strategy_genetic.cpp — a genetic algorithm.
//
// A population of configurations evolves by generations: the best few survive
// unchanged (elitism), parents are chosen by tournament, children mix their
// parents' parameters (uniform crossover) and mutate one parameter now and then.
// A child that is invalid or already evaluated is mutated again, so that every
// generation spends its evaluations on new configurations. One generation is one
// batch, which suits a GPU that compiles and runs many candidates at once. A run
// that continues another one (genetic_ils) starts with the best configurations
// found so far in its first population.
#include <algorithm>
#include <limits>

#include "search/neighbourhood.h"
#include "search/strategy_makers.h"

namespace tessera::search {
namespace {

constexpr size_t kPopulation = 16;
constexpr size_t kElite = 2;
constexpr size_t kTournament = 3;
constexpr int kRepairTries = 24;
constexpr size_t kSeeded = 4;  // best configurations of an earlier run that join the first population

double cost_of(const Outcome& o) {
  return o.ok ? o.cost : std::numeric_limits<double>::infinity();
}

struct Member {
  Config config;
  double cost;
};

class GeneticAlgorithm final : public Strategy {
 public:
  std::string name() const override { return "genetic"; }

  void run(Tuning& t, uint64_t seed) override {
    Rng rng(seed);
    std::vector<Config> first = best_seen(t, kSeeded);
    for (size_t i = first.size(); i < kPopulation; ++i)
      if (auto c = random_unseen(t, rng); c && std::find(first.begin(), first.end(), *c) == first.end())
        first.push_back(*c);
    std::vector<Member> population = evaluate(t, first);
    while (!t.exhausted() && !population.empty()) {
      std::sort(population.begin(), population.end(), [](const Member& a, const Member& b) { return a.cost < b.cost; });
      std::vector<Config> children;
      for (size_t guard = 0; children.size() + kElite < kPopulation && guard < 8 * kPopulation; ++guard) {
        const Config& a = tournament(population, rng).config;
        const Config& b = tournament(population, rng).config;
        auto child = breed(t, rng, a, b, children);
        if (child) children.push_back(std::move(*child));
      }
      if (children.empty()) {  // the population's neighbourhood is spent: bring in new blood
        auto fresh = random_unseen(t, rng);
        if (!fresh) return;
        children.push_back(*fresh);
      }
      std::vector<Member> next(population.begin(), population.begin() + std::min(kElite, population.size()));
      for (auto& m : evaluate(t, children)) next.push_back(std::move(m));
      population = std::move(next);
    }
  }

 private:
  // The `n` best successful configurations evaluated so far (none in a fresh run).
  static std::vector<Config> best_seen(const Tuning& t, size_t n) {
    std::vector<const Trial*> ok;
    for (const Trial& tr : t.history())
      if (tr.outcome.ok) ok.push_back(&tr);
    std::stable_sort(ok.begin(), ok.end(),
                     [](const Trial* a, const Trial* b) { return a->outcome.cost < b->outcome.cost; });
    std::vector<Config> out;
    for (size_t i = 0; i < ok.size() && i < n; ++i) out.push_back(ok[i]->config);
    return out;
  }

  static std::vector<Member> evaluate(Tuning& t, const std::vector<Config>& batch) {
    auto got = t.evaluate(batch);
    std::vector<Member> out;
    for (size_t i = 0; i < batch.size(); ++i) out.push_back({batch[i], cost_of(got[i])});
    return out;
  }

  static const Member& tournament(const std::vector<Member>& pop, Rng& rng) {
    const Member* best = &pop[pick(rng, pop.size())];
    for (size_t k = 1; k < kTournament; ++k) {
      const Member& m = pop[pick(rng, pop.size())];
      if (m.cost < best->cost) best = &m;
    }
    return *best;
  }

  // A valid child not evaluated yet and not already in this generation, if one is found.
  static std::optional<Config> breed(const Tuning& t, Rng& rng, const Config& a, const Config& b,
                                     const std::vector<Config>& siblings) {
    const Space& space = t.space();
    Config child(a.size());
    for (size_t i = 0; i < a.size(); ++i) child[i] = (rng() & 1) ? a[i] : b[i];
    double mutation = 1.0 / static_cast<double>(std::max<size_t>(1, a.size()));
    for (size_t i = 0; i < child.size(); ++i)
      if (uniform01(rng) < mutation) mutate(space, child, i, rng);
    for (int tries = 0; tries < kRepairTries; ++tries) {
      bool fresh = space.is_valid(child) && !t.seen(child) &&
                   std::find(siblings.begin(), siblings.end(), child) == siblings.end();
      if (fresh) return child;
      mutate(space, child, pick(rng, child.size()), rng);
    }
    return std::nullopt;
  }

  // Moves parameter i one step most of the time, to any value sometimes.
  static void mutate(const Space& space, Config& c, size_t i, Rng& rng) {
    int n = static_cast<int>(space.params()[i].values.size());
    if (n <= 1) return;
    if (uniform01(rng) < 0.7) {
      int step = (rng() & 1) ? 1 : -1;
      int v = c[i] + step;
      c[i] = (v < 0 || v >= n) ? c[i] - step : v;
    } else {
      c[i] = static_cast<int>(pick(rng, static_cast<size_t>(n)));
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> make_genetic_algorithm() {
  return std::make_unique<GeneticAlgorithm>();
}

}  // namespace tessera::search
