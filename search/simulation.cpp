// search/simulation.cpp — replay of recorded outcomes as a CostFunction.
#include "search/simulation.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

namespace tessera::search {

uint64_t Simulation::Table::flat(const Config& c) const {
  uint64_t f = 0;
  for (size_t i = 0; i < c.size(); ++i) f += radix[i] * static_cast<uint64_t>(c[i]);
  return f;
}

Simulation::Simulation(std::vector<Param> params, const std::vector<Record>& records)
    : table_(std::make_shared<Table>()) {
  Table& t = *table_;
  uint64_t weight = 1;
  t.radix.assign(params.size(), 0);
  for (size_t i = params.size(); i-- > 0;) {
    t.radix[i] = weight;
    uint64_t n = params[i].values.size();
    if (n != 0 && weight > std::numeric_limits<uint64_t>::max() / n)
      throw std::invalid_argument("recorded space is too large to index (over 2^64 configurations)");
    weight *= n;
  }
  std::vector<std::map<std::string, int>> position(params.size());
  for (size_t i = 0; i < params.size(); ++i)
    for (size_t j = 0; j < params[i].values.size(); ++j) position[i][params[i].values[j]] = static_cast<int>(j);
  for (const Record& r : records) {
    if (r.values.size() != params.size())
      throw std::invalid_argument("record has " + std::to_string(r.values.size()) + " values, space has " +
                                  std::to_string(params.size()) + " parameters");
    Config c(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      auto it = position[i].find(r.values[i]);
      if (it == position[i].end())
        throw std::invalid_argument("record value '" + r.values[i] + "' is not a value of parameter '" +
                                    params[i].name + "'");
      c[i] = it->second;
    }
    auto [slot, fresh] = t.at.emplace(t.flat(c), t.outcomes.size());
    if (fresh)
      t.outcomes.push_back(r.outcome);
    else
      t.outcomes[slot->second] = r.outcome;  // the later record wins, as in a cache file
  }
  std::shared_ptr<const Table> table = table_;
  space_ = Space(std::move(params), [table](const Config& c) { return table->at.count(table->flat(c)) > 0; });
}

Simulation Simulation::from_kt_cache(const KtCache& cache) {
  return Simulation(cache.params, records_of(cache));
}

std::vector<Record> Simulation::records_of(const KtCache& cache) {
  std::vector<Record> records;
  records.reserve(cache.entries.size());
  for (const KtCacheEntry& e : cache.entries) {
    if (!e.ok && e.failure == "InvalidConfig") continue;
    Record r;
    r.values = e.values;
    r.outcome.ok = e.ok;
    r.outcome.cost = e.ok ? e.time_ms : 0;
    r.outcome.failure = e.ok ? "" : e.failure;
    r.outcome.seconds = (e.compile_ms + e.verification_ms + e.benchmark_ms) / 1000.0;
    records.push_back(std::move(r));
  }
  return records;
}

const Outcome* Simulation::recorded(const Config& c) const {
  if (!space_.is_valid(c)) return nullptr;  // also rules out indices outside the value lists
  auto it = table_->at.find(table_->flat(c));
  return it == table_->at.end() ? nullptr : &table_->outcomes[it->second];
}

std::vector<Outcome> Simulation::evaluate(const std::vector<Config>& batch) {
  std::vector<Outcome> out;
  out.reserve(batch.size());
  for (const Config& c : batch) {
    ++calls_;
    if (const Outcome* o = recorded(c)) {
      out.push_back(*o);
    } else {
      Outcome missing;
      missing.failure = "not recorded";
      out.push_back(missing);
    }
  }
  return out;
}

std::vector<double> Simulation::sorted_costs() const {
  std::vector<double> costs;
  for (const Outcome& o : table_->outcomes)
    if (o.ok) costs.push_back(o.cost);
  std::sort(costs.begin(), costs.end());
  return costs;
}

size_t Simulation::failed() const {
  return std::count_if(table_->outcomes.begin(), table_->outcomes.end(), [](const Outcome& o) { return !o.ok; });
}

}  // namespace tessera::search
