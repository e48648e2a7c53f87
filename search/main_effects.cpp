// search/main_effects.cpp — fitting and using MainEffects.
#include "search/main_effects.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::search {

MainEffects::MainEffects(const Tuning& tuning) {
  const Space& space = tuning.space();
  effect_.resize(space.dims());
  for (size_t i = 0; i < space.dims(); ++i) effect_[i].assign(space.params()[i].values.size(), 0.0);
  double worst = -std::numeric_limits<double>::infinity();
  for (const Trial& t : tuning.history())
    if (t.outcome.ok) worst = std::max(worst, std::log(t.outcome.cost));
  if (!std::isfinite(worst)) return;  // nothing has worked yet: no preference

  std::vector<std::vector<double>> sum(effect_.size()), count(effect_.size());
  for (size_t i = 0; i < effect_.size(); ++i) {
    sum[i].assign(effect_[i].size(), 0.0);
    count[i].assign(effect_[i].size(), 0.0);
  }
  double total = 0;
  for (const Trial& t : tuning.history()) {
    double y = t.outcome.ok ? std::log(t.outcome.cost) : worst;
    total += y;
    for (size_t i = 0; i < effect_.size(); ++i) {
      sum[i][static_cast<size_t>(t.config[i])] += y;
      count[i][static_cast<size_t>(t.config[i])] += 1;
    }
  }
  double mean = total / static_cast<double>(tuning.history().size());
  for (size_t i = 0; i < effect_.size(); ++i)
    for (size_t v = 0; v < effect_[i].size(); ++v)
      if (count[i][v] > 0) effect_[i][v] = sum[i][v] / count[i][v] - mean;
}

double MainEffects::predict(const Config& c) const {
  double p = 0;
  for (size_t i = 0; i < effect_.size(); ++i) p += effect_[i][static_cast<size_t>(c[i])];
  return p;
}

void MainEffects::order(std::vector<Config>& configs) const {
  std::vector<std::pair<double, size_t>> key;
  key.reserve(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) key.push_back({predict(configs[i]), i});
  std::stable_sort(key.begin(), key.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> sorted;
  sorted.reserve(configs.size());
  for (const auto& [p, i] : key) sorted.push_back(std::move(configs[i]));
  configs = std::move(sorted);
}

}  // namespace tessera::search
