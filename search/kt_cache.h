// search/kt_cache.h — reading Kernel Tuner cache files (recorded tuning runs).
//
// A Kernel Tuner cache is one JSON object: "tune_params" (name -> list of values),
// "tune_params_keys" (their order) and "cache" (key "v1,v2,..." -> one recorded
// evaluation). The file may be gzipped, and a run that was interrupted leaves it
// unclosed; both are handled here. Turning the records into a Space and a cost
// function is search/simulation's job, not this file's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "search/space.h"

namespace tessera::search {

// One recorded evaluation. Kernel Tuner stores the kernel time and the three
// durations below in milliseconds.
struct KtCacheEntry {
  std::vector<std::string> values;  // one per parameter, as in the cache key
  bool ok = false;                  // time is a number
  double time_ms = 0;               // the objective, only if ok
  std::string failure;              // "CompilationFailedConfig", "RuntimeFailedConfig", "InvalidConfig"
  double compile_ms = 0;
  double verification_ms = 0;
  double benchmark_ms = 0;
};

struct KtCache {
  std::string path;
  std::string device_name;
  std::string kernel_name;
  std::string objective = "time";
  std::vector<Param> params;          // in tune_params_keys order, values as Python's str() writes them
  std::vector<KtCacheEntry> entries;  // in file order
  bool repaired = false;              // the file was unclosed and had to be closed
  size_t dropped = 0;                 // entries whose values are not in tune_params (skipped)
};

// Reads a cache file, plain or gzipped. Throws std::runtime_error naming the file
// and what was wrong when it cannot be read or parsed even after repair.
KtCache read_kt_cache(const std::string& path);

// Parses cache text (already decompressed). `origin` names it in error messages.
KtCache parse_kt_cache(const std::string& text, const std::string& origin);

// Closes JSON text that was cut off: drops the trailing incomplete member and
// appends the brackets still open. Members nested deeper than `max_depth` are
// kept or dropped whole (a cache entry is at depth 2: root, then "cache"), so a
// half-written entry disappears instead of surviving with fields missing.
// Returns the text unchanged if it is complete.
std::string close_truncated_json(const std::string& text, size_t max_depth = SIZE_MAX);

}  // namespace tessera::search
