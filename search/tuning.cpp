// search/tuning.cpp — budget, memoization and best-so-far for every strategy.
#include <algorithm>

#include "search/strategy.h"

namespace tessera::search {

Tuning::Tuning(const Space& space, CostFunction& cost, Budget budget)
    : space_(space), cost_(cost), budget_(budget), since_(std::chrono::steady_clock::now()) {}

bool Tuning::seen(const Config& c) const {
  return index_.count(c) > 0;
}

bool Tuning::exhausted() const {
  if (spent_ >= budget_.max_evals || (limit_ && spent_ >= *limit_)) return true;
  if (seconds_ >= budget_.max_seconds) return true;
  return history_.size() >= space_.valid_configs().size();
}

std::vector<Outcome> Tuning::evaluate(const std::vector<Config>& batch) {
  double thought = std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
  strategy_seconds_ += thought;
  if (budget_.count_strategy_time) seconds_ += thought;
  std::vector<Outcome> out(batch.size());
  std::vector<Config> fresh;
  std::vector<size_t> fresh_at;
  std::map<Config, size_t> in_batch;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Config& c = batch[i];
    if (!space_.is_valid(c)) {
      out[i].ok = false;
      out[i].failure = "invalid";
      continue;
    }
    if (auto it = index_.find(c); it != index_.end()) {
      out[i] = history_[it->second].outcome;
      continue;
    }
    if (in_batch.count(c)) continue;  // filled after evaluation
    if (spent_ + fresh.size() >= budget_.max_evals || (limit_ && spent_ + fresh.size() >= *limit_) ||
        seconds_ >= budget_.max_seconds) {
      out[i].ok = false;
      out[i].failure = "budget";
      continue;
    }
    in_batch[c] = fresh.size();
    fresh.push_back(c);
    fresh_at.push_back(i);
  }
  if (!fresh.empty()) {
    std::vector<Outcome> got = cost_.evaluate(fresh);
    for (size_t j = 0; j < fresh.size(); ++j) {
      index_[fresh[j]] = history_.size();
      history_.push_back({fresh[j], got.at(j)});
      seconds_ += got[j].seconds;
      if (!got[j].recorded) ++spent_;
    }
  }
  for (size_t i = 0; i < batch.size(); ++i)
    if (auto it = index_.find(batch[i]); it != index_.end()) out[i] = history_[it->second].outcome;
  since_ = std::chrono::steady_clock::now();
  return out;
}

std::optional<Trial> Tuning::best() const {
  std::optional<Trial> b;
  for (auto& t : history_)
    if (t.outcome.ok && (!b || t.outcome.cost < b->outcome.cost)) b = t;
  return b;
}

}  // namespace tessera::search
