// tests/support/gpu.h — for the tests that need a GPU: whether one is visible (and if
// not, why, for the skip message), where the source tree is (compiled in, or
// $TESSERA_SOURCE for a build carried to a GPU machine), and a fixture of
// tests/gpu/fixtures compiled with the tile headers.
#pragma once

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "codegen/compiler.h"
#include "codegen/render.h"
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

// tests/gpu/fixtures/FILE compiled for arch with targets/common on the include path
// (cache: the temporary folder's tessera-fixture-FILE).
inline tessera::codegen::CompileResult compile_fixture(const std::string& file, const std::string& arch) {
  tessera::codegen::Compiler compiler(std::filesystem::temp_directory_path() / ("tessera-fixture-" + file));
  const std::filesystem::path src = source_dir();
  return compiler.compile({tessera::codegen::read_file((src / "tests/gpu/fixtures" / file).string()),
                           file,
                           arch,
                           {src / "targets/common", src / "targets/kda"},  // (kda's ops/ for the tile fixtures)
                           {}});
}

}  // namespace tessera::testing
