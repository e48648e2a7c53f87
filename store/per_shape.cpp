// store/per_shape.cpp — each benchmark shape's champion among leaderboard rows, judged
// against its run's steady baseline (store.h says why).
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "store/store.h"

namespace tessera::store {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<ShapeChampion> per_shape_champions(const std::vector<LeaderboardRow>& rows) {
  // (run, shape) -> the baseline medians of that run's rows there
  std::map<std::pair<long long, std::string>, std::vector<double>> base;
  for (const auto& r : rows)
    for (const auto& s : r.shapes)
      if (s.base_median_ms > 0) base[{r.run_id, s.shape}].push_back(s.base_median_ms);
  std::map<std::pair<long long, std::string>, double> steady;
  for (auto& [key, v] : base) steady[key] = median(v);

  std::vector<ShapeChampion> out;
  std::map<std::string, size_t> at;  // shape -> index in out
  for (const auto& r : rows)
    for (const auto& s : r.shapes) {
      if (s.cand_median_ms <= 0) continue;
      auto it = steady.find({r.run_id, s.shape});
      const double b = it != steady.end() ? it->second : 0;
      const double speedup = b > 0 ? b / s.cand_median_ms : s.speedup;
      auto [pos, fresh] = at.emplace(s.shape, out.size());
      if (fresh) out.push_back({s.shape});
      ShapeChampion& c = out[pos->second];
      if (c.candidate_id == 0 || speedup > c.speedup)
        c = {s.shape, r.candidate_id, r.run_id, r.params_json, s, b, speedup};
    }
  return out;
}

double per_shape_geomean(const std::vector<ShapeChampion>& champions) {
  if (champions.empty()) return 0;
  double log_sum = 0;
  for (const auto& c : champions) log_sum += std::log(c.speedup);
  return std::exp(log_sum / static_cast<double>(champions.size()));
}

}  // namespace tessera::store
