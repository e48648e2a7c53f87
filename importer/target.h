// importer/target.h — `tessera import`: a FlashInfer Trace definition made into a
// tessera operator folder (docs/import.md has the rules this code follows).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "importer/definition.h"

namespace tessera::importer {

struct ImportOptions {
  std::filesystem::path path;       // a definition .json, a folder holding definition.json, or a dataset folder
  std::string name;                 // the definition's name inside a dataset folder
  std::filesystem::path out;        // where the operator folder goes (default: tessera's targets folder)
  std::filesystem::path workloads;  // overrides where the workloads are looked for
  int max_benchmark_shapes = 8;
};

// Where a definition's files are: the definition, its workloads (empty: none found),
// a baseline.py beside it (empty: none), the dataset's root (safetensors paths are
// relative to it).
struct Located {
  std::filesystem::path definition, workloads, baseline, root;
};
Located locate(const ImportOptions& o);

struct ImportResult {
  std::filesystem::path dir;       // the operator folder written
  std::string name;                // the operator's name
  std::vector<std::string> notes;  // what the import decided and why, for the user
  nlohmann::ordered_json spec;
};

// Builds the operator (spec.json, the definition and workloads copied beside it, a
// baseline.py, the sources of the project's templates for a known op_type) and writes
// it to out/<name>. Throws ImportError for a definition tessera refuses.
ImportResult import_definition(const ImportOptions& o);

// The spec alone (no files written), for tests: what import_definition would write.
ImportResult build_target(const Located& where, const Definition& def, const std::vector<Workload>& workloads,
                          int max_benchmark_shapes);

}  // namespace tessera::importer
