// export/cpp_runtime.h — the fixed part of every generated tessera_<op>.cpp (see
// export/cpp_runtime.cpp): text, placed after the header include.
#pragma once

namespace tessera::exporter {

// Limits the runtime's candidate table holds (export.cpp checks a package against them).
inline constexpr int kMaxImagesPerCandidate = 8;
inline constexpr int kMaxKernelsPerCandidate = 16;

const char* cpp_runtime_source();

}  // namespace tessera::exporter
