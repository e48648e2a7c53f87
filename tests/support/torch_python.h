// tests/support/torch_python.h — the Python with torch that the tests which run Python
// use (tests/export's packages, tests/core's reference process): $TESSERA_TEST_PYTHON,
// else python3 if it imports torch, else a virtual environment at $TESSERA_TEST_VENV
// (default ~/.cache/tessera/test-venv-torch), made (torch from PyPI, about 5 GB and 4
// minutes) only when TESSERA_TEST_INSTALL_TORCH=1, as .ci/run sets it. One function for
// every test: tests that run at once must agree on what a ready venv holds, or one would
// find the other's wanting and remake it under it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/shell.h"

namespace tessera::testing {

// The interpreter, or "" with `why` saying what is missing.
inline std::string torch_python(std::string* why) {
  namespace fs = std::filesystem;
  static std::string found, reason;
  static bool done = false;
  if (done) return *why = reason, found;
  done = true;
  auto quote = [](const fs::path& p) { return "'" + p.string() + "'"; };
  if (const char* p = std::getenv("TESSERA_TEST_PYTHON"); p && *p) return found = p;
  if (shell("python3 -c 'import torch' ").code == 0) return found = "python3";
  const char* home = std::getenv("HOME");
  fs::path venv = std::getenv("TESSERA_TEST_VENV") ? fs::path(std::getenv("TESSERA_TEST_VENV"))
                                                   : fs::path(home ? home : "/tmp") / ".cache/tessera/test-venv-torch";
  std::string py = (venv / "bin/python").string();
  auto ready = [&] { return shell(quote(py) + " -c 'import torch, numpy, pydantic, safetensors' ").code == 0; };
  if (ready()) return found = py;
  const char* install = std::getenv("TESSERA_TEST_INSTALL_TORCH");
  if (!install || std::string(install) != "1") {
    reason =
        "no Python with torch: set TESSERA_TEST_PYTHON, or TESSERA_TEST_INSTALL_TORCH=1 to install torch from "
        "PyPI into " +
        venv.string() + " (about 5 GB; .ci/run does)";
    return *why = reason, found;
  }
  fs::create_directories(venv.parent_path());
  std::string cmd = "flock " + quote(venv.string() + ".lock") + " sh -c \"" + quote(py) +
                    " -c 'import torch, numpy, pydantic, safetensors' 2>/dev/null || { rm -rf " + quote(venv) +
                    " && python3 -m venv " + quote(venv) + " && " + quote(venv / "bin/pip") +
                    " install -q torch numpy pydantic safetensors docstring-parser einops packaging setuptools && " +
                    quote(venv / "bin/pip") + " install -q --no-deps flashinfer-bench==0.1.2 fla-core==0.6.0; }\"";
  auto r = shell(cmd);
  if (r.code != 0 || !ready()) {
    reason = "installing torch into " + venv.string() + " failed: " + r.out.substr(0, 2000);
    return *why = reason, found;
  }
  return found = py;
}

}  // namespace tessera::testing
