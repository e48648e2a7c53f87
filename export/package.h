// export/package.h — what `tessera export` packs, as plain data, and the writers
// of each format. The exporter (export/export.cpp) fills an ExportPackage from the
// store and the spec and compiles every kernel for every requested architecture;
// each format writer turns the same package into one folder under the output:
//
//   DIR/manifest.json       operator, spec hash, candidates, their figures, dispatch
//   DIR/kernels/            c<ID>.<arch>.cubin and c<ID>.ptx for every candidate
//   DIR/src/                c<ID>.cu (rendered sources) and the headers they include
//   DIR/cpp/                format cpp: a C ABI library over the CUDA driver API
//                           (export/format_cpp.cpp; docs/export.md)
//   DIR/torch/              format torch: a pip-installable package over DIR/cpp's library
//   DIR/flashinfer/         format flashinfer: a FlashInfer Trace folder with a Solution
//
// What lives here: the types and the writers' entry points. What does not: how a
// candidate is chosen (export.cpp) or the words of the generated files' templates.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace tessera::exporter {

// One kernel image of one candidate for one architecture.
struct KernelImage {
  std::string arch;   // "sm_90a"
  std::string cubin;  // binary
};

// One candidate as packed: its program with the parameters fixed, its compiled code,
// and the figures the store holds for it.
struct PackedCandidate {
  long long id = 0;
  std::string name;           // "c42": file and symbol stem
  std::string template_name;  // spec template, or the LLM proposal's name
  std::map<std::string, long long> params;
  spec::Program program;  // launch plan (expressions over symbols, params and SMS)
  std::string source;     // rendered source (parameters #defined)
  std::vector<KernelImage> images;
  std::string ptx;         // for the lowest requested architecture's virtual one (forward compatibility)
  std::string ptx_arch;    // "compute_90a"
  nlohmann::json figures;  // {"device", "driver", "date", "geomean_speedup", "max_rel_l2", "shapes": [...]}
};

// Which candidate serves a call (docs/export.md, "Per-shape dispatch"): the first
// rule whose symbols all equal the call's serves it; else `fallback`.
struct DispatchRule {
  std::string shape;                         // benchmark shape label
  std::map<std::string, long long> symbols;  // the shape's symbols (T and NSEQ included for ragged operators)
  size_t candidate = 0;                      // index into ExportPackage::candidates
};

struct ExportPackage {
  const spec::Operator* op = nullptr;
  std::string spec_hash;
  std::string tessera_commit;                  // `git describe` of the source tree, or "unknown"
  std::string created;                         // ISO date
  std::vector<std::string> archs;              // requested, e.g. {"sm_90a", "sm_103a"}
  std::vector<PackedCandidate> candidates;     // [0] is the overall champion (the fallback)
  std::vector<DispatchRule> dispatch;          // empty without --per-shape
  std::vector<std::filesystem::path> headers;  // files the sources include (relative to DIR/src)
};

// C identifier stem of the operator ("rmsnorm" -> "rmsnorm"; other characters become '_').
std::string c_name(const std::string& op_name);

// Writes a file, creating its folder (throws std::runtime_error naming it).
void write_text(const std::filesystem::path& p, const std::string& text);

// Writers: each makes its folder under `out` (throws std::runtime_error naming the
// file it could not write).
void write_manifest(const ExportPackage& p, const std::filesystem::path& out);
void write_kernels_and_sources(const ExportPackage& p, const std::filesystem::path& out);
void write_cpp(const ExportPackage& p, const std::filesystem::path& out);
void write_torch(const ExportPackage& p, const std::filesystem::path& out);
void write_flashinfer(const ExportPackage& p, const std::filesystem::path& out);

}  // namespace tessera::exporter
