// search/prior.cpp — ranking a space by another device's recorded results.
#include "search/prior.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tessera::search {
namespace {

// Distance between two parameter values: 0 when written alike, else by number
// (log2 where both are positive), infinite when either is not a number.
double value_distance(const std::string& a, double na, const std::string& b, double nb) {
  if (a == b) return 0;
  if (std::isnan(na) || std::isnan(nb)) return std::numeric_limits<double>::infinity();
  if (na > 0 && nb > 0) return std::abs(std::log2(na) - std::log2(nb));
  return std::abs(na - nb);
}

}  // namespace

Prior::Prior(const Space& space, const std::vector<Param>& params, const std::vector<Record>& records,
             std::string source)
    : source_(std::move(source)), records_(records.size()) {
  // The other device's parameters, numbered as a Space numbers them.
  Space other(params, nullptr);
  const auto& theirs = other.params();
  const auto& ours = space.params();
  snap_.resize(ours.size());
  exact_.resize(ours.size());
  source_of_.assign(ours.size(), -1);
  for (size_t i = 0; i < ours.size(); ++i) {
    auto it = std::find_if(theirs.begin(), theirs.end(), [&](const Param& p) { return p.name == ours[i].name; });
    if (it == theirs.end()) continue;
    size_t j = static_cast<size_t>(it - theirs.begin());
    std::vector<int> snap(ours[i].values.size(), -1);
    std::vector<bool> exact(ours[i].values.size(), false);
    bool all = true;
    for (size_t v = 0; v < ours[i].values.size(); ++v) {
      double best = std::numeric_limits<double>::infinity();
      for (size_t w = 0; w < theirs[j].values.size(); ++w) {
        double d = value_distance(ours[i].values[v], ours[i].numeric[v], theirs[j].values[w], theirs[j].numeric[w]);
        if (d < best) best = d, snap[v] = static_cast<int>(w);
      }
      all = all && snap[v] >= 0;
      exact[v] = best == 0;
    }
    if (!all) continue;  // a value with no counterpart: the parameter is not shared
    source_of_[i] = static_cast<int>(j);
    snap_[i] = std::move(snap);
    exact_[i] = std::move(exact);
  }
  if (std::all_of(source_of_.begin(), source_of_.end(), [](int j) { return j < 0; }))
    throw std::invalid_argument("warm start from " + source_ + ": no parameter in common with this space");

  // Rank quantiles of the other device's results, failures last.
  std::vector<std::pair<double, size_t>> ok;
  for (size_t r = 0; r < records.size(); ++r)
    if (records[r].outcome.ok) ok.emplace_back(records[r].outcome.cost, r);
  std::sort(ok.begin(), ok.end());
  std::vector<double> quantile(records.size(), 1.0);
  for (size_t k = 0; k < ok.size(); ++k)
    quantile[ok[k].second] = ok.size() > 1 ? static_cast<double>(k) / static_cast<double>(ok.size() - 1) : 0.0;
  std::vector<std::map<std::string, int>> position(theirs.size());
  for (size_t j = 0; j < theirs.size(); ++j)
    for (size_t w = 0; w < theirs[j].values.size(); ++w) position[j][theirs[j].values[w]] = static_cast<int>(w);
  for (size_t r = 0; r < records.size(); ++r) {
    if (records[r].values.size() != theirs.size()) continue;
    std::vector<int> key;
    bool known = true;
    for (size_t i = 0; i < ours.size() && known; ++i) {
      if (source_of_[i] < 0) continue;
      size_t j = static_cast<size_t>(source_of_[i]);
      auto it = position[j].find(records[r].values[j]);
      known = it != position[j].end();
      if (known) key.push_back(it->second);
    }
    if (!known) continue;
    auto [slot, fresh] = best_.emplace(key, quantile[r]);
    if (!fresh) slot->second = std::min(slot->second, quantile[r]);
  }

  std::vector<std::pair<std::pair<double, int>, const Config*>> order;
  for (const Config& c : space.valid_configs()) {
    int snapped = 0;
    auto it = best_.find(project(c, &snapped));
    if (it != best_.end()) order.push_back({{it->second, snapped}, &c});
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  for (auto& [q, c] : order) ranked_.emplace_back(*c, q.first);
}

std::vector<int> Prior::project(const Config& c, int* snapped) const {
  std::vector<int> key;
  for (size_t i = 0; i < c.size() && i < source_of_.size(); ++i) {
    if (source_of_[i] < 0) continue;
    key.push_back(snap_[i][static_cast<size_t>(c[i])]);
    if (snapped && !exact_[i][static_cast<size_t>(c[i])]) ++*snapped;
  }
  return key;
}

double Prior::quantile(const Config& c) const {
  auto it = best_.find(project(c, nullptr));
  return it == best_.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

std::vector<Config> Prior::ranked(size_t n) const {
  std::vector<Config> out;
  for (size_t k = 0; k < ranked_.size() && k < n; ++k) out.push_back(ranked_[k].first);
  return out;
}

std::shared_ptr<const Prior> prior_from_kt_cache(const Space& space, const KtCache& other) {
  std::vector<Record> records = Simulation::records_of(other);
  std::string source =
      fmt::format("{} ({} results)", other.device_name.empty() ? other.path : other.device_name, records.size());
  return std::make_shared<const Prior>(space, other.params, records, source);
}

}  // namespace tessera::search
