// search/neighbourhood.cpp — neighbours, exchanges, random valid and unseen configurations.
#include "search/neighbourhood.h"

namespace tessera::search {

std::vector<Config> neighbours(const Space& space, const Config& c, Neighbourhood kind) {
  std::vector<Config> out;
  for (size_t i = 0; i < space.dims(); ++i) {
    int n = static_cast<int>(space.params()[i].values.size());
    Config m = c;
    if (kind == Neighbourhood::adjacent) {
      for (int v : {c[i] - 1, c[i] + 1}) {
        if (v < 0 || v >= n) continue;
        m[i] = v;
        if (space.is_valid(m)) out.push_back(m);
      }
    } else {
      for (int v = 0; v < n; ++v) {
        if (v == c[i]) continue;
        m[i] = v;
        if (space.is_valid(m)) out.push_back(m);
      }
    }
  }
  return out;
}

std::vector<Config> exchanges(const Space& space, const Config& c) {
  std::vector<Config> out;
  const auto& params = space.params();
  for (size_t i = 0; i < params.size(); ++i)
    for (size_t j = i + 1; j < params.size(); ++j) {
      if (c[i] == c[j] || params[i].values != params[j].values) continue;
      Config m = c;
      std::swap(m[i], m[j]);
      if (space.is_valid(m)) out.push_back(std::move(m));
    }
  return out;
}

Config random_valid(const Space& space, Rng& rng) {
  const auto& all = space.valid_configs();
  return all[pick(rng, all.size())];
}

std::optional<Config> random_unseen(const Tuning& tuning, Rng& rng) {
  const auto& all = tuning.space().valid_configs();
  if (all.empty() || tuning.evals() >= all.size()) return std::nullopt;
  // Rejection while most are unseen; a scan from a random start once few are left.
  for (int tries = 0; tries < 64; ++tries) {
    const Config& c = all[pick(rng, all.size())];
    if (!tuning.seen(c)) return c;
  }
  size_t start = pick(rng, all.size());
  for (size_t k = 0; k < all.size(); ++k) {
    const Config& c = all[(start + k) % all.size()];
    if (!tuning.seen(c)) return c;
  }
  return std::nullopt;
}

}  // namespace tessera::search
