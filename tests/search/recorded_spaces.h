// tests/search/recorded_spaces.h — the two recorded spaces of ../shared, loaded once per test process.
#pragma once

#include <map>
#include <string>

#include "search/kt_cache.h"
#include "search/simulation.h"

namespace tessera::search::testing {

inline const std::vector<std::string>& recorded_space_names() {
  static const std::vector<std::string> names{"convolution-A100", "dedispersion-A100"};
  return names;
}

inline const Simulation& recorded_space(const std::string& name) {
  static std::map<std::string, Simulation> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end())
    it = loaded.emplace(name, Simulation::from_kt_cache(read_kt_cache(std::string(TESSERA_TUNING_CACHES) + "/" +
                                                                      name + ".json.gz")))
             .first;
  return it->second;
}

}  // namespace tessera::search::testing
