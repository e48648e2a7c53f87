// search/space.h — a tunable parameter space, independent of CUDA.
//
// A Space is the cartesian product of parameter value lists, cut down by a
// validity predicate (constraints, or "present in a recorded cache"). A Config is
// one index per parameter into its value list, so strategies can step to
// neighbouring values without knowing what the values mean.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tessera::search {

struct Param {
  std::string name;
  std::vector<std::string> values;  // as written (recorded caches may hold non-numbers)
  std::vector<double> numeric;      // numeric value of each entry (NaN where none)
};

using Config = std::vector<int>;  // index into Param::values, one per parameter

class Space {
 public:
  Space() = default;
  Space(std::vector<Param> params, std::function<bool(const Config&)> valid);

  const std::vector<Param>& params() const { return params_; }
  size_t dims() const { return params_.size(); }
  uint64_t cartesian_size() const;
  bool is_valid(const Config& c) const;

  // Every valid configuration, in lexicographic order (cached after the first call).
  const std::vector<Config>& valid_configs() const;

  // Stable key of a configuration: values joined by ',' (Kernel Tuner's cache key form).
  std::string key(const Config& c) const;
  // Parameter name -> numeric value.
  std::vector<std::pair<std::string, double>> named_values(const Config& c) const;

 private:
  std::vector<Param> params_;
  std::function<bool(const Config&)> valid_;
  mutable std::vector<Config> valid_cache_;
  mutable bool enumerated_ = false;
};

}  // namespace tessera::search
