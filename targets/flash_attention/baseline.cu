// baseline.cu — tessera flash_attention baseline: a straightforward tiled online-softmax
// kernel on mma.sync (what the speedup column is measured against).
//
// One block of 4 warps per 64 query rows of one sequence and query head, key tiles of 64,
// loads without a pipeline (load K and V, wait, compute, repeat), the building blocks of
// fa_mma.cuh (Q in registers, S and P in registers, fp32 accumulation, online softmax in
// the log2 domain, causal tiles past the diagonal skipped and the diagonal ones masked).
// Launch: grid (HQ, cdiv(TQ, 64) + B), block 128, dynamic shared memory (64 + 2*64)*D*2.
#include "fa_mma.cuh"

extern "C" __global__ void __launch_bounds__(128, 1)
    flash_attention_baseline(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* cu_q,
                             const int* cu_k, __nv_bfloat16* o, float* lse, long long B, long long TQ, long long TK,
                             long long HQ, long long HKV, long long D, long long CAUSAL, float scale) {
  const fa::Problem p{q, k, v, cu_q, cu_k, o, lse, B, HQ, HKV, CAUSAL != 0, scale * 1.4426950408889634f};
  fa::attend<64, 64, 4, 1>(p, D);
}
