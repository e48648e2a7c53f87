// tile/online_softmax.cuh — tessera tile library: the online softmax (FlashAttention's
// running maximum and sum) over rows held in m16n8 accumulator fragments (tile::rt_c, the
// layout of mma.sync and of wgmma's m64 accumulators): each thread holds two rows
// (lane/4 and lane/4 + 8 of its warp's 16), and the four lanes of a quad share a row.
// Scores are turned into the log2 domain by scale_log2 (scale * log2 e) inside one FMA.
//
//   SoftmaxRows st; st.init()          maximum -inf, sum 0 for the thread's two rows
//   st.step<NB, MASKED, kPoly, kLazy>(s, scale_log2, keep, alpha)
//                                      s (NB fragments: a row's 8*NB columns) becomes
//                                      P = exp2(s * scale_log2 - m_new), m and l updated,
//                                      alpha[r] = exp2(m_old - m_new) (the factor the
//                                      row's output accumulators take: rescale(o, alpha));
//                                      returns whether alpha may differ from 1 (false only
//                                      with kLazy: then o needs no rescale);
//                                      kLazy: while no row of the warp's maximum grows by
//                                      more than 8 (log2), the rows keep their old
//                                      maxima (P up to 2^8, alpha 1), FlashAttention-4's
//                                      way of skipping most rescales of O
//                                      MASKED: element (column 8j + 2(lane%4) + (e&1),
//                                      row half e>>1) counts only if keep(j, e);
//                                      kPoly k > 0 (unmasked steps only): fragments
//                                      j % k == k - 1 take exp2_poly, the rest ex2
//   exp2_poly(x)                       2^x (x <= 8) on the FMA pipe, relative error
//                                      below 1e-4 (FlashAttention-4's way of relieving
//                                      the 16-per-clock multi-function unit)
//   rescale(o, alpha)                  o's rows times alpha
//   st.finish(inv_l, lse)              sums over the quad; 1/l (0 for a row with no kept
//                                      element) and the base-2 log-sum-exp m + log2 l
//                                      (-inf for such a row), per row half
// A row with nothing kept yet has maximum -inf: its exponent base is taken as 0, so its
// probabilities are 0 and no NaN arises.
#pragma once
#include "base.cuh"
#include "mma.cuh"

namespace tile {

// -inf (NVRTC has no INFINITY)
__device__ __forceinline__ float minus_infinity() { return __int_as_float(0xff800000u); }

// 2^x, flushing results below 2^-126 to zero (softmax probabilities: x <= 0).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// 2^x for x <= 8 (softmax probabilities, up to 2^8 with a lazy maximum) without the
// multi-function unit: x clamped at -125, rounded to the
// nearest integer n by the 1.5 * 2^23 trick (n sits in the low mantissa bits of t), 2^(x-n)
// for x - n in [-0.5, 0.5] by a degree-3 polynomial (weighted least squares, relative
// error 7.5e-5: P is rounded to bf16 next, 3.9e-3), and n added to its exponent field.
// Below -125 the result is about 2^-125, not 0: use it only where a row's maximum is
// finite. (At -126 a polynomial value below 1 would get a zero exponent field: a denormal
// that drops the leading bit, 1.4e-4 off; the GPU test found it.)
__device__ __forceinline__ float exp2_poly(float x) {
  x = fmaxf(x, -125.f);
  const float t = x + 12582912.f;
  const float f = x - (t - 12582912.f);
  const float p = fmaf(fmaf(fmaf(0.0551716685f, f, 0.2426111251f), f, 0.6932609677f), f, 0.9999280572f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

struct SoftmaxRows {
  float m[2], l[2];  // log2-domain maximum, partial sum (this lane's columns) per row half

  __device__ __forceinline__ void init() {
    m[0] = m[1] = minus_infinity();
    l[0] = l[1] = 0.f;
  }

  template <int NB, bool MASKED, int kPoly = 0, bool kLazy = false, class Keep>
  __device__ __forceinline__ bool step(rt_c (&s)[NB], float scale_log2, const Keep& keep, float (&alpha)[2]) {
    static_assert(kPoly >= 0, "kPoly: 0 or every how many fragments one is computed on the FMA pipe");
    float mx[2] = {minus_infinity(), minus_infinity()};
#pragma unroll
    for (int j = 0; j < NB; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if constexpr (MASKED) {
          if (!keep(j, e)) s[j].x[e] = minus_infinity();
        }
        mx[e >> 1] = fmaxf(mx[e >> 1], s[j].x[e]);
      }
    float base[2];
    bool moved = true;  // whether alpha may differ from 1
    if constexpr (!kLazy) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float mnew = fmaxf(m[r], mx[r] * scale_log2);
        base[r] = mnew == minus_infinity() ? 0.f : mnew;
        alpha[r] = exp2_approx(m[r] - base[r]);
        m[r] = mnew;
      }
    } else {
      // how far (log2) a row's maximum may grow before the step moves it: P stays below 2^8,
      // and l and O's fp32 accumulators lose nothing by it (a local constant: NVRTC's
      // -default-device makes a namespace-scope one a module variable)
      constexpr float kLazyLog2 = 8.f;
      float mnew[2];
      bool grows = false;  // a row's maximum moves by more than kLazyLog2 (from -inf: at all)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        mnew[r] = fmaxf(m[r], mx[r] * scale_log2);
        grows |= mnew[r] > m[r] + kLazyLog2;
      }
      moved = __any_sync(0xffffffffu, grows);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float mb = moved ? mnew[r] : m[r];  // the old maximum stays the base while none moves
        base[r] = mb == minus_infinity() ? 0.f : mb;
        alpha[r] = moved ? exp2_approx(m[r] - base[r]) : 1.f;
        m[r] = mb;
      }
    }
    float sum[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < NB; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float x = fmaf(s[j].x[e], scale_log2, -base[e >> 1]);
        float p;
        if constexpr (!MASKED && kPoly > 0) {
          p = j % kPoly == kPoly - 1 ? exp2_poly(x) : exp2_approx(x);
        } else {
          p = exp2_approx(x);
        }
        s[j].x[e] = p;
        sum[e >> 1] += p;
      }
#pragma unroll
    for (int r = 0; r < 2; ++r) l[r] = l[r] * alpha[r] + sum[r];
    return moved;
  }

  __device__ __forceinline__ void finish(float (&inv_l)[2], float (&lse)[2]) const {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float t = l[r];
      t += __shfl_xor_sync(0xffffffffu, t, 1);
      t += __shfl_xor_sync(0xffffffffu, t, 2);
      inv_l[r] = t > 0.f ? 1.f / t : 0.f;
      lse[r] = t > 0.f ? m[r] + __log2f(t) : minus_infinity();
    }
  }
};

template <int NB>
__device__ __forceinline__ void rescale(rt_c (&o)[NB], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < NB; ++j) {
    o[j].x[0] *= alpha[0];
    o[j].x[1] *= alpha[0];
    o[j].x[2] *= alpha[1];
    o[j].x[3] *= alpha[1];
  }
}

}  // namespace tile
