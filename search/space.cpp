// search/space.cpp — enumeration and keys of a parameter Space.
#include "search/space.h"

#include <cmath>
#include <stdexcept>

namespace tessera::search {

Space::Space(std::vector<Param> params, std::function<bool(const Config&)> valid)
    : params_(std::move(params)), valid_(std::move(valid)) {
  for (auto& p : params_) {
    if (p.values.empty()) throw std::invalid_argument("parameter '" + p.name + "' has no values");
    if (p.numeric.size() != p.values.size()) {
      p.numeric.clear();
      for (auto& v : p.values) {
        try {
          size_t used = 0;
          double d = std::stod(v, &used);
          p.numeric.push_back(used == v.size() ? d : NAN);
        } catch (...) {
          p.numeric.push_back(NAN);
        }
      }
    }
  }
}

uint64_t Space::cartesian_size() const {
  uint64_t n = 1;
  for (auto& p : params_) n *= p.values.size();
  return n;
}

bool Space::is_valid(const Config& c) const {
  if (c.size() != params_.size()) return false;
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] < 0 || c[i] >= static_cast<int>(params_[i].values.size())) return false;
  return !valid_ || valid_(c);
}

const std::vector<Config>& Space::valid_configs() const {
  if (enumerated_) return valid_cache_;
  Config c(params_.size(), 0);
  if (params_.empty()) {
    if (is_valid(c)) valid_cache_.push_back(c);  // no parameters: one configuration, the empty one
  } else {
    while (true) {
      if (is_valid(c)) valid_cache_.push_back(c);
      size_t i = params_.size();
      while (i > 0) {
        --i;
        if (++c[i] < static_cast<int>(params_[i].values.size())) break;
        c[i] = 0;
        if (i == 0) goto done;
      }
    }
  }
done:
  enumerated_ = true;
  return valid_cache_;
}

std::string Space::key(const Config& c) const {
  std::string k;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i) k += ',';
    k += params_[i].values.at(c[i]);
  }
  return k;
}

std::vector<std::pair<std::string, double>> Space::named_values(const Config& c) const {
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < c.size(); ++i) out.emplace_back(params_[i].name, params_[i].numeric.at(c[i]));
  return out;
}

}  // namespace tessera::search
