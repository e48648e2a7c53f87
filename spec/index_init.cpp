// spec/index_init.cpp — valid index tensors from a seed (spec/index_init.h).
#include "spec/index_init.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_set>

namespace tessera::spec {

namespace {

// Splits `total` into `weights.size()` non-negative parts proportional to the weights
// (largest remainders get the leftovers), each at least `floor_each`.
std::vector<long long> split(long long total, const std::vector<double>& weights, long long floor_each) {
  const size_t k = weights.size();
  std::vector<long long> parts(k, floor_each);
  long long rest = total - floor_each * static_cast<long long>(k);
  double w = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::pair<double, size_t>> frac;
  long long given = 0;
  for (size_t i = 0; i < k; ++i) {
    double share = rest * weights[i] / w;
    long long whole = static_cast<long long>(std::floor(share));
    parts[i] += whole;
    given += whole;
    frac.push_back({share - static_cast<double>(whole), i});
  }
  std::sort(frac.begin(), frac.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t j = 0; given < rest; ++j, ++given) ++parts[frac[j % k].second];
  return parts;
}

std::vector<double> lognormal_weights(size_t k, std::mt19937_64& rng) {
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> w(k);
  for (auto& x : w) x = std::exp(z(rng));
  return w;
}

std::vector<long long> offsets(const Tensor& t, const Init& in, const Bindings& b, long long n, std::mt19937_64& rng,
                               const std::map<std::string, std::vector<long long>>& earlier) {
  if (n < 1) throw SpecError(fmt::format("input '{}': offsets need at least one entry", t.name));
  const long long last = eval_int(in.last, b);
  const size_t k = static_cast<size_t>(n - 1);
  if (last < 0) throw SpecError(fmt::format("input '{}': its last offset {} = {} is negative", t.name, in.last, last));
  if (k == 0 && last != 0)
    throw SpecError(fmt::format("input '{}': one entry cannot end at {} = {}", t.name, in.last, last));
  std::vector<long long> seg;
  if (in.not_below.empty()) {
    long long floor_each = last >= static_cast<long long>(k) ? 1 : 0;
    seg = k ? split(last, lognormal_weights(k, rng), floor_each) : std::vector<long long>{};
    if (!floor_each)  // fewer units than segments: `last` segments of one, at random places
      std::shuffle(seg.begin(), seg.end(), rng);
  } else {
    auto it = earlier.find(in.not_below);
    if (it == earlier.end() || it->second.size() != static_cast<size_t>(n))
      throw SpecError(fmt::format("input '{}': not_below names '{}', which is no earlier offsets input of {} entries",
                                  t.name, in.not_below, n));
    const auto& o = it->second;
    long long base = o.back() - o.front();
    if (last < base)
      throw SpecError(fmt::format("input '{}': its segments must cover those of '{}', whose total is {}, but {} = {}",
                                  t.name, in.not_below, base, in.last, last));
    std::vector<long long> extra = k ? split(last - base, lognormal_weights(k, rng), 0) : std::vector<long long>{};
    for (size_t i = 0; i < k; ++i) seg.push_back(o[i + 1] - o[i] + extra[i]);
  }
  std::vector<long long> out(1, 0);
  for (long long x : seg) out.push_back(out.back() + x);
  return out;
}

std::vector<long long> indices(const Tensor& t, const Init& in, const Bindings& b, long long n, std::mt19937_64& rng) {
  const long long below = eval_int(in.below, b);
  if (n > 0 && below <= 0)
    throw SpecError(
        fmt::format("input '{}': {} entries in [0, {}) with {} = {}", t.name, n, in.below, in.below, below));
  std::vector<long long> out;
  out.reserve(static_cast<size_t>(std::max(0LL, n)));
  if (n > below) {
    std::uniform_int_distribution<long long> u(0, below - 1);
    for (long long i = 0; i < n; ++i) out.push_back(u(rng));
    return out;
  }
  // Floyd's sample of n distinct values, then shuffled (a sample's order is not sorted).
  std::unordered_set<long long> seen;
  for (long long j = below - n; j < below; ++j) {
    long long v = std::uniform_int_distribution<long long>(0, j)(rng);
    if (!seen.insert(v).second) {
      seen.insert(j);
      v = j;
    }
    out.push_back(v);
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

}  // namespace

bool host_generated(const Init& in) {
  return in.dist == "cu_seqlens" || in.dist == "offsets" || in.dist == "indices" || in.dist == "values";
}

std::vector<long long> generate_index(const Tensor& t, const Init& in, const Shape& s, const Bindings& b, long long n,
                                      unsigned long long seed,
                                      const std::map<std::string, std::vector<long long>>& earlier) {
  std::mt19937_64 rng(seed);
  std::vector<long long> out;
  if (in.dist == "cu_seqlens") {
    out.push_back(0);
    for (auto l : s.seqlens) out.push_back(out.back() + l);
  } else if (in.dist == "offsets") {
    out = offsets(t, in, b, n, rng, earlier);
  } else if (in.dist == "indices") {
    out = indices(t, in, b, n, rng);
  } else if (in.dist == "values") {
    out = in.values;
  } else {
    throw SpecError(fmt::format("input '{}': '{}' is not generated on the host", t.name, in.dist));
  }
  if (static_cast<long long>(out.size()) != n)
    throw SpecError(fmt::format("input '{}': {} needs {} entries at shape {}, the spec's shape gives {}", t.name,
                                in.dist, out.size(), s.label(), n));
  return out;
}

}  // namespace tessera::spec
