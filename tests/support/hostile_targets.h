// tests/support/hostile_targets.h — a targets folder holding the hostile
// rmsnorm fixture (tests/gpu/fixtures/hostile_rmsnorm; or side_rmsnorm) plus the real
// rmsnorm reference, baseline and shared tile library, for the tests that run it
// (tests/gpu on a GPU, tests/pipeline against a fake worker, tests/core's spec checks).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace tessera::testing {

// (any rmsnorm-shaped fixture of tests/gpu/fixtures: hostile_rmsnorm, side_rmsnorm)
inline std::filesystem::path make_rmsnorm_fixture_targets(const std::filesystem::path& source_dir,
                                                          const std::string& fixture, const std::string& tag) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tessera-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / fixture);
  fs::copy(source_dir / "tests/gpu/fixtures" / fixture, dir / fixture, fs::copy_options::recursive);
  fs::copy(source_dir / "targets/rmsnorm/reference.cu", dir / fixture / "reference.cu");
  fs::copy(source_dir / "targets/rmsnorm/baseline.cu", dir / fixture / "baseline.cu");
  fs::copy(source_dir / "targets/common", dir / "common", fs::copy_options::recursive);
  return dir;
}

inline std::filesystem::path make_hostile_targets(const std::filesystem::path& source_dir, const std::string& tag) {
  return make_rmsnorm_fixture_targets(source_dir, "hostile_rmsnorm", tag);
}

}  // namespace tessera::testing
