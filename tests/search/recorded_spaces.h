// tests/search/recorded_spaces.h — the recorded spaces, loaded once per test process:
// the eight Kernel Tuner spaces of tests/data/tuning-caches (MIT, copied from the
// project's shared datasets with their LICENSE), and tessera's own H200 scans of the
// gemm `mma` template (tests/search/data/gemm-mma-H200.json.gz from
// runs/recorded/h200-gemm-mma-exhaustive-2026-11-30.db.gz, per-sample timing, a lone
// optimum; gemm-mma-H200-gated.json.gz from ...-2026-11-30c.db.gz, the gated timing
// `optimize` uses now), made by recorded_to_kt_cache.py there; and its exhaustive
// H200 scan of flash_attention's fa3_wgmma (fa3-wgmma-H200.json.gz, from
// runs/recorded/h200-fa3-2026-12-03b.db.gz, 130 configurations), which is not among
// recorded_space_names() (the strategy-quality test of small spaces reads it alone).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "search/kt_cache.h"
#include "search/simulation.h"

namespace tessera::search::testing {

// Every recorded space, the three the search was first tuned on first.
inline const std::vector<std::string>& recorded_space_names() {
  static const std::vector<std::string> names{
      "convolution-A100",  "dedispersion-A100",  "gemm-mma-H200", "convolution-3060_laptop",
      "convolution-Titan", "gemm-2080_Ti",       "gemm-3090",     "pnpoly-3090",
      "pnpoly-Titan",      "gemm-mma-H200-gated"};
  return names;
}

// The three the search was first tuned on, and two with many failed configurations
// (a fifth and a twelfth of the space): enough for the structural tests of every
// strategy (what reaches the cost function, determinism, budgets), which hold on
// any space; the slower runs on every space are the default strategy's alone.
inline std::vector<std::string> structural_space_names() {
  return {"convolution-A100", "dedispersion-A100", "gemm-mma-H200", "convolution-3060_laptop", "pnpoly-3090"};
}

inline std::string recorded_space_path(const std::string& name) {
  bool ours = name.size() >= 5 && name.compare(name.size() - 5, 5, "-H200") == 0;
  ours = ours || name.rfind("gemm-mma-H200", 0) == 0;
  std::string dir = ours ? TESSERA_SEARCH_TEST_DATA : TESSERA_TUNING_CACHES;
  return dir + "/" + name + ".json.gz";
}

inline const KtCache& recorded_cache(const std::string& name) {
  static std::map<std::string, KtCache> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(name, read_kt_cache(recorded_space_path(name))).first;
  return it->second;
}

inline const Simulation& recorded_space(const std::string& name) {
  static std::map<std::string, Simulation> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(name, Simulation::from_kt_cache(recorded_cache(name))).first;
  return it->second;
}

}  // namespace tessera::search::testing
