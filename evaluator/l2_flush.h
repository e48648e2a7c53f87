// evaluator/l2_flush.h — how L2 is evicted before each timed launch, so that every
// sample is cold-L2 (EVALUATION.md). Two ways, two types:
//   write: a memset of a buffer twice the L2's size (the default; leaves dirty lines,
//          which the timed kernel's first misses may have to write back)
//   read:  a kernel that reads such a buffer (leaves clean lines): an experiment knob,
//          whose figures are not compared with the write flush's (the timing method says so)
// Both are stream operations, capturable into a graph.
#pragma once

#include <memory>
#include <string>

#include "evaluator/device.h"

namespace tessera::evaluator {

enum class L2Flush { write, read };
const char* l2_flush_name(L2Flush f);          // "write" | "read"
L2Flush parse_l2_flush(const std::string& s);  // throws std::invalid_argument naming the choices

class L2Evictor {
 public:
  virtual ~L2Evictor() = default;
  virtual void evict() = 0;  // enqueued on the device's stream
};

// The evictor for `f` (`builtins`: the evaluator's own kernels, for the read flush).
std::unique_ptr<L2Evictor> make_l2_evictor(L2Flush f, Device& dev, Module& builtins);

}  // namespace tessera::evaluator
