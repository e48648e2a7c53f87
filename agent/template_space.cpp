// agent/template_space.cpp — from spec template to search space.
#include "agent/template_space.h"

namespace tessera::agent {

search::Space template_space(const spec::Program& tpl) {
  std::vector<search::Param> params;
  for (auto& name : tpl.param_order) {
    search::Param p;
    p.name = name;
    for (long long v : tpl.params.at(name)) {
      p.values.push_back(std::to_string(v));
      p.numeric.push_back(static_cast<double>(v));
    }
    params.push_back(p);
  }
  auto constraints = tpl.constraints;
  auto order = tpl.param_order;
  auto values = tpl.params;
  return search::Space(params, [constraints, order, values](const search::Config& c) {
    spec::Bindings b;
    for (size_t i = 0; i < order.size(); ++i) b[order[i]] = static_cast<double>(values.at(order[i]).at(c[i]));
    for (auto& e : constraints)
      if (spec::eval(e, b) == 0) return false;
    return true;
  });
}

std::map<std::string, long long> config_params(const spec::Program& tpl, const search::Config& c) {
  std::map<std::string, long long> out;
  for (size_t i = 0; i < tpl.param_order.size(); ++i)
    out[tpl.param_order[i]] = tpl.params.at(tpl.param_order[i]).at(c[i]);
  return out;
}

}  // namespace tessera::agent
