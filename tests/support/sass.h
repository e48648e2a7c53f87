// tests/support/sass.h — a cubin's SASS for the tests that check what ptxas made of a kernel.
// The disassembler is $TESSERA_CUOBJDUMP, else cuobjdump on PATH or in the CUDA toolkit, else
// the one triton's wheel carries (backends/nvidia/bin) in the Python with torch that the tests
// use (tests/support/torch_python.h: .ci/run installs it). A toolkit without a disassembler (a
// minimal install has ptxas and NVRTC but not cuobjdump) and no torch: "" with `why` saying so.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/shell.h"
#include "tests/support/torch_python.h"

namespace tessera::testing {

// The cuobjdump to use, or "" with `why` saying what is missing.
inline std::string cuobjdump(std::string* why) {
  namespace fs = std::filesystem;
  static std::string found, reason;
  static bool done = false;
  if (done) return *why = reason, found;
  done = true;
  if (const char* p = std::getenv("TESSERA_CUOBJDUMP"); p && *p) return found = p;
  if (shell("command -v cuobjdump").code == 0) return found = "cuobjdump";
  for (const char* home : std::initializer_list<const char*>{std::getenv("CUDA_HOME"), "/usr/local/cuda"})
    if (home && fs::exists(fs::path(home) / "bin/cuobjdump"))
      return found = (fs::path(home) / "bin/cuobjdump").string();
  std::string no_torch;
  const std::string py = torch_python(&no_torch);
  if (!py.empty()) {
    auto r = shell("'" + py + "' -c 'import os, triton; print(os.path.dirname(triton.__file__))'");
    std::string dir = r.out.substr(0, r.out.find('\n'));
    fs::path tool = fs::path(dir) / "backends/nvidia/bin/cuobjdump";
    if (r.code == 0 && fs::exists(tool)) return found = tool.string();
  }
  reason = "no cuobjdump: not on PATH nor in the CUDA toolkit, and no triton wheel (" +
           (py.empty() ? no_torch : "torch's Python has none") + "); set TESSERA_CUOBJDUMP";
  return *why = reason, found;
}

// The instructions of a cubin's kernels in order, one opcode with its modifiers a line
// ("HGMMA.64x128x16.F32.BF16", "R2UR", predicates dropped), each kernel's first line
// "Function : NAME". Empty with `why` set where there is no disassembler or it cannot decode
// the cubin (a cuobjdump older than the architecture).
inline std::vector<std::string> sass_opcodes(const std::string& cubin, std::string* why) {
  namespace fs = std::filesystem;
  const std::string tool = cuobjdump(why);
  if (tool.empty()) return {};
  const fs::path file = fs::temp_directory_path() / ("tessera-sass-" + std::to_string(getpid()) + ".cubin");
  std::ofstream(file, std::ios::binary) << cubin;
  auto r = shell("'" + tool + "' -sass '" + file.string() + "'");
  fs::remove(file);
  if (r.code != 0) {
    *why = tool + " could not disassemble the cubin: " + r.out.substr(0, 500);
    return {};
  }
  std::vector<std::string> ops;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (auto f = line.find("Function : "); f != std::string::npos) {
      ops.push_back(line.substr(f));
      continue;
    }
    // "        /*0150*/                   @!P0 BRA 0x70 ;   /* 0x... */"
    auto open = line.find("/*"), close = line.find("*/");
    if (open == std::string::npos || close == std::string::npos || line.find_first_not_of(" \t") != open) continue;
    std::istringstream words(line.substr(close + 2));
    std::string op;
    words >> op;
    if (!op.empty() && op[0] == '@') words >> op;
    if (op.empty() || op.rfind("/*", 0) == 0) continue;
    if (op.back() == ';') op.pop_back();
    ops.push_back(op);
  }
  return ops;
}

// The wgmma products (HGMMA) with an R2UR among the three instructions before them: the
// products' descriptors kept in ordinary registers and moved to uniform ones before each
// product, which ptxas does where it cannot keep them in uniform registers (a value it takes
// for divergent, a loop in the tile loop: gemm's and flash_attention's journals, 2026-12-03
// and 2026-12-05); it cost those kernels 2.5-17 %. One such product in a kernel is the
// descriptors' first move at a loop's entry (gemm's summing builds, after the stage address's
// broadcast); `worst` is the most in one kernel.
struct UniformCheck {
  int products = 0, moved = 0, worst = 0;
};
inline UniformCheck r2ur_before_products(const std::vector<std::string>& ops) {
  UniformCheck c;
  int in_kernel = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].rfind("Function : ", 0) == 0) in_kernel = 0;
    if (ops[i].rfind("HGMMA", 0) != 0) continue;
    ++c.products;
    for (size_t j = i >= 3 ? i - 3 : 0; j < i; ++j)
      if (ops[j].rfind("R2UR", 0) == 0) {
        ++c.moved;
        c.worst = std::max(c.worst, ++in_kernel);
        break;
      }
  }
  return c;
}

// "" where the cubin has wgmma products and no kernel of it moves their descriptors before
// each (at most one product a kernel after an R2UR); else what is wrong, for the test's
// message (also a cubin the disassembler could not read).
inline std::string descriptors_moved(const std::string& cubin) {
  std::string why;
  const auto ops = sass_opcodes(cubin, &why);
  if (ops.empty()) return why.empty() ? "no instructions in the disassembly" : why;
  const UniformCheck u = r2ur_before_products(ops);
  if (u.products == 0) return "no HGMMA in the SASS";
  if (u.worst > 1)
    return "R2UR before " + std::to_string(u.moved) + " of the " + std::to_string(u.products) + " products";
  return "";
}

}  // namespace tessera::testing
