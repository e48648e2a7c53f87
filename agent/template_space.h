// agent/template_space.h — a template's parameters and constraints as a
// search::Space, and the rendering of one configuration into a variant.
#pragma once

#include <map>
#include <string>

#include "search/space.h"
#include "spec/spec.h"

namespace tessera::agent {

// Space over the template's params; constraints are evaluated with muParser.
search::Space template_space(const spec::Program& tpl);
std::map<std::string, long long> config_params(const spec::Program& tpl, const search::Config& c);

}  // namespace tessera::agent
