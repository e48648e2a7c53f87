// targets/kda/ops/kda_chunk_ops.cuh — small fp32 building blocks for chunked linear-attention
// kernels (written for kda, targets/kda/kernels/), beside the tf32 fragments of
// tile/kda_tf32.cuh. All in namespace kda, NVRTC-safe, fp32 throughout.
//
//   bf16x4_to_f32(p, out[4])        4 consecutive bf16 (8-byte aligned, shared or
//                                  global) -> 4 floats, one 8-byte load.
//   bf16x2_to_f32(p)                2 consecutive bf16 (4-byte aligned) -> float2, one
//                                  4-byte load.
//   bf16x2_bits_to_f32(x)           a bf16 pair held in a u32 (low half first) -> float2,
//                                  one integer op per value (exact).
//   ex2(x)                          2^x, one MUFU.EX2 (ex2.approx.ftz: ~2 ulp, results
//                                  under 2^-126 flush to 0). Keep log-decays in log2
//                                  units and every e^(a-b) costs one subtraction and this.
//   warp_sum16(v[16])               one warp: returns the sum over the 32 lanes of
//                                  v[(lane >> 1) & 15] (lanes 2m and 2m+1 hold the sum
//                                  of value m): 16 sums in 16 shuffles (each level
//                                  halves the values a lane keeps) instead of 80.
//   inclusive_scan_regs(x[N])       x[i] <- x[0] + ... + x[i] in registers (a thread's
//                                  column of a cumulative sum: N independent loads, then
//                                  an N-add chain, no shared-memory round trips).
//   inv_unit_lower16<LD>(T)         one warp: T (16x16 fp32 in shared memory, row stride
//                                  LD floats) holds a strictly lower triangular L in its
//                                  entries j < i (the rest is ignored); it is overwritten
//                                  with (I + L)^-1, full 16x16 with zeros above the
//                                  diagonal. Forward substitution in registers: lane m
//                                  (and m + 16, duplicate) keeps column m of the inverse,
//                                  reads rows of L as broadcasts; 120 FMAs, no barriers.
//   inv_unit_lower16<LD>(T, spare)  the same; lanes 16-31 (which hold the same columns)
//                                  call spare(i, m, x) for every row i of column m
//                                  (x = (I + L)^-1 [i][m]) instead of idling, e.g. to
//                                  store a second copy in another precision.
//   mm_strip<KL, W>(acc[W], a, b, ldb)
//                                  acc[w] += sum_{k<KL} a[k] * b[k*ldb + w]: one thread's
//                                  1xW strip of a small C = A B on CUDA cores, A's row in
//                                  shared memory (a, contiguous) and B row-major (b, ldb);
//                                  W = 2 or 4 reads B with 8- or 16-byte loads (b and ldb
//                                  aligned to match). For fp32-exact small products (e.g.
//                                  the blocked triangular inverse), where tf32 would cost
//                                  accuracy.
#pragma once
#include <cuda_bf16.h>

namespace kda {

// bf16 is the high half of an fp32: a shift (low element) or a mask (high element) per
// value, where __bfloat1622float2 spends a byte permute and a shift on the high one.
__device__ __forceinline__ float2 bf16x2_bits_to_f32(unsigned x) {
  return make_float2(__uint_as_float(x << 16), __uint_as_float(x & 0xffff0000u));
}

__device__ __forceinline__ void bf16x4_to_f32(const __nv_bfloat16* p, float (&out)[4]) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 a = bf16x2_bits_to_f32(raw.x), b = bf16x2_bits_to_f32(raw.y);
  out[0] = a.x;
  out[1] = a.y;
  out[2] = b.x;
  out[3] = b.y;
}

__device__ __forceinline__ float2 bf16x2_to_f32(const __nv_bfloat16* p) {
  return bf16x2_bits_to_f32(*reinterpret_cast<const unsigned*>(p));
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float warp_sum16(const float (&v)[16]) {
  const int lane = threadIdx.x & 31;
  float a[8], b[4], c[2];
  const bool h4 = lane & 16, h3 = lane & 8, h2 = lane & 4;
#pragma unroll
  for (int i = 0; i < 8; ++i)  // keep values 8*h4 + i
    a[i] = (h4 ? v[i + 8] : v[i]) + __shfl_xor_sync(0xffffffffu, h4 ? v[i] : v[i + 8], 16);
#pragma unroll
  for (int i = 0; i < 4; ++i)  // keep 8*h4 + 4*h3 + i
    b[i] = (h3 ? a[i + 4] : a[i]) + __shfl_xor_sync(0xffffffffu, h3 ? a[i] : a[i + 4], 8);
#pragma unroll
  for (int i = 0; i < 2; ++i)  // keep 8*h4 + 4*h3 + 2*h2 + i
    c[i] = (h2 ? b[i + 2] : b[i]) + __shfl_xor_sync(0xffffffffu, h2 ? b[i] : b[i + 2], 4);
  const bool h1 = lane & 2;
  float x = (h1 ? c[1] : c[0]) + __shfl_xor_sync(0xffffffffu, h1 ? c[0] : c[1], 2);
  return x + __shfl_xor_sync(0xffffffffu, x, 1);
}

template <int N>
__device__ __forceinline__ void inclusive_scan_regs(float (&x)[N]) {
#pragma unroll
  for (int i = 1; i < N; ++i) x[i] += x[i - 1];
}

template <int LD, class Spare>
__device__ __forceinline__ void inv_unit_lower16(float* T, Spare spare) {
  const int m = threadIdx.x & 15;
  float x[16];  // x[i] = (I+L)^-1 [i][m]
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    float acc = (i == m) ? 1.f : 0.f;
#pragma unroll
    for (int j = 0; j < i; ++j) acc -= T[i * LD + j] * x[j];
    x[i] = acc;
  }
  __syncwarp();  // every lane has read L before any lane overwrites it
  if ((threadIdx.x & 31) < 16) {
#pragma unroll
    for (int i = 0; i < 16; ++i) T[i * LD + m] = x[i];
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) spare(i, m, x[i]);
  }
  __syncwarp();
}
template <int LD>
__device__ __forceinline__ void inv_unit_lower16(float* T) {
  inv_unit_lower16<LD>(T, [](int, int, float) {});
}

template <int KL, int W>
__device__ __forceinline__ void mm_strip(float (&acc)[W], const float* a, const float* b, int ldb) {
  static_assert(W == 2 || W == 4, "mm_strip: W must be 2 or 4");
  static_assert(KL % 4 == 0, "mm_strip: KL must be a multiple of 4");
#pragma unroll
  for (int k4 = 0; k4 < KL; k4 += 4) {
    const float4 av = *reinterpret_cast<const float4*>(a + k4);
    const float ak[4] = {av.x, av.y, av.z, av.w};
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const float* br = b + (k4 + kk) * ldb;
      if constexpr (W == 4) {
        const float4 bv = *reinterpret_cast<const float4*>(br);
        acc[0] += ak[kk] * bv.x;
        acc[1] += ak[kk] * bv.y;
        acc[2] += ak[kk] * bv.z;
        acc[3] += ak[kk] * bv.w;
      } else {
        const float2 bv = *reinterpret_cast<const float2*>(br);
        acc[0] += ak[kk] * bv.x;
        acc[1] += ak[kk] * bv.y;
      }
    }
  }
}

}  // namespace kda
