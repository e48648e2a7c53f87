// targets/kda/kda_chunk_tf32.cu — template chunk_tf32 (spec.json): kda_chunk_intra (CH 64,
// kernels/intra64.cuh) then kda_chunk_state on mma.sync, fp32/tf32 (PREC 0, 1:
// kernels/state_f32.cuh) or fp16 (PREC 2: kernels/state_f16.cuh). Parameters BV, SW, PREC,
// STG; the design and every parameter: kernels/config.cuh. The entry points are here, the
// kernel bodies are templates over the parameters, instantiated with the renderer's values.
#include "kernels/config.cuh"
#include "kernels/common.cuh"
#include "kernels/intra64.cuh"
#include "kernels/state_f32.cuh"
#include "kernels/state_f16.cuh"

// The blocks per SM kda_chunk_state's registers are allocated for: PREC 2 asks for one, or
// two with STG 1 at BV <= 64; the fp32 kernel asks nothing (0: the compiler's choice, not
// the same as 1).
constexpr int kc_state_min_blocks(int prec, int stg, int bv) {
  return prec == 2 ? kc_state_f16_blocks(stg, bv) : 0;
}
// kda_chunk_state: grid (NSEQ * H, 1, 128 / BV), block SW * 32 (kc_state_f32, kc_state_f16).
enum : int {
  kTf32StateSmem = PREC == 2 ? (int)F16Smem<64, BV, STG>::bytes : (int)F32Smem<64, BV>::bytes,
};
// PREC picks the body (a template, so that the other is not instantiated).
template <int kPREC, class... Args>
__device__ __forceinline__ void kc_state_tf32(Args... args) {
  if constexpr (kPREC == 2)
    kc_state_f16<64, BV, SW, STG>(args...);
  else
    kc_state_f32<64, BV, SW, kPREC>(args...);
}
#define TESSERA_SMEM_kda_chunk_state kTf32StateSmem  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(SW * 32, kc_state_min_blocks(PREC, STG, BV)) kda_chunk_state(
    const float* __restrict__ h0, const long long* __restrict__ cu, const kc_elem* __restrict__ qg,
    const kc_elem* __restrict__ kd, const kc_elem* __restrict__ w, const kc_elem* __restrict__ u,
    const kc_elem* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale) {
  kc_state_tf32<PREC>(h0, cu, qg, kd, w, u, P, gl, order, o, ht, T, H, K, V, NSEQ, scale);
}
