// cli/import.cpp — `tessera import PATH [--name N] [--out DIR]`: a FlashInfer Trace
// definition made into an operator folder (importer/target.h, docs/import.md).
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "importer/target.h"
#include "spec/spec.h"

namespace tessera::cli {

int cmd_import(const importer::ImportOptions& opts, bool json) {
  importer::ImportOptions o = opts;
  if (o.out.empty()) o.out = spec::targets_dir();
  importer::ImportResult r;
  try {
    r = importer::import_definition(o);
    spec::load_operator(r.dir);  // what was written loads as an operator
  } catch (std::exception& e) {
    std::cerr << "tessera import: " << e.what() << "\n";
    return 1;
  }
  if (json) {
    std::cout << nlohmann::json{{"operator", r.name}, {"dir", r.dir.string()}, {"notes", r.notes}}.dump(2) << "\n";
    return 0;
  }
  size_t nv = r.spec["validation_shapes"].size(), nb = r.spec["benchmark_shapes"].size();
  std::cout << fmt::format("imported {} into {}: {} template(s), {} validation and {} benchmark shapes\n", r.name,
                           r.dir.string(), r.spec["templates"].size(), nv, nb);
  for (auto& n : r.notes) std::cout << "  - " << n << "\n";
  std::cout << fmt::format("next: tessera optimize {}{}\n", r.name,
                           r.spec["templates"].empty() ? " --proposer llm" : "");
  return 0;
}

}  // namespace tessera::cli
