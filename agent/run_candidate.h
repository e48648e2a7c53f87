// agent/run_candidate.h — `tessera run`: one program (a stored candidate, or
// the operator's reference or baseline) on inputs read from .npy files, with
// its outputs written as .npy, optionally timed. This is how a user checks a
// kernel on real captured activations, and how peer benchmarks share inputs.
#pragma once

#include <string>

namespace tessera::agent {

struct RunOptions {
  std::string op;
  std::string db = "runs/tessera.db";
  long long candidate = 0;         // a stored candidate id, or 0 with role set
  std::string role = "candidate";  // candidate | reference | baseline
  std::string inputs_dir, outputs_dir;
  int repeat = 0;  // timed cold-L2 launches after the first run
  int gpu = 0;
  bool json = false;
};

// Returns a process exit code (0 ok, 1 failure, 2 usage).
int run_candidate(const RunOptions& o);

}  // namespace tessera::agent
