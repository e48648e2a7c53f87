// export/export.h — `tessera export`: choose candidates from the store, compile them
// for the requested architectures, and write the package (export/package.h,
// docs/export.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "export/package.h"

namespace tessera::exporter {

struct ExportOptions {
  std::string op;
  std::string db;
  std::string out;
  std::optional<long long> candidate;  // else the operator's champion
  bool per_shape = false;              // also each benchmark shape's champion
  std::string device;  // the GPU model whose timings choose (empty: the latest's where there are several)
  std::vector<std::string> formats = {"cpp"};  // cpp, torch, flashinfer
  std::vector<std::string> archs;              // empty: the champion's architecture
};

// Builds the package in memory (throws std::runtime_error saying what is missing).
ExportPackage build_package(const ExportOptions& o, const spec::Operator& op);
// The command: prints what it wrote; 0 success, 1 failure, 2 usage.
int run_export(const ExportOptions& o);

}  // namespace tessera::exporter
