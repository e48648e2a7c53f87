// tests/support/shell.h — runs a command line for a test and returns its exit code
// with stdout and stderr together (the tests that drive the tessera binary).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace tessera::testing {

struct ShellResult {
  int code;         // the exit status; 128 when the command did not exit normally
  std::string out;  // stdout and stderr together
};

inline ShellResult shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {127, "popen failed: " + cmd};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128, out};
}

}  // namespace tessera::testing
