// codegen/render.cpp — template rendering and content hashing.
#include "codegen/render.h"

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tessera::codegen {

std::string render(const std::string& template_source, const std::map<std::string, long long>& params) {
  std::string out = "// tessera variant:";
  for (auto& [k, v] : params) out += fmt::format(" {}={}", k, v);
  out += "\n";
  for (auto& [k, v] : params) out += fmt::format("#define {} {}\n", k, v);
  out += "#line 1\n";
  out += template_source;
  return out;
}

std::string content_hash(const std::string& bytes) {
  return fmt::format("{:016x}", XXH3_64bits(bytes.data(), bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tessera::codegen
