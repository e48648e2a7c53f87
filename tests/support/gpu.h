// tests/support/gpu.h — for the tests that need a GPU: whether one is visible (and if
// not, why, for the skip message), and where the source tree is (compiled in, or
// $TESSERA_SOURCE for a build carried to a GPU machine).
#pragma once

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "evaluator/device.h"

namespace tessera::testing {

inline bool have_gpu(std::string* why) {
  auto drv = tessera::evaluator::Driver::load(why);
  if (!drv) return false;
  try {
    if (tessera::evaluator::device_count(*drv) > 0) return true;
    *why = "the CUDA driver sees no GPU";
  } catch (std::exception& e) {
    *why = e.what();
  }
  return false;
}

inline std::filesystem::path source_dir() {
  const char* e = std::getenv("TESSERA_SOURCE");
  return e ? e : TESSERA_SOURCE_DIR;
}

}  // namespace tessera::testing
