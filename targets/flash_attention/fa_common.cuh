// fa_common.cuh — what every flash_attention kernel shares: the problem's pointers and
// sizes, and the ragged tile lookup (which sequence and rows a block owns).
#pragma once
#include <cuda_bf16.h>

namespace fa {

// -inf (NVRTC has no INFINITY)
__device__ __forceinline__ float neg_inf() {
  return __int_as_float(0xff800000u);
}

// The block's (sequence, first query row in it); false past the last tile. Causal:
// a sequence's tiles are numbered from its end, so the blocks launched first are those
// with the most keys to visit.
__device__ __forceinline__ bool find_tile(const int* cu_q, long long B, long long tile_index, int bm, bool causal,
                                          long long* seq, long long* row0) {
  for (long long s = 0; s < B; ++s) {
    const long long n = (cu_q[s + 1] - cu_q[s] + bm - 1) / bm;
    if (tile_index < n) {
      *seq = s;
      *row0 = (causal ? n - 1 - tile_index : tile_index) * bm;
      return true;
    }
    tile_index -= n;
  }
  return false;
}

struct Problem {
  const __nv_bfloat16 *q, *k, *v;
  const int *cu_q, *cu_k;
  __nv_bfloat16* o;
  float* lse;
  long long B, HQ, HKV;
  bool causal;
  float scale_log2;  // scale * log2(e)
};

}  // namespace fa
