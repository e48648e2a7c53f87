// evaluator/judge_internal.h — what the judge's files (judge.cpp, judge_validate.cpp,
// judge_timing.cpp) share and nothing else includes.
#pragma once

#include <stdexcept>

namespace tessera::evaluator::judge_detail {

// Raised when a candidate's fault leaves the context unusable: the worker
// reports and exits, and the agent starts a fresh one.
struct StickyFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tessera::evaluator::judge_detail
