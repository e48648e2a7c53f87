// targets/kda/ops/kda_f16.cuh — warp-level fp16 tensor-core products on swizzled fp16 shared
// tiles, loaded with ldmatrix; written for kda (targets/kda/kernels/, PREC 2).
//
// fp16 has tf32's 10 explicit mantissa bits, so fp16 operands (round to nearest) are
// as accurate as tf32 ones as long as values stay in fp16 range (|x| < 65504; under
// 6.1e-5 precision degrades gradually through the subnormals). bf16 (8 bits) is not.
// One mma.sync.m16n8k16 f16 x f16 -> f32 per call (twice tf32 m16n8k8's work), and
// fragments come from ldmatrix (one instruction per 16x16 operand block) instead of
// scalar loads and conversions.
//
// Shared tiles: row-major fp16, RB bytes per row (RB = 64, 128 or 256), the 16-byte
// chunk c of row r stored at chunk c ^ sw<RB>(r) (sw = r & 7 for RB >= 128,
// (r >> 1) & 3 for RB = 64), which makes 16-byte cp.async stores, 4-byte fragment
// stores and ldmatrix row reads conflict free. Element (r, c) is at sw_off<RB>(r, c).
//
// Products (one warp; acc in the m16n8 fp32 accumulator layout of tile/kda_tf32.cuh,
// frag_c: c0 (g, 2t) c1 (g, 2t+1) c2 (g+8, 2t) c3 (g+8, 2t+1), g = lane/4, t = lane%4):
//   mma_strip_f16<K, N, NA, RBA, RBB>(acc[NA][N], a[NA], m0, b, n0)
//       acc[r][j] += A_r(m0..m0+15, 0..K-1) B(0..K-1, n0+8j..n0+8j+7): NA row-major A
//       tiles (element (m, k) at row m) sharing one k-major B tile (element (k, n) at
//       row k, loaded with ldmatrix.trans). N even, m0 % 8 == 0, n0 % 16 == 0.
//   mma_tile_f16_kk<K, MT, N, RBA, RBB>(acc[MT][N], a, m0, b, n0 = 0)
//       acc[i][j] += A(m0+16i.., 0..K-1) B(0..K-1, n0+8j..): A k-major (element (m, k)
//       at row k: a transposed row-major tile, ldmatrix.trans), B k-major. m0 % 16 == 0,
//       n0 % 16 == 0.
// Tile addresses (a, b) are shared-state-space byte addresses (tile::smem_addr).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "tile/base.cuh"
#include "kda_tf32.cuh"

namespace kda {

template <int RB>
__device__ __forceinline__ u32 sw_row(int r) {
  static_assert(RB == 64 || RB == 128 || RB == 256, "sw_row: RB must be 64, 128 or 256");
  if constexpr (RB == 64) return (u32)(r >> 1) & 3u;
  else return (u32)r & 7u;
}
// Byte offset of element (r, c) (c in fp16 elements) in a swizzled tile.
template <int RB>
__device__ __forceinline__ u32 sw_off(int r, int c) {
  return (u32)r * RB + ((((u32)c >> 3) ^ sw_row<RB>(r)) << 4) + ((u32)c & 7u) * 2u;
}
// A lane's part of an ldmatrix address: row lr (< 16) and 16-byte column half lcb (0, 1)
// of a 16x16 block; the block at (row0, col0) (row0 % 8 == 0, col0 % 16 == 0) is then
// at row0 * RB + (lane_sw<RB>(lr, lcb) ^ (col0 * 2)).
template <int RB>
__device__ __forceinline__ u32 lane_sw(int lr, int lcb) {
  return (u32)lr * RB + (((u32)lcb ^ sw_row<RB>(lr)) << 4);
}

__device__ __forceinline__ void ldsm_x4(u32 (&d)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(u32 (&d)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(addr));
}

// The inverse of ldsm_x4_t: four 8x8 b16 matrices stored transposed, lane l giving the
// address of row l % 8 of matrix l / 8 and holding, in s[m], the elements (2 (l % 4), l / 4)
// (low half) and (2 (l % 4) + 1, l / 4) of matrix m: a lane's pair runs down a column.
__device__ __forceinline__ void stsm_x4_t(u32 addr, const u32 (&s)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(s[0]),
               "r"(s[1]), "r"(s[2]), "r"(s[3])
               : "memory");
}

// d += a * (b0, b1): m16n8k16, fp16 operands, fp32 accumulate.
__device__ __forceinline__ void mma_f16(frag_c& d, const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> fp16x2 (round to nearest), lo in the low half.
__device__ __forceinline__ u32 pack_f16x2(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<u32*>(&v);
}
__device__ __forceinline__ float2 unpack_f16x2(u32 x) {
  return __half22float2(*reinterpret_cast<__half2*>(&x));
}
__device__ __forceinline__ void st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ u32 ld_shared_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
// The bf16 (round to nearest) of x, stored as one 16-bit element at shared address addr.
__device__ __forceinline__ void st_shared_bf16(u32 addr, float x) {
  const unsigned short b = __bfloat16_as_ushort(__float2bfloat16_rn(x));
  asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(addr), "h"(b) : "memory");
}

template <int K, int N, int NA, int RBA, int RBB>
__device__ __forceinline__ void mma_strip_f16(frag_c (&acc)[NA][N], const u32 (&a)[NA], int m0, u32 b, int n0) {
  static_assert(K % 16 == 0 && N % 2 == 0, "mma_strip_f16: K % 16 == 0, N even");
  const int lane = threadIdx.x & 31;
  const u32 la = (u32)m0 * RBA + lane_sw<RBA>(lane & 15, lane >> 4);
  const u32 lb = lane_sw<RBB>(lane & 15, lane >> 4);
#pragma unroll
  for (int ks = 0; ks < K / 16; ++ks) {
    u32 af[NA][4];
#pragma unroll
    for (int r = 0; r < NA; ++r) ldsm_x4(af[r], a[r] + (la ^ (u32)(ks * 32)));
#pragma unroll
    for (int j = 0; j < N / 2; ++j) {
      u32 bf[4];
      ldsm_x4_t(bf, b + ks * 16 * RBB + (lb ^ (u32)((n0 + 16 * j) * 2)));
#pragma unroll
      for (int r = 0; r < NA; ++r) {
        mma_f16(acc[r][2 * j], af[r], bf[0], bf[1]);
        mma_f16(acc[r][2 * j + 1], af[r], bf[2], bf[3]);
      }
    }
  }
}

template <int K, int MT, int N, int RBA, int RBB>
__device__ __forceinline__ void mma_tile_f16_kk(frag_c (&acc)[MT][N], u32 a, int m0, u32 b, int n0 = 0) {
  static_assert(K % 16 == 0 && N % 2 == 0, "mma_tile_f16_kk: K % 16 == 0, N even");
  const int lane = threadIdx.x & 31;
  const u32 la = lane_sw<RBA>((lane & 7) | ((lane >> 4) << 3), (lane >> 3) & 1);
  const u32 lb = lane_sw<RBB>(lane & 15, lane >> 4);
#pragma unroll
  for (int ks = 0; ks < K / 16; ++ks) {
    u32 af[MT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i) ldsm_x4_t(af[i], a + ks * 16 * RBA + (la ^ (u32)((m0 + 16 * i) * 2)));
#pragma unroll
    for (int j = 0; j < N / 2; ++j) {
      u32 bf[4];
      ldsm_x4_t(bf, b + ks * 16 * RBB + (lb ^ (u32)((n0 + 16 * j) * 2)));
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        mma_f16(acc[i][2 * j], af[i], bf[0], bf[1]);
        mma_f16(acc[i][2 * j + 1], af[i], bf[2], bf[3]);
      }
    }
  }
}

}  // namespace kda
