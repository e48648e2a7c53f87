// fa2_mma.cu — tessera flash_attention template: FlashAttention-2 on mma.sync (sm_80+
// instructions; compiled for sm_90a, sm_100a, sm_103a).
//
// Parameters (#defined by tessera):
//   BLOCK_M  query rows per block (64, 128)
//   WARPS    warps per block, each owning 16 query rows (BLOCK_M == 16 * WARPS: Q held in
//            registers) or 32 (BLOCK_M == 32 * WARPS: two 16-row groups share every K and
//            V fragment, Q read from shared memory per key tile; fits 255 registers at
//            D 128 only with BLOCK_N 32 and STAGES 2)
//   BLOCK_N  keys per K/V tile (32, 64; 128 spills at D 128: S, O and Q fragments
//           do not fit 255 registers)
//   STAGES   K/V shared-memory buffers in the cp.async pipeline (2, 3, 4)
// Launch: grid (HQ, cdiv(TQ, BLOCK_M) + B), block WARPS*32, dynamic shared memory
// (BLOCK_M + 2*STAGES*BLOCK_N)*D*2 bytes (TESSERA_SMEM_fa2_mma at D 128).
// The algorithm (fa_mma.cuh, attend_block): Q held in registers, S = Q K^T and the online
// softmax in registers, P V from the S accumulators, causal tiles past the diagonal
// skipped, only the diagonal and key-tail tiles masked, causal tiles launched longest
// first within a sequence.
#include "fa_mma.cuh"

#define TESSERA_SMEM_fa2_mma ((BLOCK_M + 2 * STAGES * BLOCK_N) * 128 * 2)

extern "C" __global__ void __launch_bounds__(WARPS * 32, 1)
    fa2_mma(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* cu_q, const int* cu_k,
            __nv_bfloat16* o, float* lse, long long B, long long TQ, long long TK, long long HQ, long long HKV,
            long long D, long long CAUSAL, float scale) {
  const fa::Problem p{q, k, v, cu_q, cu_k, o, lse, B, HQ, HKV, CAUSAL != 0, scale * 1.4426950408889634f};
  fa::attend<BLOCK_M, BLOCK_N, WARPS, STAGES>(p, D);
}
