// tests/support/hostile_targets.h — a targets folder holding the hostile
// rmsnorm fixture (tests/gpu/fixtures/hostile_rmsnorm) plus the real rmsnorm
// reference, baseline and shared tile library, for the tests that run it
// (tests/gpu on a GPU, tests/pipeline against a fake worker).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace tessera::testing {

inline std::filesystem::path make_hostile_targets(const std::filesystem::path& source_dir, const std::string& tag) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tessera-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "hostile_rmsnorm");
  fs::copy(source_dir / "tests/gpu/fixtures/hostile_rmsnorm", dir / "hostile_rmsnorm", fs::copy_options::recursive);
  fs::copy(source_dir / "targets/rmsnorm/reference.cu", dir / "hostile_rmsnorm/reference.cu");
  fs::copy(source_dir / "targets/rmsnorm/baseline.cu", dir / "hostile_rmsnorm/baseline.cu");
  fs::copy(source_dir / "targets/common", dir / "common", fs::copy_options::recursive);
  return dir;
}

}  // namespace tessera::testing
