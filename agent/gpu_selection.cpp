// agent/gpu_selection.cpp — the --gpus words and their value (agent/gpu_selection.h).
#include "agent/gpu_selection.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace tessera::agent {

std::string gpu_selection_name(const GpuSelection& g) {
  if (g.kind == GpuSelection::Kind::all) return "all";
  if (g.kind == GpuSelection::Kind::none) return "none";
  std::string out;
  for (int k : g.ordinals) {
    if (!out.empty()) out += ',';
    out += std::to_string(k);
  }
  return out;
}

GpuSelection parse_gpu_selection(const std::string& s) {
  if (s == "all") return GpuSelection::all();
  if (s == "none") return GpuSelection::none();
  auto refuse = [&](const std::string& why) {
    throw std::invalid_argument("GPUs '" + s + "'" + why + ": expected all, none or a list of GPU ordinals like 0,1");
  };
  GpuSelection g{GpuSelection::Kind::list, {}};
  size_t pos = 0;
  while (true) {
    size_t comma = s.find(',', pos);
    std::string tok = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    bool digits = !tok.empty() && tok.size() <= 4;
    for (char c : tok) digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
    if (!digits) refuse("");
    int k = std::stoi(tok);
    if (std::count(g.ordinals.begin(), g.ordinals.end(), k)) refuse(" names GPU " + tok + " twice");
    g.ordinals.push_back(k);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return g;
}

}  // namespace tessera::agent
