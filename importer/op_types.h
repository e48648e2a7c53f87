// importer/op_types.h — what tessera knows about an op_type of the FlashInfer Trace
// format: its FLOPs and bytes, whether it is bound by memory, and which of the
// project's templates tune it (rmsnorm and fused_add_rmsnorm: targets/rmsnorm's rows;
// gemm C = A @ B.T: targets/gemm's mma and mma_splitk). Other op_types are searched by
// the LLM proposer alone.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "importer/definition.h"

namespace tessera::importer {

struct OpTraits {
  bool bandwidth_bound = false;
  std::string flops = "0";
  std::string bytes;  // empty: every tensor read or written once
  // FLOPs of a shape whose index inputs are fixed (ragged attention), or empty.
  std::function<double(const std::map<std::string, long long>& axes,
                       const std::map<std::string, std::vector<long long>>& fixed)>
      flops_of_indices;
  nlohmann::ordered_json templates = nlohmann::ordered_json::array();
  std::map<std::string, nlohmann::ordered_json> extra_scalars;  // e.g. rmsnorm's eps, read from the reference
  std::vector<std::string> notes;
};

OpTraits op_traits(const Definition& d);

// The project files the spec's templates name (file name in the operator folder ->
// the file under tessera's targets folder it is copied from).
std::vector<std::pair<std::string, std::filesystem::path>> template_sources(const nlohmann::ordered_json& spec);

}  // namespace tessera::importer
