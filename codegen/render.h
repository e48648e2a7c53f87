// codegen/render.h — turning a template plus parameter values into a source.
//
// A variant's source is its template with `#define NAME value` lines in front,
// so a template reads as plain CUDA C++ with its tunables as macros.
#pragma once

#include <map>
#include <string>

namespace tessera::codegen {

std::string render(const std::string& template_source, const std::map<std::string, long long>& params);

// 64-bit content hash (xxh3) in hex; used for sources and cache keys.
std::string content_hash(const std::string& bytes);

std::string read_file(const std::string& path);  // throws with the path on failure

}  // namespace tessera::codegen
