// targets/kda/kda_chunk_wgmma.cu — template chunk_wgmma (spec.json, sm_90a): kda_chunk_intra
// (CH 64: kernels/intra64.cuh; CH 32: kernels/intra32.cuh, with PIPE also
// kda_chunk_intra_beside, kda_chunk_intra_lead and kda_chunk_flags) and kda_chunk_state on
// wgmma (kernels/state_wgmma.cuh, with PIPE also kda_chunk_state_beside). Parameters GM, TRN,
// CH, UA, RC, PIPE, LEAD (BV 128, SW 8, PREC 2, STG 0 fixed); the design and every parameter:
// kernels/config.cuh. The entry points of the state kernels are here; their bodies are
// templates over the parameters (Kc, the renderer's values).
#include "kernels/config.cuh"
#include "kernels/common.cuh"
#include "kernels/intra64.cuh"
#include "kernels/intra32.cuh"
#include "kernels/state_wgmma.cuh"

using Kc = KcParams<CH, BV, SW, PREC, STG, GM, TRN, /*SEG*/ 0, UA, RC, PIPE>;

#define TESSERA_SMEM_kda_chunk_state WgmmaSmem<Kc>::bytes  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(kc_state_threads(RC), 1) kda_chunk_state(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale, const __nv_bfloat16* __restrict__ vin, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, float lower_bound, const __grid_constant__ tile::tmap map_q,
    const __grid_constant__ tile::tmap map_k, const __grid_constant__ tile::tmap map_g,
    const __grid_constant__ tile::tmap map_v) {  // (RC 1 only: tmap:NAME:64x1x32:128)
  kc_state_wgmma<Kc>(h0, cu, qg, kd, w, u, P, gl, order, o, ht, T, H, K, V, NSEQ, scale, vin, A_log, dt_bias,
                     lower_bound, &map_q, &map_k, &map_g, &map_v);
}
// (The one preprocessor fork of this file: whether the module has the PIPE kernels at all; an
// extern "C" kernel cannot be a template, and a kernel defined is a kernel compiled.)
#if PIPE
#define TESSERA_SMEM_kda_chunk_state_beside WgmmaSmem<Kc>::bytes  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(512, 1) kda_chunk_state_beside(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale, const __nv_bfloat16* __restrict__ vin, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, float lower_bound, const __grid_constant__ tile::tmap map_q,
    const __grid_constant__ tile::tmap map_k, const __grid_constant__ tile::tmap map_g,
    const __grid_constant__ tile::tmap map_v, const int* flags) {
  kc_state_beside<Kc>(h0, cu, qg, kd, w, u, P, gl, order, o, ht, T, H, K, V, NSEQ, scale, vin, A_log, dt_bias,
                      lower_bound, &map_q, &map_k, &map_g, &map_v, flags);
}
#endif
