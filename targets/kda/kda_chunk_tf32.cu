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

using Kc = KcParams</*CH*/ 64, BV, SW, PREC, STG, /*GM*/ 0, /*TRN*/ 0, /*SEG*/ 0, /*UA*/ 0, /*RC*/ 0, /*PIPE*/ 0>;

// kda_chunk_intra: grid (NSEQ + floor(T/64), H), block 256 (kc_intra64).
#define TESSERA_SMEM_kda_chunk_intra Intra64Smem<Kc>::bytes  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(256, 2) kda_chunk_intra(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
    const __nv_bfloat16* __restrict__ g, const __nv_bfloat16* __restrict__ beta, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, const long long* __restrict__ cu, Kc::elem* __restrict__ qg,
    Kc::elem* __restrict__ kd, Kc::elem* __restrict__ w, Kc::elem* __restrict__ u, Kc::elem* __restrict__ P,
    float* __restrict__ gl, int* __restrict__ order, long long T, long long H, long long K, long long V,
    long long NSEQ, float lower_bound) {
  kc_intra64<Kc>(q, k, v, g, beta, A_log, dt_bias, cu, qg, kd, w, u, P, gl, order, T, H, K, V, NSEQ, lower_bound);
}

// The blocks per SM kda_chunk_state's registers are allocated for: PREC 2 asks for one, or
// two with STG 1 at BV <= 64; the fp32 kernel asks nothing (0: the compiler's choice, not
// the same as 1).
constexpr int kc_state_min_blocks(int prec, int stg, int bv) {
  return prec == 2 ? kc_state_f16_blocks(stg, bv) : 0;
}
// kda_chunk_state: grid (NSEQ * H, 1, 128 / BV), block SW * 32 (kc_state_f32, kc_state_f16).
enum : int {
  kTf32StateSmem = Kc::prec == 2 ? (int)F16Smem<Kc::ch, Kc::bv, Kc::stg>::bytes : (int)F32Smem<Kc::ch, Kc::bv>::bytes,
};
// PREC picks the body (a template, so that the other is not instantiated).
template <int kPREC, class... Args>
__device__ __forceinline__ void kc_state_tf32(Args... args) {
  if constexpr (kPREC == 2)
    kc_state_f16<Kc::ch, Kc::bv, Kc::sw, Kc::stg>(args...);
  else
    kc_state_f32<Kc::ch, Kc::bv, Kc::sw, kPREC>(args...);
}
#define TESSERA_SMEM_kda_chunk_state kTf32StateSmem  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(Kc::sw * 32, kc_state_min_blocks(Kc::prec, Kc::stg, Kc::bv)) kda_chunk_state(
    const float* __restrict__ h0, const long long* __restrict__ cu, const Kc::elem* __restrict__ qg,
    const Kc::elem* __restrict__ kd, const Kc::elem* __restrict__ w, const Kc::elem* __restrict__ u,
    const Kc::elem* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale) {
  kc_state_tf32<Kc::prec>(h0, cu, qg, kd, w, u, P, gl, order, o, ht, T, H, K, V, NSEQ, scale);
}
