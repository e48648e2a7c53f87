// search/cost.h — the one interface between strategies and whatever measures.
//
// A strategy asks a CostFunction to evaluate a batch of configurations and gets
// one Outcome each. Behind it may be a real GPU (agent/), a replayed Kernel Tuner
// cache or tessera's own recorded runs (search/simulation): the strategy never knows.
#pragma once

#include <string>
#include <vector>

#include "search/space.h"

namespace tessera::search {

struct Outcome {
  bool ok = false;        // false: failed to compile, run, or validate
  double cost = 0;        // lower is better (time in ms, or -speedup): only if ok
  std::string failure;    // why not ok (status word), empty if ok
  double seconds = 0;     // time the evaluation took (real or simulated)
  bool recorded = false;  // answered from stored history (resumed): costs no budget
};

class CostFunction {
 public:
  virtual ~CostFunction() = default;
  // Evaluate configurations; may run them in parallel. Returns one Outcome each.
  virtual std::vector<Outcome> evaluate(const std::vector<Config>& batch) = 0;
};

}  // namespace tessera::search
