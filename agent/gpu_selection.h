// agent/gpu_selection.h — which GPUs a session judges on (optimize, recheck and
// nightly's --gpus, a job file's "gpus"): every GPU the driver sees, none (compile and
// check only), or a list of ordinals. Parsed once where the words come in (cli/, the
// job file); a session only reads the value.
#pragma once

#include <string>
#include <vector>

namespace tessera::agent {

struct GpuSelection {
  enum class Kind { all, none, list };
  Kind kind = Kind::all;
  std::vector<int> ordinals;  // Kind::list: one or more, each >= 0, none twice, in the order given

  static GpuSelection all() { return {}; }
  static GpuSelection none() { return {Kind::none, {}}; }
  bool operator==(const GpuSelection&) const = default;
};

// "all", "none" or the ordinals joined by commas ("0,1"): what parse_gpu_selection reads.
std::string gpu_selection_name(const GpuSelection& g);
// Throws std::invalid_argument naming the accepted forms (all, none, a list like 0,1).
GpuSelection parse_gpu_selection(const std::string& s);

}  // namespace tessera::agent
