// agent/llm/sanitize.h — the static checks a proposed kernel source must pass
// before NVRTC ever sees it (EVALUATION.md, "Static checks"): includes only from
// the allowed set, no host code, no device-side launches, streams or allocations,
// no state that persists between launches, no trap. Works on text (comments and
// literals are understood, object-like macros are expanded one level); it is a
// gate against mistakes and cheating, not a full C++ parser.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::llm {

struct StaticCheckOptions {
  // <...> or "..." names allowed exactly.
  std::vector<std::string> allowed_headers = {"cuda_bf16.h", "cuda_fp16.h",     "cuda_fp8.h",
                                              "mma.h",       "cuda_pipeline.h", "cooperative_groups.h"};
  // Allowed name prefixes: libcu++ (<cuda/...>), cooperative groups, the tile library.
  std::vector<std::string> allowed_header_prefixes = {"cuda/", "cooperative_groups/", "tile/"};
  // Files of the target folder that a candidate may include ("rmsnorm_common.cuh").
  std::vector<std::string> target_files;
  // Non-const __device__/__managed__ globals (and static locals) the spec declares.
  std::vector<std::string> allowed_device_globals;
  bool allow_all_device_globals = false;
};

struct Violation {
  int line = 0;      // 1-based line in the proposed source
  std::string rule;  // include, preprocessor, host_code, launch, stream, allocation,
                     // global_state, trap
  std::string message;
  friend bool operator==(const Violation&, const Violation&) = default;
};

// All violations, in line order; empty means the source may be compiled.
std::vector<Violation> check_source(std::string_view source, const StaticCheckOptions& options = {});

// "line 3: [include] ...\nline 9: [launch] ..." — for logs and for the model.
std::string format_violations(const std::vector<Violation>& violations);

// The include rule alone, shared with the compile-log scrubber: is this header name
// (the text between <> or "") allowed?
bool header_allowed(std::string_view name, const StaticCheckOptions& options);

}  // namespace tessera::llm
