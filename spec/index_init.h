// spec/index_init.h — the inputs the judge writes from the host instead of drawing on
// the device: index tensors, whose entries must be valid (offsets that rise from 0 to a
// total, page indices inside the cache), not random integers.
//
//   cu_seqlens  the exclusive prefix sum of the shape's seqlens (NSEQ+1 entries)
//   offsets     0 = o[0] <= .. <= o[n-1] = last; segment lengths drawn log-normally
//               (sigma 1) from the seed, each at least 1 while the total allows, so that
//               batches mix short and long sequences; with not_below, every segment is
//               at least the named tensor's (keys that cover their queries)
//   indices     n entries in [0, below), distinct while n <= below, in random order
//   values      the shape's own entries (a workload's fixed index data)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace tessera::spec {

// True for the distributions above (generated here, on the host).
bool host_generated(const Init& in);

// The entries of input `t` (n elements) at shape `s` with bindings `b`, from `seed`.
// `earlier` holds the host-generated inputs already made for this (shape, seed), by name
// (not_below reads its partner there). Throws SpecError saying which tensor and why
// when the shape makes valid entries impossible (a key total below the query total).
std::vector<long long> generate_index(const Tensor& t, const Init& in, const Shape& s, const Bindings& b, long long n,
                                      unsigned long long seed,
                                      const std::map<std::string, std::vector<long long>>& earlier);

}  // namespace tessera::spec
