// targets/kda/kda_chunk_wgmma.cu — template chunk_wgmma (spec.json, sm_90a): kda_chunk_intra
// (CH 64: kernels/intra64.cuh; CH 32: kernels/intra32.cuh, with PIPE also
// kda_chunk_intra_beside, kda_chunk_intra_lead and kda_chunk_flags) and kda_chunk_state on
// wgmma (kernels/state_wgmma.cuh, kernels/state_rc.cuh; with PIPE also kda_chunk_state_beside).
// Parameters GM, TRN, CH, UA, RC, PIPE, LEAD (BV 128, SW 8, PREC 2, STG 0 fixed); the design
// and every parameter: kernels/config.cuh. The entry points are here; the kernel bodies are
// templates over the parameters (Kc, the renderer's values).
#include "kernels/config.cuh"
#include "kernels/common.cuh"
#include "kernels/intra64.cuh"
#include "kernels/intra32.cuh"
#include "kernels/state_wgmma.cuh"
#include "kernels/state_rc.cuh"

using Kc = KcParams<CH, BV, SW, PREC, STG, GM, TRN, /*SEG*/ 0, UA, RC, PIPE>;

// kda_chunk_intra: grid (NSEQ + floor(T/CH), H), block kc_intra_threads(CH) (kc_intra64, kc_intra32).
enum : int { kIntraSmem = kc_intra_smem<Kc>() };
#define TESSERA_SMEM_kda_chunk_intra kIntraSmem  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(kc_intra_threads(Kc::ch), kc_intra_min_blocks(Kc::ch, Kc::ua)) kda_chunk_intra(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
    const __nv_bfloat16* __restrict__ g, const __nv_bfloat16* __restrict__ beta, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, const long long* __restrict__ cu, Kc::elem* __restrict__ qg,
    Kc::elem* __restrict__ kd, Kc::elem* __restrict__ w, Kc::elem* __restrict__ u, Kc::elem* __restrict__ P,
    float* __restrict__ gl, int* __restrict__ order, long long T, long long H, long long K, long long V,
    long long NSEQ, float lower_bound) {
  kc_intra<Kc>(q, k, v, g, beta, A_log, dt_bias, cu, qg, kd, w, u, P, gl, order, T, H, K, V, NSEQ, lower_bound);
}
// (The one preprocessor fork of this file: whether the module has the PIPE kernels at all; an
// extern "C" kernel cannot be a template, and a kernel defined is a kernel compiled.)
#if PIPE
// PIPE: kda_chunk_intra_beside, the last gridDim.y chunk slots (all of them, or those after
// kda_chunk_intra_lead's), chunk-major, each chunk's flag set once it is written; with LEAD > 0
// kda_chunk_intra_lead, the intra kernel's head start, its first gridDim.y chunk slots alone
// before the state kernel is forked beside the rest; kda_chunk_flags clears the flags.
#define TESSERA_SMEM_kda_chunk_intra_beside kIntraSmem  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(kc_intra_threads(Kc::ch), kc_intra_min_blocks(Kc::ch, Kc::ua)) kda_chunk_intra_beside(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
    const __nv_bfloat16* __restrict__ g, const __nv_bfloat16* __restrict__ beta, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, const long long* __restrict__ cu, Kc::elem* __restrict__ qg,
    Kc::elem* __restrict__ kd, Kc::elem* __restrict__ w, Kc::elem* __restrict__ u, Kc::elem* __restrict__ P,
    float* __restrict__ gl, int* __restrict__ order, long long T, long long H, long long K, long long V,
    long long NSEQ, float lower_bound, int* flags) {
  kc_intra32<Kc, true>(q, k, v, g, beta, A_log, dt_bias, cu, qg, kd, w, u, P, gl, order, T, H, K, V, NSEQ, lower_bound, flags, NSEQ + T / Kc::ch - gridDim.y);
}
#define TESSERA_SMEM_kda_chunk_intra_lead kIntraSmem  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(kc_intra_threads(Kc::ch), kc_intra_min_blocks(Kc::ch, Kc::ua)) kda_chunk_intra_lead(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
    const __nv_bfloat16* __restrict__ g, const __nv_bfloat16* __restrict__ beta, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, const long long* __restrict__ cu, Kc::elem* __restrict__ qg,
    Kc::elem* __restrict__ kd, Kc::elem* __restrict__ w, Kc::elem* __restrict__ u, Kc::elem* __restrict__ P,
    float* __restrict__ gl, int* __restrict__ order, long long T, long long H, long long K, long long V,
    long long NSEQ, float lower_bound, int* flags) {
  kc_intra32<Kc, true>(q, k, v, g, beta, A_log, dt_bias, cu, qg, kd, w, u, P, gl, order, T, H, K, V, NSEQ, lower_bound, flags, 0);
}
extern "C" __global__ void kda_chunk_flags(int* flags, long long T, long long H, long long NSEQ) {
  kc_flags<Kc>(flags, T, H, NSEQ);
}
#endif

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
