// search/neighbourhood.cpp — neighbours, random valid and unseen configurations.
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

Config random_walk(const Space& space, Config c, int steps, Rng& rng) {
  for (int s = 0; s < steps; ++s) {
    auto next = neighbours(space, c, Neighbourhood::adjacent);
    if (next.empty()) next = neighbours(space, c, Neighbourhood::hamming);
    if (next.empty()) break;
    c = next[pick(rng, next.size())];
  }
  return c;
}

}  // namespace tessera::search
