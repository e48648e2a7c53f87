// search/strategy_greedy_ils.cpp — greedy local search with model-guided restarts.
//
// From the best configuration evaluated so far (or a fresh start), evaluate the
// neighbours of the current configuration a batch at a time and move to the best
// of a batch as soon as it improves (first improvement, batched). The cheap
// neighbourhood comes first: one step in one parameter's value list, plus the
// exchange of two parameters' values (a 128 x 64 tile becomes 64 x 128, see
// exchanges()); the wider hamming neighbourhood only when that one is spent, so a
// step is cheap and a local optimum is real. At a local optimum the search
// restarts elsewhere.
//
// A MainEffects model of the history (each parameter value's mean effect on log
// cost) orders the neighbours, so an improving one tends to be in the first
// batch, and picks each restart: the most promising of kRestartDraws random
// unseen configurations. Both only order what local search would try anyway.
// On the recorded spaces (docs/search.md) the exchanges doubled how often the gemm
// space's lone optimum is found, restarts beat the former kick (a short random
// walk from the best, which mostly fell back into the basin it had left), and
// the model raised the score on all three spaces.
//
// With a warm start (Tuning::prior) a restart begins at the configuration the
// other GPU ranked best among those not yet evaluated, so the transferred ranking
// keeps guiding the search after the first batch instead of being forgotten
// there: on pnpoly 3090 -> Titan, whose optimum stands alone (the next is 6 %
// slower) at the 64th place of the 3090's ranking, runs of 10 % of the space end
// within 3 % in 56 of 60 seeds instead of 51, the median evaluations to get
// there the same (156, 154); the other pairs get within 3 % before greedy_ils
// restarts, and are unchanged (docs/search.md, 2026-12-03).
//
// The same instance run again on the same Tuning (the portfolio's turns) goes on
// where it stopped, mid-descent or after a restart, unless another strategy has
// improved the best meanwhile: a turn that always went back to the best would
// undo every restart, and restarts are how lone optima are found.
//
// Tabu escapes once restarts stop paying. After kEscapeAfter descents of a run
// ended at a local optimum worse than the best, a local optimum is no longer left
// by a restart at once: it becomes tabu (never a move again) and the search moves to
// its best evaluated neighbour that is not tabu and descends on from there, up to
// kEscapes times before it restarts. Runs with few restarts (the H200 scans at 10 %
// of the space, fa3_wgmma and rmsnorm at 20) never escape: there an escape spends
// near one local optimum what a restart needs to find a lone one (escaping from
// every local optimum cost the first H200 gemm scan 5.8 points of runs within 3 %,
// docs/search.md, 2026-12-04 fifth round). Long runs on spaces of many local
// optima gain (docs/search.md, 2026-12-05 sixth round; 300 seeds, paired).
#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "search/main_effects.h"
#include "search/neighbourhood.h"
#include "search/prior.h"
#include "search/strategy_makers.h"

namespace tessera::search {
namespace {

constexpr size_t kBatch = 8;
constexpr size_t kRestartDraws = 16;
constexpr size_t kModelFrom = 8;    // evaluations before the model is trusted to order anything
constexpr size_t kEscapeAfter = 2;  // descents ended worse than the best before tabu escapes begin
constexpr size_t kEscapes = 2;      // tabu escapes of a descent before it restarts

double cost_of(const Outcome& o) {
  return o.ok ? o.cost : std::numeric_limits<double>::infinity();
}

class GreedyIls final : public Strategy {
 public:
  std::string name() const override { return "greedy_ils"; }

  // A run that continues another strategy's starts from its best. The same instance
  // run again on the same Tuning (portfolio's turns) goes on where it stopped,
  // mid-descent or after a restart, unless the best has improved meanwhile.
  void run(Tuning& t, uint64_t seed) override {
    auto best = t.best();
    double best_cost = best ? best->outcome.cost : std::numeric_limits<double>::infinity();
    if (resumes_ != &t) {
      rng_.seed(seed);
      tabu_.clear();
      failed_descents_ = 0;
      escapes_ = 0;
    }
    if (resumes_ != &t || best_cost < paused_best_) {
      resumes_ = &t;
      if (best) {
        current_ = best->config;
        current_cost_ = best->outcome.cost;
      } else if (!restart(t, rng_, current_, current_cost_)) {
        return;
      }
    }
    while (!t.exhausted()) {
      if (descend(t, rng_, tabu_, current_, current_cost_)) continue;
      if (t.exhausted()) break;
      if (failed_descents_ >= kEscapeAfter && escapes_ < kEscapes && escape(t)) {
        ++escapes_;
        continue;
      }
      if (auto now = t.best(); now && current_cost_ > now->outcome.cost) ++failed_descents_;
      escapes_ = 0;
      if (!restart(t, rng_, current_, current_cost_)) break;
    }
    auto now = t.best();
    paused_best_ = now ? now->outcome.cost : std::numeric_limits<double>::infinity();
  }

 private:
  const Tuning* resumes_ = nullptr;
  double paused_best_ = std::numeric_limits<double>::infinity();
  Rng rng_;
  Config current_;
  double current_cost_ = 0;
  std::set<Config> tabu_;       // local optima escaped from: never a move again
  size_t failed_descents_ = 0;  // descents that ended at a local optimum worse than the best
  size_t escapes_ = 0;          // of the current descent

  // At a local optimum (its neighbourhoods all evaluated): makes it tabu and moves to
  // its best evaluated neighbour (any single-parameter change or exchange) that is
  // not tabu; false if there is none.
  bool escape(Tuning& t) {
    tabu_.insert(current_);
    std::vector<Config> near = neighbours(t.space(), current_, Neighbourhood::hamming);
    for (Config& c : exchanges(t.space(), current_)) near.push_back(std::move(c));
    std::optional<Config> to;
    double to_cost = std::numeric_limits<double>::infinity();
    for (const Config& c : near) {
      if (!t.seen(c) || tabu_.count(c)) continue;
      if (double v = cost_of(t.evaluate_one(c)); v < to_cost) {
        to_cost = v;
        to = c;
      }
    }
    if (!to) return false;
    current_ = std::move(*to);
    current_cost_ = to_cost;
    return true;
  }

  // Moves to the most promising of a few random unseen configurations; false
  // when every configuration has been seen.
  static bool restart(Tuning& t, Rng& rng, Config& current, double& current_cost) {
    std::vector<Config> draws;
    for (size_t i = 0; i < (t.evals() >= kModelFrom ? kRestartDraws : 1); ++i)
      if (auto c = random_unseen(t, rng)) draws.push_back(std::move(*c));
    if (draws.empty()) return false;
    if (t.evals() >= kModelFrom) MainEffects(t).order(draws);
    if (const Prior* prior = t.prior())
      for (const auto& [c, q] : prior->ranking())
        if (!t.seen(c)) {
          std::erase(draws, c);
          draws.insert(draws.begin(), c);
          break;
        }
    // With several GPUs the most promising few draws are judged at once (the others
    // would idle) and the best of them is the new start; with one, only the first.
    draws.resize(std::min(draws.size(), std::max<size_t>(1, t.budget().parallel)));
    auto got = t.evaluate(draws);
    size_t pick = 0;
    for (size_t j = 1; j < draws.size(); ++j)
      if (cost_of(got[j]) < cost_of(got[pick])) pick = j;
    current = draws[pick];
    current_cost = cost_of(got[pick]);
    return true;
  }

  // The neighbourhoods in the order they are searched, each in random order.
  static std::vector<std::vector<Config>> tiers(const Space& space, const Config& at, Rng& rng) {
    std::vector<Config> near = neighbours(space, at, Neighbourhood::adjacent);
    for (Config& c : exchanges(space, at)) near.push_back(std::move(c));
    std::vector<std::vector<Config>> out{std::move(near), neighbours(space, at, Neighbourhood::hamming)};
    for (auto& tier : out) std::shuffle(tier.begin(), tier.end(), rng);
    return out;
  }

  // One improving move (never onto a tabu configuration); false at a local optimum
  // (or when the budget runs out).
  static bool descend(Tuning& t, Rng& rng, const std::set<Config>& tabu, Config& current, double& current_cost) {
    std::vector<std::vector<Config>> ts = tiers(t.space(), current, rng);
    // Seen neighbours cost nothing: take an improving one at once. The rest are
    // ordered by the model.
    auto prepare = [&](std::vector<Config>& cands) {
      std::erase_if(cands, [&](const Config& c) { return tabu.count(c) > 0; });
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
      if (t.evals() >= kModelFrom) MainEffects(t).order(cands);
      return false;
    };
    for (size_t k = 0; k < ts.size(); ++k) {
      std::vector<Config>& cands = ts[k];
      if (prepare(cands)) return true;
      // With several GPUs a neighbourhood smaller than a batch would leave some idle:
      // the wider tiers follow the cheap one in the same batches (tier order kept).
      // If even all of them are fewer, the batch is filled with the model's most
      // promising unseen configurations elsewhere (drawn as for a restart).
      const size_t width = t.batch_width(kBatch);
      if (t.budget().parallel > 1) {
        for (size_t m = k + 1; m < ts.size(); ++m) {
          if (prepare(ts[m])) return true;
          cands.insert(cands.end(), ts[m].begin(), ts[m].end());
          ts[m].clear();
        }
        if (cands.size() < width) {
          std::vector<Config> extra;
          for (size_t i = 0; i < kRestartDraws * width && extra.size() < kRestartDraws * (width - cands.size()); ++i)
            if (auto c = random_unseen(t, rng); c && std::find(cands.begin(), cands.end(), *c) == cands.end() &&
                                                std::find(extra.begin(), extra.end(), *c) == extra.end())
              extra.push_back(std::move(*c));
          if (t.evals() >= kModelFrom) MainEffects(t).order(extra);
          extra.resize(std::min(extra.size(), width - cands.size()));
          cands.insert(cands.end(), extra.begin(), extra.end());
        }
      }
      for (size_t i = 0; i < cands.size() && !t.exhausted(); i += width) {
        std::vector<Config> batch(cands.begin() + i, cands.begin() + std::min(cands.size(), i + width));
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
};

}  // namespace

std::unique_ptr<Strategy> make_greedy_ils() {
  return std::make_unique<GreedyIls>();
}

}  // namespace tessera::search
