// targets/kda/kernels/state_f32.cuh — the fp32/tf32 state kernel (kda_chunk_state, PREC 0 and 1).
// A template over its parameters; its entry point is in targets/kda/kda_chunk_tf32.cu
// (PREC 0 and 1). Included after kernels/config.cuh and kernels/common.cuh.

// Issues cp.async copies of rows [bos, bos+len) of a [T,H,128] fp32 tensor into
// X[CH][LDK]; rows past len are zero-filled with plain stores.
template <int kCH, int kThreads>
__device__ __forceinline__ void kc_async_rows(float* X, const float* __restrict__ src, long long bos,
                                              int len, long long H, long long h) {
  for (int idx = threadIdx.x; idx < kCH * 32; idx += kThreads) {
    const int i = idx >> 5, c4 = idx & 31;
    float* dst = X + i * KC_LDK + c4 * 4;
    if (i < len) kda::cp_async16(dst, src + ((bos + i) * H + h) * KC_KD + c4 * 4);
    else *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// Issues cp.async copies of a [CH][4*NC] fp32 tile (row i at src + i*row_stride) into
// X (row stride ldx); rows past len are zero-filled with plain stores.
template <int kCH, int kThreads, int NC>
__device__ __forceinline__ void kc_async_tile(float* X, int ldx, const float* __restrict__ src,
                                              long long row_stride, int len) {
  for (int idx = threadIdx.x; idx < kCH * NC; idx += kThreads) {
    const int i = idx / NC, c4 = idx % NC;
    float* dst = X + i * ldx + c4 * 4;
    if (i < len) kda::cp_async16(dst, src + i * row_stride + c4 * 4);
    else *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// grid (NSEQ*H, 1, 128/BV) (kc_item: longest sequences first), block SW*32, smem F32Smem::bytes.
// Two operand buffers rotate so that each phase's copy overlaps the previous
// phase's products:  A: v' = u - [w] S   (loading qg, G_last)
//                    B: o = [qg] S + P v' (loading kd)
//                    C: S = e^G S + [kd]^T v' (loading the next chunk's w).
// P and u are copied (cp.async) a chunk ahead, during phase C, into their own buffers.
// Its shared memory, offsets in floats: S [KD][LDS]; v' = u - w S [CH][LDS]; the two rotating
// operand buffers [CH][LDK]; G_last [KD]; P [CH][LDL] and u [CH][LDS] of the chunk (this
// block's columns). (Enumerators: NVRTC's -default-device makes static constexpr members
// module variables.)
template <int kCH, int kBV>
struct F32Smem {
  enum : int {
    lds = kBV + 8,  // row stride of [*][BV] arrays (B k-major)
    vn = KC_KD * lds,
    xa = vn + kCH * lds,
    xb = xa + kCH * KC_LDK,
    glc = xb + kCH * KC_LDK,
    ps = glc + KC_KD,
    us = ps + kCH * KC_LDL,
    bytes = 4 * (us + kCH * lds),
  };
  static_assert(xa % 4 == 0 && xb % 4 == 0 && glc % 4 == 0 && ps % 4 == 0 && us % 4 == 0,
                "every buffer 16-byte aligned (cp.async16, float4 stores)");
};
// The fp32 state kernel's start: S [KD][LDS] (shared, k-major) from this block's columns
// v0.. of h0's [V][K] slice of sequence n, head h.
template <int kBV, int kThreads>
__device__ __forceinline__ void kc_f32_state_in(float* S, const float* __restrict__ h0, long long n, long long h,
                                                long long H, int v0, int tid) {
  constexpr int kLDS = kBV + 8;
  for (int idx = tid; idx < KC_KD * kBV; idx += kThreads) {
    const int e = idx / KC_KD, d = idx % KC_KD;
    S[d * kLDS + e] = h0[((n * H + h) * KC_KD + v0 + e) * KC_KD + d];
  }
}

// The fp32 state kernel's end: S out into this block's columns of ht (as kc_f32_state_in).
// (ht without __restrict__: with it, the sm_100a/sm_103a code for BV 128 changed, 2026-12-04.)
template <int kBV, int kThreads>
__device__ __forceinline__ void kc_f32_state_out(float* ht, const float* S, long long n, long long h, long long H,
                                                 int v0, int tid) {
  constexpr int kLDS = kBV + 8;
  for (int idx = tid; idx < KC_KD * kBV; idx += kThreads) {
    const int e = idx / KC_KD, d = idx % KC_KD;
    ht[((n * H + h) * KC_KD + v0 + e) * KC_KD + d] = S[d * kLDS + e];
  }
}

// Issues the copies of a chunk's w (into X), P (into Ps) and this block's columns of u (into
// Us): the chunk at row bos, slot slot, len rows (the rest zero-filled).
template <int kCH, int kBV, int kThreads>
__device__ __forceinline__ void kc_f32_copy_wpu(float* X, float* Ps, float* Us, const float* __restrict__ w,
                                                const float* __restrict__ P, const float* __restrict__ u, long long bos,
                                                long long slot, int len, long long H, long long h, int v0) {
  kc_async_rows<kCH, kThreads>(X, w, bos, len, H, h);
  kc_async_tile<kCH, kThreads, kCH / 4>(Ps, KC_LDL, P + (slot * H + h) * kCH * kCH, kCH, len);
  kc_async_tile<kCH, kThreads, kBV / 4>(Us, kBV + 8, u + (bos * H + h) * KC_KD + v0, H * KC_KD, len);
}

// Phase A of the fp32 state kernel: v' = u - w S into Vn (rounded for PREC 1; 0 in rows at or
// past len); w in X [CH][LDK], S, u, Vn at their places in shared memory (formed here from the
// shared array, as the body formed them: an earlier version of this function, 2026-12-04,
// changed the sm_90a code). Warp = (16-row block wm, column group wn).
template <int kCH, int kBV, int kSW, int kPREC>
__device__ __forceinline__ void kc_f32_vprime(const float* X, int len, int wm, int wn, int i0, int i1, int tq) {
  using L = F32Smem<kCH, kBV>;
  constexpr int kLDS = L::lds, NTW = kBV / 8 / (kSW / 4);
  extern __shared__ __align__(16) float sm[];
  const float* S = sm;
  const float* Us = sm + L::us;
  float* Vn = sm + L::vn;
  kda::frag_c acc[NTW];
#pragma unroll
  for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[nt]);
  kda::mma_strip_rm_km<KC_KD, NTW, 4, kPREC == 0>(acc, X, KC_LDK, 16 * wm, S, kLDS, wn * NTW * 8);
#pragma unroll
  for (int nt = 0; nt < NTW; ++nt) {
    const int e = (wn * NTW + nt) * 8 + 2 * tq;
    float2 r0 = make_float2(0.f, 0.f), r1 = make_float2(0.f, 0.f);
    const float2 u0 = *reinterpret_cast<const float2*>(Us + i0 * kLDS + e);
    const float2 u1 = *reinterpret_cast<const float2*>(Us + i1 * kLDS + e);
    if (i0 < len) r0 = make_float2(kc_out<kPREC>(u0.x - acc[nt].x[0]), kc_out<kPREC>(u0.y - acc[nt].x[1]));
    if (i1 < len) r1 = make_float2(kc_out<kPREC>(u1.x - acc[nt].x[2]), kc_out<kPREC>(u1.y - acc[nt].x[3]));
    *reinterpret_cast<float2*>(Vn + i0 * kLDS + e) = r0;
    *reinterpret_cast<float2*>(Vn + i1 * kLDS + e) = r1;
  }
}

// Phase B of the fp32 state kernel: o = scale (qg S + P v') out (bf16, rows below len); qg in
// X [CH][LDK], P in Ps [CH][LDL], v' in Vn. Warp = (16-row block wm, column group wn).
template <int kCH, int kBV, int kSW, bool kRnd>
__device__ __forceinline__ void kc_f32_out(__nv_bfloat16* __restrict__ o, const float* X, const float* S,
                                           const float* Ps, const float* Vn, long long bos, long long H, long long h,
                                           int v0, int len, float scale, int wm, int wn, int i0, int i1, int tq) {
  constexpr int kLDS = F32Smem<kCH, kBV>::lds, NTW = kBV / 8 / (kSW / 4);
  kda::frag_c acc[NTW];
#pragma unroll
  for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[nt]);
  kda::mma_strip_rm_km<KC_KD, NTW, 4, kRnd>(acc, X, KC_LDK, 16 * wm, S, kLDS, wn * NTW * 8);
  kda::mma_strip_rm_km<kCH, NTW, kCH / 8, kRnd>(acc, Ps, KC_LDL, 16 * wm, Vn, kLDS, wn * NTW * 8);
#pragma unroll
  for (int nt = 0; nt < NTW; ++nt) {
    const int e = v0 + (wn * NTW + nt) * 8 + 2 * tq;
    if (i0 < len)
      *reinterpret_cast<__nv_bfloat162*>(o + ((bos + i0) * H + h) * KC_KD + e) =
          __floats2bfloat162_rn(scale * acc[nt].x[0], scale * acc[nt].x[1]);
    if (i1 < len)
      *reinterpret_cast<__nv_bfloat162*>(o + ((bos + i1) * H + h) * KC_KD + e) =
          __floats2bfloat162_rn(scale * acc[nt].x[2], scale * acc[nt].x[3]);
  }
}

// Phase C of the fp32 state kernel: S <- e^{G_last} S + kd^T v' (S [KD][LDS], kd in X [CH][LDK],
// v' in Vn [CH][LDS], G_last in glc); warp w owns 16 (8 / SW) rows of S from 16 w MTS.
template <int kCH, int kBV, int kSW, bool kRnd>
__device__ __forceinline__ void kc_f32_update(float* S, const float* X, const float* Vn, const float* glc, int warp,
                                              int gq, int tq) {
  constexpr int kLDS = F32Smem<kCH, kBV>::lds, MTS = 8 / kSW;
  kda::frag_c acc[MTS][kBV / 8];
#pragma unroll
  for (int mt = 0; mt < MTS; ++mt) {
    const int d0 = (warp * MTS + mt) * 16 + gq, d1 = d0 + 8;
    const float f0 = __expf(glc[d0]), f1 = __expf(glc[d1]);
#pragma unroll
    for (int nt = 0; nt < kBV / 8; ++nt) {
      const int e = nt * 8 + 2 * tq;
      acc[mt][nt].x[0] = f0 * S[d0 * kLDS + e];
      acc[mt][nt].x[1] = f0 * S[d0 * kLDS + e + 1];
      acc[mt][nt].x[2] = f1 * S[d1 * kLDS + e];
      acc[mt][nt].x[3] = f1 * S[d1 * kLDS + e + 1];
    }
  }
#pragma unroll 2
  for (int ks = 0; ks < kCH / 8; ++ks) {
#pragma unroll
    for (int mt = 0; mt < MTS; ++mt) {
      kda::frag_a a;
      kda::load_a_cm<kRnd>(a, X, KC_LDK, (warp * MTS + mt) * 16, ks * 8);
#pragma unroll
      for (int nt = 0; nt < kBV / 8; ++nt) {
        kda::frag_b b;
        kda::load_b_km<kRnd>(b, Vn, kLDS, ks * 8, nt * 8);
        kda::mma(acc[mt][nt], a, b);
      }
    }
  }
#pragma unroll
  for (int mt = 0; mt < MTS; ++mt) {
    const int d0 = (warp * MTS + mt) * 16 + gq, d1 = d0 + 8;
#pragma unroll
    for (int nt = 0; nt < kBV / 8; ++nt) {
      const int e = nt * 8 + 2 * tq;
      *reinterpret_cast<float2*>(S + d0 * kLDS + e) = make_float2(acc[mt][nt].x[0], acc[mt][nt].x[1]);
      *reinterpret_cast<float2*>(S + d1 * kLDS + e) = make_float2(acc[mt][nt].x[2], acc[mt][nt].x[3]);
    }
  }
}

// The body of kda_chunk_state (PREC 0, 1): chunk length kCH, kBV value columns per block,
// kSW warps, operand precision kPREC: 0 rounds the tf32 operands as they are loaded, 1 finds
// them rounded (stores of v' rounded here too).
template <int kCH, int kBV, int kSW, int kPREC>
__device__ __forceinline__ void kc_state_f32(
    const float* __restrict__ h0, const long long* __restrict__ cu, const float* __restrict__ qg,
    const float* __restrict__ kd, const float* __restrict__ w, const float* __restrict__ u,
    const float* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale) {
  using L = F32Smem<kCH, kBV>;
  constexpr int kThreads = kSW * 32;
  constexpr bool kRnd = kPREC == 0;
  static_assert(kSW == 4 || kSW == 8, "SW must be 4 or 8");
  static_assert(kBV == 32 || kBV == 64 || kBV == 128, "BV must be 32, 64 or 128");
  static_assert(kPREC == 0 || kPREC == 1, "the fp32 state kernel is PREC 0 or 1");
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < L::bytes) __trap();  // spec.json smem too small?
  (void)T;
  (void)NSEQ;
  extern __shared__ __align__(16) float sm[];
  float* S = sm;
  float* Vn = sm + L::vn;
  float* XA = sm + L::xa;
  float* XB = sm + L::xb;
  float* glc = sm + L::glc;
  float* Ps = sm + L::ps;
  float* Us = sm + L::us;
  int n32, h32;
  kc_item(order, H, &n32, &h32);
  const long long n = n32, h = h32;
  const int v0 = blockIdx.z * kBV;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int wm = warp & 3, wn = warp >> 2;
  const int i0 = 16 * wm + gq, i1 = i0 + 8;

  kc_f32_state_in<kBV, kThreads>(S, h0, n, h, H, v0, tid);
  const long long bos0 = cu[n], eos = cu[n + 1], slot0 = n + bos0 / kCH;
  if (bos0 < eos) {
    const int len0 = (int)min((long long)kCH, eos - bos0);
    kc_f32_copy_wpu<kCH, kBV, kThreads>(XA, Ps, Us, w, P, u, bos0, slot0, len0, H, h, v0);
    kda::cp_async_commit();
    kda::cp_async_wait_all();
  }
  __syncthreads();
  for (long long c = 0; bos0 + c * kCH < eos; ++c) {
    const long long bos = bos0 + c * kCH, slot = slot0 + c;
    const int len = (int)min((long long)kCH, eos - bos);
    kc_async_rows<kCH, kThreads>(XB, qg, bos, len, H, h);
    if (tid < 32) kda::cp_async16(glc + tid * 4, gl + (slot * H + h) * KC_KD + tid * 4);
    kda::cp_async_commit();
    // A: v' = u - w S
    kc_f32_vprime<kCH, kBV, kSW, kPREC>(XA, len, wm, wn, i0, i1, tq);
    kda::cp_async_wait_all();
    __syncthreads();
    kc_async_rows<kCH, kThreads>(XA, kd, bos, len, H, h);
    kda::cp_async_commit();
    // B: o = scale (qg S + P v')
    kc_f32_out<kCH, kBV, kSW, kRnd>(o, XB, S, Ps, Vn, bos, H, h, v0, len, scale, wm, wn, i0, i1, tq);
    kda::cp_async_wait_all();
    __syncthreads();
    if (bos + kCH < eos) {
      const int len1 = (int)min((long long)kCH, eos - bos - kCH);
      // w, P and u of chunk c+1 (P and u of chunk c were last read in phases A and B)
      kc_f32_copy_wpu<kCH, kBV, kThreads>(XB, Ps, Us, w, P, u, bos + kCH, slot + 1, len1, H, h, v0);
      kda::cp_async_commit();
    }
    // C: S <- e^{G_last} S + kd^T v' (each warp owns rows of S; all reads of S by the
    // products above finished before the barrier)
    kc_f32_update<kCH, kBV, kSW, kRnd>(S, XA, Vn, glc, warp, gq, tq);
    kda::cp_async_wait_all();
    __syncthreads();
    float* tmp = XA;  // the next chunk's w is in XB
    XA = XB;
    XB = tmp;
  }
  kc_f32_state_out<kBV, kThreads>(ht, S, n, h, H, v0, tid);
}
