// targets/kda/kda_chunk_seg.cu — template chunk_wgmma_seg (spec.json, sm_90a): the sequence
// split. kda_chunk_intra (kernels/intra64.cuh or intra32.cuh by CH), kda_chunk_seg and
// kda_chunk_fixup (kernels/seg.cuh), then kda_chunk_state per segment of SEG chunks
// (kernels/state_wgmma.cuh, kernels/seg.cuh; RC 1: kernels/state_rc.cuh's chain). Parameters
// TRN, SEG, NSEG (segments by count, kernels/seg.cuh's kc_seg_chunks), CH, RC (GM 2, BV 128, SW 8,
// PREC 2, STG 0 fixed; UA = RC); the design and every parameter: kernels/config.cuh. The entry points are here; the kernel bodies are templates
// over the parameters (Kc, the renderer's values).
#include "kernels/config.cuh"
#include "kernels/common.cuh"
#include "kernels/intra64.cuh"
#include "kernels/intra32.cuh"
#include "kernels/state_wgmma.cuh"
#include "kernels/state_rc.cuh"
#include "kernels/seg.cuh"

using Kc = KcParams<CH, BV, SW, PREC, STG, GM, TRN, SEG, /*UA*/ RC, RC, /*PIPE*/ 0>;

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

#define TESSERA_SMEM_kda_chunk_state WgmmaSmem<Kc>::bytes  // checked against spec.json by tests/core/templates_test
// (The tensor maps, A_log, dt_bias and lower_bound: what RC 1's producer warps read; unused with RC 0.)
extern "C" __global__ void __launch_bounds__(kc_state_threads(RC), 1) kda_chunk_state(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale, const float* __restrict__ hstart, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, float lower_bound, const __grid_constant__ tile::tmap map_q,
    const __grid_constant__ tile::tmap map_k, const __grid_constant__ tile::tmap map_g,
    const __grid_constant__ tile::tmap map_v) {
  kc_state_seg<Kc, NSEG>(h0, cu, qg, kd, w, u, P, gl, order, o, ht, T, H, K, V, NSEQ, scale, hstart, A_log, dt_bias,
                   lower_bound, &map_q, &map_k, &map_g, &map_v);
}
extern "C" __global__ void __launch_bounds__(kc_state_threads(RC), 1) kda_chunk_seg(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ kd,
    const __half* __restrict__ w, const __half* __restrict__ u, const float* __restrict__ gl,
    float* __restrict__ hseg, float* __restrict__ mseg, long long H, long long NSEQ, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, float lower_bound, const __grid_constant__ tile::tmap map_q,
    const __grid_constant__ tile::tmap map_k, const __grid_constant__ tile::tmap map_g,
    const __grid_constant__ tile::tmap map_v) {
  kc_seg<Kc, NSEG>(h0, cu, kd, w, u, gl, hseg, mseg, H, NSEQ, A_log, dt_bias, lower_bound, &map_q, &map_k, &map_g, &map_v);
}
#define TESSERA_SMEM_kda_chunk_fixup kc_fix_smem  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(256) kda_chunk_fixup(const long long* __restrict__ cu,
                                                                  const float* __restrict__ hseg,
                                                                  const float* __restrict__ mseg,
                                                                  float* __restrict__ hstart, long long H,
                                                                  long long NSEQ) {
  kc_fixup<Kc, NSEG>(cu, hseg, mseg, hstart, H, NSEQ);
}
