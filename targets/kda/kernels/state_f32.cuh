// targets/kda/kernels/state_f32.cuh — the fp32/tf32 state kernel (kda_chunk_state, PREC 0 and 1).
// Included by the templates' entry files (targets/kda/kda_chunk_*.cu) after kernels/config.cuh;
// its kernels exist where PREC < 2.
#if PREC < 2
// Issues cp.async copies of rows [bos, bos+len) of a [T,H,128] fp32 tensor into
// X[CH][LDK]; rows past len are zero-filled with plain stores.
__device__ __forceinline__ void kc_async_rows(float* X, const float* __restrict__ src, long long bos,
                                              int len, long long H, long long h) {
  for (int idx = threadIdx.x; idx < KC_CH * 32; idx += SW * 32) {
    const int i = idx >> 5, c4 = idx & 31;
    float* dst = X + i * KC_LDK + c4 * 4;
    if (i < len) kda::cp_async16(dst, src + ((bos + i) * H + h) * KC_KD + c4 * 4);
    else *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// Issues cp.async copies of a [CH][4*NC] fp32 tile (row i at src + i*row_stride) into
// X (row stride ldx); rows past len are zero-filled with plain stores.
template <int NC>
__device__ __forceinline__ void kc_async_tile(float* X, int ldx, const float* __restrict__ src,
                                              long long row_stride, int len) {
  for (int idx = threadIdx.x; idx < KC_CH * NC; idx += SW * 32) {
    const int i = idx / NC, c4 = idx % NC;
    float* dst = X + i * ldx + c4 * 4;
    if (i < len) kda::cp_async16(dst, src + i * row_stride + c4 * 4);
    else *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// grid (NSEQ*H, 1, 128/BV) (kc_item: longest sequences first), block SW*32, smem KC_STATE_SMEM bytes.
// Two operand buffers rotate so that each phase's copy overlaps the previous
// phase's products:  A: v' = u - [w] S   (loading qg, G_last)
//                    B: o = [qg] S + P v' (loading kd)
//                    C: S = e^G S + [kd]^T v' (loading the next chunk's w).
// P and u are copied (cp.async) a chunk ahead, during phase C, into their own buffers.
// Its shared memory, offsets in floats: S [KD][LDS]; v' = u - w S [CH][LDS]; the two rotating
// operand buffers [CH][LDK]; G_last [KD]; P [CH][LDL] and u [CH][LDS] of the chunk (this
// block's columns). (Enumerators: NVRTC's -default-device makes static constexpr members
// module variables.)
struct F32Smem {
  enum : int {
    vn = KC_KD * KC_LDS,
    xa = vn + KC_CH * KC_LDS,
    xb = xa + KC_CH * KC_LDK,
    glc = xb + KC_CH * KC_LDK,
    ps = glc + KC_KD,
    us = ps + KC_CH * KC_LDL,
    bytes = 4 * (us + KC_CH * KC_LDS),
  };
  static_assert(xa % 4 == 0 && xb % 4 == 0 && glc % 4 == 0 && ps % 4 == 0 && us % 4 == 0,
                "every buffer 16-byte aligned (cp.async16, float4 stores)");
};
#define KC_STATE_SMEM F32Smem::bytes
#define TESSERA_SMEM_kda_chunk_state KC_STATE_SMEM  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(SW * 32) kda_chunk_state(
    const float* __restrict__ h0, const long long* __restrict__ cu, const float* __restrict__ qg,
    const float* __restrict__ kd, const float* __restrict__ w, const float* __restrict__ u,
    const float* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale) {
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < KC_STATE_SMEM) __trap();  // spec.json smem too small?
  (void)T;
  (void)NSEQ;
  extern __shared__ __align__(16) float sm[];
  float* S = sm;
  float* Vn = sm + F32Smem::vn;
  float* XA = sm + F32Smem::xa;
  float* XB = sm + F32Smem::xb;
  float* glc = sm + F32Smem::glc;
  float* Ps = sm + F32Smem::ps;
  float* Us = sm + F32Smem::us;
  int n32, h32;
  kc_item(order, H, &n32, &h32);
  const long long n = n32, h = h32;
  const int v0 = blockIdx.z * BV;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  constexpr int WN = SW / 4;              // column groups in the [64 x BV] products
  constexpr int NTW = BV / 8 / WN;        // n-tiles per warp there
  constexpr int MTS = 8 / SW;             // m-tiles (16 rows of d) per warp in the S update
  const int wm = warp & 3, wn = warp >> 2;
  const int i0 = 16 * wm + gq, i1 = i0 + 8;

  for (int idx = tid; idx < KC_KD * BV; idx += SW * 32) {
    const int e = idx / KC_KD, d = idx % KC_KD;
    S[d * KC_LDS + e] = h0[((n * H + h) * KC_KD + v0 + e) * KC_KD + d];
  }
  const long long bos0 = cu[n], eos = cu[n + 1], slot0 = n + bos0 / KC_CH;
  if (bos0 < eos) {
    const int len0 = (int)min((long long)KC_CH, eos - bos0);
    kc_async_rows(XA, w, bos0, len0, H, h);
    kc_async_tile<KC_CH / 4>(Ps, KC_LDL, P + (slot0 * H + h) * KC_CH * KC_CH, KC_CH, len0);
    kc_async_tile<BV / 4>(Us, KC_LDS, u + (bos0 * H + h) * KC_KD + v0, H * KC_KD, len0);
    kda::cp_async_commit();
    kda::cp_async_wait_all();
  }
  __syncthreads();
  for (long long c = 0; bos0 + c * KC_CH < eos; ++c) {
    const long long bos = bos0 + c * KC_CH, slot = slot0 + c;
    const int len = (int)min((long long)KC_CH, eos - bos);
    kc_async_rows(XB, qg, bos, len, H, h);
    if (tid < 32) kda::cp_async16(glc + tid * 4, gl + (slot * H + h) * KC_KD + tid * 4);
    kda::cp_async_commit();
    // A: v' = u - w S
    {
      kda::frag_c acc[NTW];
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[nt]);
      kda::mma_strip_rm_km<KC_KD, NTW, 4, KC_RND>(acc, XA, KC_LDK, 16 * wm, S, KC_LDS, wn * NTW * 8);
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) {
        const int e = (wn * NTW + nt) * 8 + 2 * tq;
        float2 r0 = make_float2(0.f, 0.f), r1 = make_float2(0.f, 0.f);
        const float2 u0 = *reinterpret_cast<const float2*>(Us + i0 * KC_LDS + e);
        const float2 u1 = *reinterpret_cast<const float2*>(Us + i1 * KC_LDS + e);
        if (i0 < len) r0 = make_float2(kc_out(u0.x - acc[nt].x[0]), kc_out(u0.y - acc[nt].x[1]));
        if (i1 < len) r1 = make_float2(kc_out(u1.x - acc[nt].x[2]), kc_out(u1.y - acc[nt].x[3]));
        *reinterpret_cast<float2*>(Vn + i0 * KC_LDS + e) = r0;
        *reinterpret_cast<float2*>(Vn + i1 * KC_LDS + e) = r1;
      }
    }
    kda::cp_async_wait_all();
    __syncthreads();
    kc_async_rows(XA, kd, bos, len, H, h);
    kda::cp_async_commit();
    // B: o = scale (qg S + P v')
    {
      kda::frag_c acc[NTW];
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[nt]);
      kda::mma_strip_rm_km<KC_KD, NTW, 4, KC_RND>(acc, XB, KC_LDK, 16 * wm, S, KC_LDS, wn * NTW * 8);
      kda::mma_strip_rm_km<KC_CH, NTW, KC_CH / 8, KC_RND>(acc, Ps, KC_LDL, 16 * wm, Vn, KC_LDS, wn * NTW * 8);
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
    kda::cp_async_wait_all();
    __syncthreads();
    if (bos + KC_CH < eos) {
      const int len1 = (int)min((long long)KC_CH, eos - bos - KC_CH);
      kc_async_rows(XB, w, bos + KC_CH, len1, H, h);
      // P and u of chunk c+1 (P and u of chunk c were last read in phases A and B)
      kc_async_tile<KC_CH / 4>(Ps, KC_LDL, P + ((slot + 1) * H + h) * KC_CH * KC_CH, KC_CH, len1);
      kc_async_tile<BV / 4>(Us, KC_LDS, u + ((bos + KC_CH) * H + h) * KC_KD + v0, H * KC_KD, len1);
      kda::cp_async_commit();
    }
    // C: S <- e^{G_last} S + kd^T v'   (each warp owns rows of S; all reads of S
    // by the products above finished before the barrier)
    {
      kda::frag_c acc[MTS][BV / 8];
#pragma unroll
      for (int mt = 0; mt < MTS; ++mt) {
        const int d0 = (warp * MTS + mt) * 16 + gq, d1 = d0 + 8;
        const float f0 = __expf(glc[d0]), f1 = __expf(glc[d1]);
#pragma unroll
        for (int nt = 0; nt < BV / 8; ++nt) {
          const int e = nt * 8 + 2 * tq;
          acc[mt][nt].x[0] = f0 * S[d0 * KC_LDS + e];
          acc[mt][nt].x[1] = f0 * S[d0 * KC_LDS + e + 1];
          acc[mt][nt].x[2] = f1 * S[d1 * KC_LDS + e];
          acc[mt][nt].x[3] = f1 * S[d1 * KC_LDS + e + 1];
        }
      }
#pragma unroll 2
      for (int ks = 0; ks < KC_CH / 8; ++ks) {
#pragma unroll
        for (int mt = 0; mt < MTS; ++mt) {
          kda::frag_a a;
          kda::load_a_cm<KC_RND>(a, XA, KC_LDK, (warp * MTS + mt) * 16, ks * 8);
#pragma unroll
          for (int nt = 0; nt < BV / 8; ++nt) {
            kda::frag_b b;
            kda::load_b_km<KC_RND>(b, Vn, KC_LDS, ks * 8, nt * 8);
            kda::mma(acc[mt][nt], a, b);
          }
        }
      }
#pragma unroll
      for (int mt = 0; mt < MTS; ++mt) {
        const int d0 = (warp * MTS + mt) * 16 + gq, d1 = d0 + 8;
#pragma unroll
        for (int nt = 0; nt < BV / 8; ++nt) {
          const int e = nt * 8 + 2 * tq;
          *reinterpret_cast<float2*>(S + d0 * KC_LDS + e) = make_float2(acc[mt][nt].x[0], acc[mt][nt].x[1]);
          *reinterpret_cast<float2*>(S + d1 * KC_LDS + e) = make_float2(acc[mt][nt].x[2], acc[mt][nt].x[3]);
        }
      }
    }
    kda::cp_async_wait_all();
    __syncthreads();
    float* tmp = XA;  // the next chunk's w is in XB
    XA = XB;
    XB = tmp;
  }
  for (int idx = tid; idx < KC_KD * BV; idx += SW * 32) {
    const int e = idx / KC_KD, d = idx % KC_KD;
    ht[((n * H + h) * KC_KD + v0 + e) * KC_KD + d] = S[d * KC_LDS + e];
  }
}
#endif  // PREC < 2
