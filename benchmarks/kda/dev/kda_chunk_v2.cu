// benchmarks/kda/dev/kda_chunk_v2.cu — frozen copy of the v2/v3 kda_chunk.cu (intra kernel with 128 threads),
// kept so the harness times the old and the new intra kernel in one run.
// (mma.sync m16n8k8, fp32 accumulate), two kernels. K = V = 128, chunk CH = 64.
//
//  kda_chunk_intra  one block (4 warps) per (chunk slot, head), fully parallel:
//     in-kernel preprocessing (L2 norm of q and k, gate, sigmoid(beta)), the
//     cumulative log-decay G over the chunk, then with warp I owning rows
//     16I..16I+15 and reference row r = 16I:
//       P[i,j] = sum_d (q_i e^{G_i-G_r}) (k_j e^{G_r-G_j})          (j <= i)
//       L[i,j] = b_i sum_d (k_i e^{G_i-G_r}) (k_j e^{G_r-G_j})      (j <  i)
//     (every factor lies in [e^-75, e^75] or underflows harmlessly to 0, whatever
//     the gates: |G_i - G_r| <= 15*5 inside a 16-row block and <= 0 across blocks),
//     A = (I+L)^-1 by blocked forward substitution (16x16 diagonal blocks per warp,
//     then the off-diagonal blocks), and the WY factors w = A (b k e^G),
//     u = A (b v). Writes qg = q e^G, kd = k e^{G_last-G}, w, u (f32 [T,H,128]),
//     P (f32 [slot,H,64,64]) and G_last (f32 [slot,H,128]).
//  kda_chunk_state  one block (SW warps) per (sequence, head, BV value columns),
//     sequential over the sequence's chunks with the state slice S[128][BV] in
//     shared memory:  v' = u - w S;  o = scale (qg S + P v');
//     S <- e^{G_last} S + kd^T v'.  Writes o (bf16) and the final state.
// Parameters: BV (value columns per state block), SW (warps of the state kernel),
// PREC (where operands are rounded to tf32, see below).
// Chunk slots as in baseline.cu: sequence n owns slots n + floor(bos_n/64) + c.
#include <cuda_bf16.h>

#include "tile/kda_tf32.cuh"

#ifndef BV
#define BV 64
#endif
#ifndef SW
#define SW 4
#endif
// PREC 0: operands converted to tf32 (round to nearest) as fragments are loaded.
// PREC 1: the intra kernel stores qg, kd, w, P already rounded to tf32 and the state
//   kernel stores v' rounded, so fragments are loaded without conversion; only the
//   state S is fed truncated (its low 13 bits ignored). Fewer instructions per mma.
#ifndef PREC
#define PREC 0
#endif
#define KC_RND (PREC == 0)
#define KC_OUT(x) (PREC ? kda::round_tf32(x) : (x))

#define KC_KD 128  // head dimension (K = V)
#define KC_CH 64   // chunk length
#define KC_LDK 132  // row stride of [CH][128] fp32 arrays (A row-major / B n-major)
#define KC_LDL 68   // row stride of [CH][CH] arrays
#define KC_LDS (BV + 8)  // row stride of [*][BV] arrays (B k-major)

static_assert(SW == 4 || SW == 8, "SW must be 4 or 8");
static_assert(BV == 32 || BV == 64 || BV == 128, "BV must be 32, 64 or 128");
static_assert(PREC == 0 || PREC == 1, "PREC must be 0 or 1");

// Developer profiling (benchmarks/kda/dev/harness.cu builds with KC_PROFILE): thread 0
// of every block adds the clock64() cycles spent in each phase. Never defined by
// tessera, so variants carry no globals.
#ifdef KC_PROFILE
__device__ unsigned long long kc_prof[16];
#define KC_MARK(slot_)                                                   \
  do {                                                                   \
    if (threadIdx.x == 0) {                                              \
      long long now_ = clock64();                                        \
      atomicAdd(&kc_prof[slot_], (unsigned long long)(now_ - kc_t_));   \
      kc_t_ = now_;                                                      \
    }                                                                    \
  } while (0)
#define KC_PROF_START long long kc_t_ = clock64()
#else
#define KC_MARK(slot_) do { } while (0)
#define KC_PROF_START do { } while (0)
#endif

__device__ __forceinline__ float kc_bf(const __nv_bfloat16* p, long long i) {
  return __bfloat162float(p[i]);
}

__device__ bool kc_slot(const long long* cu, long long NSEQ, long long slot, long long* n_out,
                        long long* c_out) {
  long long lo = 0, hi = NSEQ - 1;
  if (slot < cu[0] / KC_CH) return false;
  while (lo < hi) {
    long long mid = (lo + hi + 1) / 2;
    if (mid + cu[mid] / KC_CH <= slot) lo = mid;
    else hi = mid - 1;
  }
  long long c = slot - (lo + cu[lo] / KC_CH);
  if (c * KC_CH >= cu[lo + 1] - cu[lo]) return false;
  *n_out = lo;
  *c_out = c;
  return true;
}

// grid (NSEQ + floor(T/64), H), block 128, smem KC_INTRA_SMEM bytes.
#define KC_INTRA_THREADS 128
#define KC_INTRA_SMEM (4 * (2 * KC_CH * KC_LDK + 2 * KC_CH * KC_LDL + 3 * 256 + 2 * KC_CH))
extern "C" __global__ void __launch_bounds__(128) kda_chunk_intra(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
    const __nv_bfloat16* __restrict__ v, const __nv_bfloat16* __restrict__ g,
    const __nv_bfloat16* __restrict__ beta, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, const long long* __restrict__ cu, float* __restrict__ qg,
    float* __restrict__ kd, float* __restrict__ w, float* __restrict__ u, float* __restrict__ P,
    float* __restrict__ gl, long long T, long long H, long long K, long long V, long long NSEQ,
    float lower_bound) {
  if (K != KC_KD || V != KC_KD) __trap();
  (void)T;
  extern __shared__ float sm[];
  float* Kn = sm;                     // [CH][LDK] normalized k, later b k e^G
  float* Gc = Kn + KC_CH * KC_LDK;    // [CH][LDK] log-decay, cumulative, later b v
  float* L = Gc + KC_CH * KC_LDK;     // [CH][LDL]
  float* Ai = L + KC_CH * KC_LDL;     // [CH][LDL] (I+L)^-1
  float* X = Ai + KC_CH * KC_LDL;     // [3][16][16]
  float* bs = X + 3 * 256;            // [CH] sigmoid(beta)
  float* rq = bs + KC_CH;             // [CH] 1/||q||
  const long long slot = blockIdx.x, h = blockIdx.y;
  long long n, c;
  if (!kc_slot(cu, NSEQ, slot, &n, &c)) return;
  const long long bos = cu[n] + c * KC_CH;
  const int len = (int)min((long long)KC_CH, cu[n + 1] - bos);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  KC_PROF_START;

  // P1: per row, norms, normalized k, per-token log-decay, sigmoid(beta).
  for (int idx = tid; idx < KC_CH * KC_LDL; idx += 128) Ai[idx] = 0.f;
  {
    const float a = expf(A_log[h]);
    float dtb[4];
#pragma unroll
    for (int cc = 0; cc < 4; ++cc) dtb[cc] = dt_bias[h * KC_KD + lane * 4 + cc];
#pragma unroll 1
    for (int i00 = 0; i00 < KC_CH; i00 += 16) {
      uint2 qq[4], kk[4], gg[4];
      float bl[4];
#pragma unroll
      for (int rr = 0; rr < 4; ++rr) {  // loads of 4 rows in flight together
        const int i = i00 + 4 * rr + warp;
        const long long base = ((bos + i) * H + h) * KC_KD + lane * 4;
        if (i < len) {
          qq[rr] = *reinterpret_cast<const uint2*>(q + base);
          kk[rr] = *reinterpret_cast<const uint2*>(k + base);
          gg[rr] = *reinterpret_cast<const uint2*>(g + base);
          bl[rr] = kc_bf(beta, (bos + i) * H + h);
        } else {
          qq[rr] = kk[rr] = gg[rr] = make_uint2(0u, 0u);
          bl[rr] = 0.f;
        }
      }
#pragma unroll
      for (int rr = 0; rr < 4; ++rr) {
        const int i = i00 + 4 * rr + warp;
        const bool in = i < len;
        const __nv_bfloat16* qb = reinterpret_cast<const __nv_bfloat16*>(&qq[rr]);
        const __nv_bfloat16* kb = reinterpret_cast<const __nv_bfloat16*>(&kk[rr]);
        const __nv_bfloat16* gb = reinterpret_cast<const __nv_bfloat16*>(&gg[rr]);
        float qv[4], kv[4], sq = 0, sk = 0;
#pragma unroll
        for (int cc = 0; cc < 4; ++cc) {
          qv[cc] = __bfloat162float(qb[cc]);
          kv[cc] = __bfloat162float(kb[cc]);
          sq += qv[cc] * qv[cc];
          sk += kv[cc] * kv[cc];
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
          sq += __shfl_xor_sync(0xffffffffu, sq, off);
          sk += __shfl_xor_sync(0xffffffffu, sk, off);
        }
        const float rk = rsqrtf(sk + 1e-6f);
#pragma unroll
        for (int cc = 0; cc < 4; ++cc) {
          Kn[i * KC_LDK + lane * 4 + cc] = in ? kv[cc] * rk : 0.f;
          const float x = a * (__bfloat162float(gb[cc]) + dtb[cc]);
          Gc[i * KC_LDK + lane * 4 + cc] = in ? lower_bound / (1.0f + __expf(-x)) : 0.f;
        }
        if (lane == 0) {
          rq[i] = in ? rsqrtf(sq + 1e-6f) : 0.f;
          bs[i] = in ? 1.0f / (1.0f + __expf(-bl[rr])) : 0.f;
        }
      }
    }
  }
  KC_MARK(0);
  __syncthreads();
  // P2: cumulative log-decay over the chunk (thread = channel).
  {
    float acc = 0;
    for (int i = 0; i < KC_CH; ++i) {
      acc += Gc[i * KC_LDK + tid];
      Gc[i * KC_LDK + tid] = acc;
    }
  }
  __syncthreads();
  // P3: P and L, warp I = rows 16I..16I+15, reference row r = 16I.
  {
    const int I = warp, r = 16 * I, gq = lane >> 2, tq = lane & 3;
    const int i0 = r + gq, i1 = r + gq + 8;
    const bool in0 = i0 < len, in1 = i1 < len;
    const float rq0 = rq[i0], rq1 = rq[i1];
    const long long q0 = ((bos + i0) * H + h) * KC_KD, q1 = ((bos + i1) * H + h) * KC_KD;
    kda::frag_c accP[4][2], accL[4][2];
#pragma unroll
    for (int J = 0; J < 4; ++J)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        kda::zero(accP[J][nt]);
        kda::zero(accL[J][nt]);
      }
#pragma unroll 2
    for (int ks = 0; ks < KC_KD / 8; ++ks) {
      const int d0 = ks * 8 + tq, d1 = d0 + 4;
      const float gr0 = Gc[r * KC_LDK + d0], gr1 = Gc[r * KC_LDK + d1];
      const float e00 = __expf(Gc[i0 * KC_LDK + d0] - gr0), e10 = __expf(Gc[i1 * KC_LDK + d0] - gr0);
      const float e01 = __expf(Gc[i0 * KC_LDK + d1] - gr1), e11 = __expf(Gc[i1 * KC_LDK + d1] - gr1);
      kda::frag_a aq, ak;
      aq.x[0] = kda::to_tf32(in0 ? kc_bf(q, q0 + d0) * rq0 * e00 : 0.f);
      aq.x[1] = kda::to_tf32(in1 ? kc_bf(q, q1 + d0) * rq1 * e10 : 0.f);
      aq.x[2] = kda::to_tf32(in0 ? kc_bf(q, q0 + d1) * rq0 * e01 : 0.f);
      aq.x[3] = kda::to_tf32(in1 ? kc_bf(q, q1 + d1) * rq1 * e11 : 0.f);
      ak.x[0] = kda::to_tf32(Kn[i0 * KC_LDK + d0] * e00);
      ak.x[1] = kda::to_tf32(Kn[i1 * KC_LDK + d0] * e10);
      ak.x[2] = kda::to_tf32(Kn[i0 * KC_LDK + d1] * e01);
      ak.x[3] = kda::to_tf32(Kn[i1 * KC_LDK + d1] * e11);
#pragma unroll
      for (int J = 0; J < 4; ++J) {
        if (J <= I) {
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
            const int j = 16 * J + 8 * nt + gq;
            kda::frag_b b;
            b.x[0] = kda::to_tf32(Kn[j * KC_LDK + d0] * __expf(gr0 - Gc[j * KC_LDK + d0]));
            b.x[1] = kda::to_tf32(Kn[j * KC_LDK + d1] * __expf(gr1 - Gc[j * KC_LDK + d1]));
            kda::mma(accP[J][nt], aq, b);
            kda::mma(accL[J][nt], ak, b);
          }
        }
      }
    }
    const float b0 = bs[i0], b1 = bs[i1];
    float* P0 = P + ((slot * H + h) * KC_CH + i0) * KC_CH;
    float* P1 = P + ((slot * H + h) * KC_CH + i1) * KC_CH;
#pragma unroll
    for (int J = 0; J < 4; ++J)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int j = 16 * J + 8 * nt + 2 * tq;
        const bool live = J <= I;
        float2 p0, p1;
        p0.x = (live && j <= i0) ? KC_OUT(accP[J][nt].x[0]) : 0.f;
        p0.y = (live && j + 1 <= i0) ? KC_OUT(accP[J][nt].x[1]) : 0.f;
        p1.x = (live && j <= i1) ? KC_OUT(accP[J][nt].x[2]) : 0.f;
        p1.y = (live && j + 1 <= i1) ? KC_OUT(accP[J][nt].x[3]) : 0.f;
        if (in0) *reinterpret_cast<float2*>(P0 + j) = p0;
        if (in1) *reinterpret_cast<float2*>(P1 + j) = p1;
        L[i0 * KC_LDL + j] = (live && j < i0) ? b0 * accL[J][nt].x[0] : 0.f;
        L[i0 * KC_LDL + j + 1] = (live && j + 1 < i0) ? b0 * accL[J][nt].x[1] : 0.f;
        L[i1 * KC_LDL + j] = (live && j < i1) ? b1 * accL[J][nt].x[2] : 0.f;
        L[i1 * KC_LDL + j + 1] = (live && j + 1 < i1) ? b1 * accL[J][nt].x[3] : 0.f;
      }
  }
  KC_MARK(1);
  __syncthreads();
  // P4: qg, kd, G_last to global; Kn <- b k e^G (the B operand of w).
  {
    const float* Glast = Gc + (len - 1) * KC_LDK;
    const int d = tid;
    const float gld = Glast[d];
#pragma unroll 1
    for (int i0 = 0; i0 < KC_CH; i0 += 8) {
      float qv[8];
#pragma unroll
      for (int uu = 0; uu < 8; ++uu)
        qv[uu] = (i0 + uu < len) ? kc_bf(q, ((bos + i0 + uu) * H + h) * KC_KD + d) : 0.f;
#pragma unroll
      for (int uu = 0; uu < 8; ++uu) {
        const int i = i0 + uu;
        if (i < len) {
          const long long gi = ((bos + i) * H + h) * KC_KD + d;
          const float G = Gc[i * KC_LDK + d], kn = Kn[i * KC_LDK + d], eG = __expf(G);
          qg[gi] = KC_OUT(qv[uu] * rq[i] * eG);
          kd[gi] = KC_OUT(kn * __expf(gld - G));
          Kn[i * KC_LDK + d] = bs[i] * kn * eG;
        }
      }
    }
    gl[(slot * H + h) * KC_KD + tid] = Glast[tid];
    // Diagonal 16x16 blocks of (I+L)^-1, one warp each, row by row.
    const int r = 16 * warp;
    for (int i = 0; i < 16; ++i) {
      if (lane < 16) {
        const int m = lane;
        float acc = (m == i) ? 1.f : 0.f;
        for (int j = m; j < i; ++j) acc -= L[(r + i) * KC_LDL + r + j] * Ai[(r + j) * KC_LDL + r + m];
        if (m <= i) Ai[(r + i) * KC_LDL + r + m] = acc;
      }
      __syncwarp();
    }
  }
  __syncthreads();
  KC_MARK(2);
  // P5: Gc <- b v (the B operand of u).
#pragma unroll 1
  for (int i0 = 0; i0 < KC_CH; i0 += 8) {
    float vv[8];
#pragma unroll
    for (int uu = 0; uu < 8; ++uu)
      vv[uu] = (i0 + uu < len) ? kc_bf(v, ((bos + i0 + uu) * H + h) * KC_KD + tid) : 0.f;
#pragma unroll
    for (int uu = 0; uu < 8; ++uu) Gc[(i0 + uu) * KC_LDK + tid] = bs[i0 + uu] * vv[uu];
  }
  // P6: off-diagonal blocks: A_IJ = -A_II sum_{M=J}^{I-1} L_IM A_MJ.
  for (int I = 1; I < 4; ++I) {
    for (int idx = tid; idx < I * 256; idx += 128) {
      const int J = idx >> 8, a = (idx >> 4) & 15, b = idx & 15;
      float acc = 0;
      for (int m = 16 * J; m < 16 * I; ++m) acc += L[(16 * I + a) * KC_LDL + m] * Ai[m * KC_LDL + 16 * J + b];
      X[idx] = acc;
    }
    __syncthreads();
    for (int idx = tid; idx < I * 256; idx += 128) {
      const int J = idx >> 8, a = (idx >> 4) & 15, b = idx & 15;
      float acc = 0;
#pragma unroll
      for (int cc = 0; cc < 16; ++cc) acc -= Ai[(16 * I + a) * KC_LDL + 16 * I + cc] * X[J * 256 + cc * 16 + b];
      Ai[(16 * I + a) * KC_LDL + 16 * J + b] = acc;
    }
    __syncthreads();
  }
  KC_MARK(3);
  // P7: w = A (b k e^G), u = A (b v); warp I = rows 16I..16I+15.
  {
    const int I = warp, gq = lane >> 2, tq = lane & 3;
    const int i0 = 16 * I + gq, i1 = i0 + 8;
#pragma unroll
    for (int which = 0; which < 2; ++which) {
      const float* B = which == 0 ? Kn : Gc;
      float* out = which == 0 ? w : u;
      const bool rnd = PREC && which == 0;  // w is an operand of the state kernel, u is not
      kda::frag_c acc[16];
#pragma unroll
      for (int nt = 0; nt < 16; ++nt) kda::zero(acc[nt]);
      for (int ks = 0; ks < 2 * (I + 1); ++ks) {
        kda::frag_a a;
        kda::load_a_rm(a, Ai, KC_LDL, 16 * I, ks * 8);
#pragma unroll
        for (int nt = 0; nt < 16; ++nt) {
          kda::frag_b b;
          kda::load_b_km(b, B, KC_LDK, ks * 8, nt * 8);
          kda::mma(acc[nt], a, b);
        }
      }
#pragma unroll
      for (int nt = 0; nt < 16; ++nt) {
        const int e = nt * 8 + 2 * tq;
        float2 r0 = make_float2(acc[nt].x[0], acc[nt].x[1]), r1 = make_float2(acc[nt].x[2], acc[nt].x[3]);
        if (rnd) {
          r0 = make_float2(kda::round_tf32(r0.x), kda::round_tf32(r0.y));
          r1 = make_float2(kda::round_tf32(r1.x), kda::round_tf32(r1.y));
        }
        if (i0 < len) *reinterpret_cast<float2*>(out + ((bos + i0) * H + h) * KC_KD + e) = r0;
        if (i1 < len) *reinterpret_cast<float2*>(out + ((bos + i1) * H + h) * KC_KD + e) = r1;
      }
    }
  }
  KC_MARK(4);
}
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

// grid (NSEQ, H, 128/BV), block SW*32, smem KC_STATE_SMEM bytes.
// Two operand buffers rotate so that each phase's copy overlaps the previous
// phase's products:  A: v' = u - [w] S   (loading qg, G_last)
//                    B: o = [qg] S + P v' (loading kd)
//                    C: S = e^G S + [kd]^T v' (loading the next chunk's w).
// P and u are read straight into registers at the start of phase A.
#define KC_STATE_SMEM (4 * (KC_KD * KC_LDS + KC_CH * KC_LDS + 2 * KC_CH * KC_LDK + KC_KD))
extern "C" __global__ void __launch_bounds__(SW * 32) kda_chunk_state(
    const float* __restrict__ h0, const long long* __restrict__ cu, const float* __restrict__ qg,
    const float* __restrict__ kd, const float* __restrict__ w, const float* __restrict__ u,
    const float* __restrict__ P, const float* __restrict__ gl, __nv_bfloat16* __restrict__ o,
    float* __restrict__ ht, long long T, long long H, long long K, long long V, long long NSEQ,
    float scale) {
  if (K != KC_KD || V != KC_KD) __trap();
  (void)T;
  (void)NSEQ;
  extern __shared__ __align__(16) float sm[];
  float* S = sm;                       // [KD][LDS]
  float* Vn = S + KC_KD * KC_LDS;      // [CH][LDS]  v' = u - w S
  float* XA = Vn + KC_CH * KC_LDS;     // [CH][LDK]  operand buffers (rotating)
  float* XB = XA + KC_CH * KC_LDK;     // [CH][LDK]
  float* glc = XB + KC_CH * KC_LDK;    // [KD]
  const long long n = blockIdx.x, h = blockIdx.y;
  const int v0 = blockIdx.z * BV;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  constexpr int WN = SW / 4;              // column groups in the [64 x BV] products
  constexpr int NTW = BV / 8 / WN;        // n-tiles per warp there
  constexpr int MTS = 8 / SW;             // m-tiles (16 rows of d) per warp in the S update
  const int wm = warp & 3, wn = warp >> 2;
  const int i0 = 16 * wm + gq, i1 = i0 + 8;
  KC_PROF_START;

  for (int idx = tid; idx < KC_KD * BV; idx += SW * 32) {
    const int e = idx / KC_KD, d = idx % KC_KD;
    S[d * KC_LDS + e] = h0[((n * H + h) * KC_KD + v0 + e) * KC_KD + d];
  }
  const long long bos0 = cu[n], eos = cu[n + 1], slot0 = n + bos0 / KC_CH;
  if (bos0 < eos) {
    kc_async_rows(XA, w, bos0, (int)min((long long)KC_CH, eos - bos0), H, h);
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
    // P fragments (rows i0, i1) and u for this warp, into registers.
    KC_MARK(14);
    float pa[KC_CH / 8][4];
    {
      const float* P0 = P + ((slot * H + h) * KC_CH + i0) * KC_CH;
      const float* P1 = P + ((slot * H + h) * KC_CH + i1) * KC_CH;
#pragma unroll
      for (int ks = 0; ks < KC_CH / 8; ++ks) {
        const int j0 = ks * 8 + tq;
        pa[ks][0] = i0 < len ? P0[j0] : 0.f;
        pa[ks][1] = i1 < len ? P1[j0] : 0.f;
        pa[ks][2] = i0 < len ? P0[j0 + 4] : 0.f;
        pa[ks][3] = i1 < len ? P1[j0 + 4] : 0.f;
      }
    }
    float2 uu[NTW][2];
#pragma unroll
    for (int nt = 0; nt < NTW; ++nt) {
      const int e = v0 + (wn * NTW + nt) * 8 + 2 * tq;
      uu[nt][0] = i0 < len ? *reinterpret_cast<const float2*>(u + ((bos + i0) * H + h) * KC_KD + e) : make_float2(0.f, 0.f);
      uu[nt][1] = i1 < len ? *reinterpret_cast<const float2*>(u + ((bos + i1) * H + h) * KC_KD + e) : make_float2(0.f, 0.f);
    }
    // A: v' = u - w S
    {
      kda::frag_c acc[NTW];
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[nt]);
#pragma unroll 4
      for (int ks = 0; ks < KC_KD / 8; ++ks) {
        kda::frag_a a;
        kda::load_a_rm<KC_RND>(a, XA, KC_LDK, 16 * wm, ks * 8);
#pragma unroll
        for (int nt = 0; nt < NTW; ++nt) {
          kda::frag_b b;
          kda::load_b_km<KC_RND>(b, S, KC_LDS, ks * 8, (wn * NTW + nt) * 8);
          kda::mma(acc[nt], a, b);
        }
      }
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) {
        const int e = (wn * NTW + nt) * 8 + 2 * tq;
        float2 r0 = make_float2(0.f, 0.f), r1 = make_float2(0.f, 0.f);
        if (i0 < len) r0 = make_float2(KC_OUT(uu[nt][0].x - acc[nt].x[0]), KC_OUT(uu[nt][0].y - acc[nt].x[1]));
        if (i1 < len) r1 = make_float2(KC_OUT(uu[nt][1].x - acc[nt].x[2]), KC_OUT(uu[nt][1].y - acc[nt].x[3]));
        *reinterpret_cast<float2*>(Vn + i0 * KC_LDS + e) = r0;
        *reinterpret_cast<float2*>(Vn + i1 * KC_LDS + e) = r1;
      }
    }
    KC_MARK(8);
    kda::cp_async_wait_all();
    __syncthreads();
    KC_MARK(9);
    kc_async_rows(XA, kd, bos, len, H, h);
    kda::cp_async_commit();
    // B: o = scale (qg S + P v')
    {
      kda::frag_c acc[NTW];
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[nt]);
#pragma unroll 4
      for (int ks = 0; ks < KC_KD / 8; ++ks) {
        kda::frag_a a;
        kda::load_a_rm<KC_RND>(a, XB, KC_LDK, 16 * wm, ks * 8);
#pragma unroll
        for (int nt = 0; nt < NTW; ++nt) {
          kda::frag_b b;
          kda::load_b_km<KC_RND>(b, S, KC_LDS, ks * 8, (wn * NTW + nt) * 8);
          kda::mma(acc[nt], a, b);
        }
      }
#pragma unroll
      for (int ks = 0; ks < KC_CH / 8; ++ks) {
        kda::frag_a a;
#pragma unroll
        for (int x = 0; x < 4; ++x) a.x[x] = kda::tf32_bits<KC_RND>(pa[ks][x]);
#pragma unroll
        for (int nt = 0; nt < NTW; ++nt) {
          kda::frag_b b;
          kda::load_b_km<KC_RND>(b, Vn, KC_LDS, ks * 8, (wn * NTW + nt) * 8);
          kda::mma(acc[nt], a, b);
        }
      }
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
    KC_MARK(10);
    kda::cp_async_wait_all();
    __syncthreads();
    KC_MARK(11);
    if (bos + KC_CH < eos) {
      kc_async_rows(XB, w, bos + KC_CH, (int)min((long long)KC_CH, eos - bos - KC_CH), H, h);
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
    KC_MARK(12);
    kda::cp_async_wait_all();
    __syncthreads();
    KC_MARK(13);
    float* tmp = XA;  // the next chunk's w is in XB
    XA = XB;
    XB = tmp;
  }
  for (int idx = tid; idx < KC_KD * BV; idx += SW * 32) {
    const int e = idx / KC_KD, d = idx % KC_KD;
    ht[((n * H + h) * KC_KD + v0 + e) * KC_KD + d] = S[d * KC_LDS + e];
  }
}
