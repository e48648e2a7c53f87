// search/strategy_genetic_ils.cpp — local search for small budgets; a genetic
// algorithm taking turns with local search for large ones (the default).
//
// A genetic algorithm needs generations: with a population of 16, a budget of a
// hundred evaluations is six of them, too few for selection and crossover to pay
// off, while greedy local search climbs at once. With budgets of 55 to 450
// evaluations greedy_ils ends nearer the optimum than the genetic algorithm on
// the convolution and gemm spaces, and at most 0.04% further on dedispersion
// (docs/search.md), so a budget of at most kLocalBudget evaluations is spent on
// greedy_ils alone. Over long runs, however, the genetic algorithm is ahead on
// dedispersion at most budgets, which the score (averaged over every budget up to
// the cutoff) weighs heavily; so larger budgets alternate: kGeneticTurn
// evaluations of the genetic algorithm, then kLocalTurn of local search from the
// best found, and again. Each turn starts from the best configurations of the
// turns before it (see strategy_genetic.cpp and strategy_greedy_ils.cpp): the
// genetic algorithm explores and the local search polishes what it found.
#include "search/strategy_makers.h"

namespace tessera::search {
namespace {

constexpr size_t kLocalBudget = 256;  // 16 generations of the genetic algorithm
constexpr size_t kGeneticTurn = 64;   // 4 generations
constexpr size_t kLocalTurn = 32;

class GeneticIls final : public Strategy {
 public:
  std::string name() const override { return "genetic_ils"; }

  void run(Tuning& t, uint64_t seed) override {
    if (t.budget().max_evals <= kLocalBudget) {
      make_greedy_ils()->run(t, seed);
      return;
    }
    for (uint64_t turn = 0; !t.exhausted(); ++turn) {
      bool local = turn % 2 == 1;
      size_t before = t.evals();
      t.limit_spent(t.spent() + (local ? kLocalTurn : kGeneticTurn));
      auto strategy = local ? make_greedy_ils() : make_genetic_algorithm();
      strategy->run(t, seed + turn * 0x9e3779b97f4a7c15ULL);
      t.limit_spent(std::nullopt);
      if (t.evals() == before) return;  // nothing left to propose
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> make_genetic_ils() {
  return std::make_unique<GeneticIls>();
}

}  // namespace tessera::search
