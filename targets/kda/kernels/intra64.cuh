// targets/kda/kernels/intra64.cuh — the CH 64 intra kernel (kda_chunk_intra): one block per chunk slot and
// head: P, L, (I+L)^-1 and the WY factors. Its body, kc_intra64, a template over the parameters
// (template <class C>, C a KcParams) that runs the phases of kernels/intra64_phases.cuh (the
// layout, the phases and what each does), included here so that the sources stored with
// candidates, which include this file by name, still compile. The entry points are in
// targets/kda/kda_chunk_*.cu; included after kernels/config.cuh and kernels/common.cuh.
#include "kernels/intra64_phases.cuh"

// The body of the CH 64 intra kernel (its entry points: kda_chunk_intra in the entry files,
// launch bounds 256 threads and two blocks per SM). Phase 2's sums in one function taking the
// block cost 48 more SASS instructions (sm_90a); in three taking their values, none (2026-12-04).
// With GM >= 1, P goes out as its sw128 image, staged in Xp once the kh = 0 warps have taken their
// partial sums from it (with zeros above the diagonal blocks), then one 8 KB bulk copy: direct
// 4-byte stores touch 8 rows per warp instruction.
template <class C>
__device__ __forceinline__ void kc_intra64(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
    const __nv_bfloat16* __restrict__ g, const __nv_bfloat16* __restrict__ beta, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, const long long* __restrict__ cu, typename C::elem* __restrict__ qg,
    typename C::elem* __restrict__ kd, typename C::elem* __restrict__ w, typename C::elem* __restrict__ u,
    typename C::elem* __restrict__ P, float* __restrict__ gl, int* __restrict__ order, long long T, long long H,
    long long K, long long V, long long NSEQ, float lower_bound) {
  static_assert(C::ch == 64, "the CH 64 intra kernel");
  using L = Intra64Smem<C>;
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < L::bytes) __trap();  // spec.json smem too small?
  extern __shared__ __align__(16) float sm[];
  unsigned char* const sb = reinterpret_cast<unsigned char*>(sm);
  float* Gc = sm;
  float* LA = reinterpret_cast<float*>(sb + L::la);
  __nv_bfloat16* Gs = reinterpret_cast<__nv_bfloat16*>(LA);
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(sb + L::qs);
  __nv_bfloat16* Ks = reinterpret_cast<__nv_bfloat16*>(sb + L::ks);
  __nv_bfloat16* Vs = reinterpret_cast<__nv_bfloat16*>(sb + L::vs);
  float* rq = reinterpret_cast<float*>(sb + L::rq);
  float* rk = reinterpret_cast<float*>(sb + L::rk);
  float* bs = reinterpret_cast<float*>(sb + L::bs);
  float* Xp = reinterpret_cast<float*>(sb + L::xp);  // phase 2: partial P sums of the kh = 1 warps (20 units x 32 lanes x 4)
  float* Xs = reinterpret_cast<float*>(Qs);  // phase 3 scratch (q no longer needed)
  const long long slot = blockIdx.x, h = blockIdx.y;
  if (slot == 0 && h == 0) kc_order<C>(cu, NSEQ, T, order, reinterpret_cast<int*>(sm));
  long long n, c;
  if (!kc_slot(cu, NSEQ, slot, &n, &c, C::ch)) return;
  const long long bos = cu[n] + c * C::ch;
  const int len = (int)min((long long)C::ch, cu[n + 1] - bos);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  typename C::elem* Pc = P + (slot * H + h) * C::ch * C::ch;
  const int lr = tid >> 4, lc8 = (tid & 15) * 8;
  const long long rbase = (bos * H + h) * KC_KD + lc8, rstride = H * KC_KD;
  const Intra64Block b{Gc,   LA,    Gs,   Qs,  Ks,   Vs,   rq, rk, bs, Xp, Xs, slot, h, H, bos, len,
                       tid,  warp,  lane, gq,  tq,   lr,   lc8, rbase, rstride};

  // ---- phase 0: the chunk's q, k, g rows into shared memory, all in flight. Thread = 16-byte
  // piece lc8 of rows lr + 16 it.
  kc_intra64_load<C>(b, q, k, g, beta, Pc);
  kda::cp_async_wait_all();
  __syncthreads();
  // ---- phase 1: gate and its cumulative sum; norms; KB and Fv for the fp16 P/L units.
  kc_intra64_gate<C>(b, A_log, dt_bias, lower_bound);
  __syncthreads();
  // ---- phase 2: P and L (kc_intra64_pl), then their sums: the kh = 1 warps leave theirs in Xp
  // (P) and LA (L, kc_intra64_pl_part), the kh = 0 warps add them and write P and L
  // (kc_intra64_pl_take, kc_intra64_pl_out).
  {
    const int I = warp >> 1, kh = warp & 1, cnt = 2 * (I + 1);
    const int i0 = 16 * I + gq, i1 = i0 + 8;
    kda::frag_c accP[8], accL[8];
    kc_intra64_pl<C>(b, accP, accL);
    float4* Xw = reinterpret_cast<float4*>(Xp) + (I * (I + 1)) * 32 + lane;  // unit base I(I+1)
    if (kh == 1) kc_intra64_pl_part<C>(LA, Xw, accP, accL, I, cnt, i0, i1, tq);
    __syncthreads();  // the kh = 1 partial sums are in Xp and LA; KB and Fv are consumed
    kc_intra64_v<C>(b, v);  // v into Vs now (it held KB): in flight during the P/L epilogue and the qg/kd loop
    // GM >= 1: P's sw128 image staged in Xp (the header says why)
    __half* Ps = reinterpret_cast<__half*>(Xp);
    if constexpr (C::gm >= 1) {
      if (kh == 0) kc_intra64_pl_take<C>(accP, Xw, cnt);
    }
    if (kh == 0) kc_intra64_pl_out<C>(LA, Xw, Ps, Pc, rq, rk, bs, accP, accL, I, cnt, i0, i1, tq, lane, len, tid);
  }
  kc_intra64_qk<C>(b, qg, kd, gl);
  if constexpr (C::prec != 2) kda::cp_async_wait_all();
  __syncthreads();
  // ---- phase 3: A = (I+L)^-1 in place in LA (PREC 2: each block also as A diag(b) in fp16,
  // A16, after the phase-3 scratch Xs of 1536 floats).
  __half* A16 = reinterpret_cast<__half*>(Qs) + 3072;
  kc_intra64_inverse<C>(LA, Xs, A16, bs, warp, gq, tq);
  if constexpr (C::prec == 2) kda::cp_async_wait_all();  // v (bf16, converted to fp16 as phase 4 loads it)
  __syncthreads();
  // ---- phase 4: w = A (b k e^G), u = A (b v); warp = columns 16*warp .. +15.
  {
    kda::frag_c accW[4][2], accU[4][2];
    kc_intra64_wu<C>(b, A16, accW, accU);
    kc_intra64_wu_out<C>(b, accW, accU, w, u);
  }
}
