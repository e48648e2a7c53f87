// tests/search/recorded_spaces.h — the recorded spaces, loaded once per test process:
// the Kernel Tuner spaces of tests/data/tuning-caches (MIT, copied from the project's
// shared datasets with their LICENSE), and tessera's own H200 scan of the gemm
// `mma` template (tests/search/data/gemm-mma-H200.json.gz, made from
// runs/recorded/h200-gemm-mma-exhaustive-2026-11-30.db by recorded_to_kt_cache.py there).
#pragma once

#include <map>
#include <string>

#include "search/kt_cache.h"
#include "search/simulation.h"

namespace tessera::search::testing {

inline const std::vector<std::string>& recorded_space_names() {
  static const std::vector<std::string> names{"convolution-A100", "dedispersion-A100", "gemm-mma-H200"};
  return names;
}

inline std::string recorded_space_path(const std::string& name) {
  std::string dir = name == "gemm-mma-H200" ? TESSERA_SEARCH_TEST_DATA : TESSERA_TUNING_CACHES;
  return dir + "/" + name + ".json.gz";
}

inline const Simulation& recorded_space(const std::string& name) {
  static std::map<std::string, Simulation> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end())
    it = loaded.emplace(name, Simulation::from_kt_cache(read_kt_cache(recorded_space_path(name)))).first;
  return it->second;
}

}  // namespace tessera::search::testing
