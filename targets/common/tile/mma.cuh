// tile/mma.cuh — tessera tile library: warp-level bf16 tensor-core tiles (mma.sync).
//
// Register tiles (one warp; the layouts of mma.sync.m16n8k16 .row.col):
//   rt_a   16x16 bf16 A operand (row-major), 4 regs per lane
//   rt_b   16(n) x 16(k) bf16 B operand stored n-major ("col" B), 4 regs per lane;
//          it holds two n8 halves: half h uses regs {2h, 2h+1}
//   rt_c   16x8 fp32 accumulator, 4 floats per lane: lane l holds rows l/4 and l/4+8,
//          columns 2*(l%4) and 2*(l%4)+1  (c[0],c[1] row l/4; c[2],c[3] row l/4+8)
// Shared tiles:
//   st_bf16<ROWS, COLS>  row-major bf16 tile, COLS*2 bytes per row (64 or 128), with
//                        the swz128 swizzle; base must be 1024-byte aligned for
//                        conflict-free access (any base is still correct).
// Operations (destination first):
//   load(rt_a&, st, row0, col0)    ldmatrix.x4 of the 16x16 block at (row0, col0)
//   load(rt_b&, st, row0, col0)    ldmatrix.x4 of rows n0..n0+15, cols k0..k0+15 of an
//                                  [N][K] shared tile (B given transposed = col-major B)
//   mma(rt_c& d, rt_a, rt_b, h)    d += a * b_half(h)   (m16n8k16, fp32 accumulate)
//   zero(rt_c&)
// Element types: MmaElem<T> (T __nv_bfloat16 or __half) has the product mma(d, a, b, h) of
// that operand type (the fragment layouts are the same for both), and round / round2, C's
// rounding to nearest T; MmaElemOf<HALF>::T picks T.
// Fast addressing for hot loops (no per-load swizzle arithmetic):
//   u32 o = lane_off_a<COLS>(row0) / lane_off_b<COLS>(row0): this lane's swizzled byte
//   offset for the 16x16 block at (row0, 0). The block at (row0 + 16*i, col0) is then at
//   (o ^ (col0*2)) + i*16*COLS*2, valid for col0 a multiple of 16 and row0 of 8;
//   ldmatrix_x4(rt.x, tile_base + offset) loads it.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "base.cuh"

namespace tile {

struct rt_a { u32 x[4]; };
struct rt_b { u32 x[4]; };
struct rt_c { float x[4]; };

template <int ROWS, int COLS>
struct st_bf16 {
  static_assert(COLS == 32 || COLS == 64, "st_bf16: rows must be 64 or 128 bytes");
  static constexpr int bytes = ROWS * COLS * 2;
  u32 base;  // shared address
  // Shared address of element (r, c); c must be a multiple of 8 (16-byte chunk).
  __device__ __forceinline__ u32 at(int r, int c) const { return base + swz128((u32)(r * COLS + c) * 2u); }
};

__device__ __forceinline__ void ldmatrix_x4(u32 (&d)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(addr));
}

template <int R, int C>
__device__ __forceinline__ void load(rt_a& d, const st_bf16<R, C>& s, int row0, int col0) {
  const int lane = threadIdx.x & 31;
  ldmatrix_x4(d.x, s.at(row0 + (lane & 15), col0 + ((lane >> 4) << 3)));
}

template <int R, int C>
__device__ __forceinline__ void load(rt_b& d, const st_bf16<R, C>& s, int row0, int col0) {
  const int lane = threadIdx.x & 31;
  ldmatrix_x4(d.x, s.at(row0 + (lane & 7) + ((lane >> 4) << 3), col0 + (((lane >> 3) & 1) << 3)));
}

template <int COLS>
__device__ __forceinline__ u32 lane_off_a(int row0) {
  const int lane = threadIdx.x & 31;
  return swz128((u32)((row0 + (lane & 15)) * COLS + ((lane >> 4) << 3)) * 2u);
}
template <int COLS>
__device__ __forceinline__ u32 lane_off_b(int row0) {
  const int lane = threadIdx.x & 31;
  return swz128((u32)((row0 + (lane & 7) + ((lane >> 4) << 3)) * COLS + (((lane >> 3) & 1) << 3)) * 2u);
}

__device__ __forceinline__ void zero(rt_c& d) { d.x[0] = d.x[1] = d.x[2] = d.x[3] = 0.f; }

__device__ __forceinline__ void mma(rt_c& d, const rt_a& a, const rt_b& b, int h) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
      : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[2 * h]), "r"(b.x[2 * h + 1]));
}

// What the element type changes in an mma.sync product: the instruction (bf16 or fp16
// operands, fp32 accumulation) and the rounding of C.
template <typename T>
struct MmaElem;
template <>
struct MmaElem<__nv_bfloat16> {
  using T2 = __nv_bfloat162;
  static __device__ __forceinline__ void mma(rt_c& d, const rt_a& a, const rt_b& b, int h) { tile::mma(d, a, b, h); }
  static __device__ __forceinline__ __nv_bfloat16 round(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ T2 round2(float v0, float v1) { return __floats2bfloat162_rn(v0, v1); }
};
template <>
struct MmaElem<__half> {
  using T2 = __half2;
  // d += a * b_half(h), fp16 operands, fp32 accumulation (mma's bf16 form with .f16)
  static __device__ __forceinline__ void mma(rt_c& d, const rt_a& a, const rt_b& b, int h) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
        : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[2 * h]), "r"(b.x[2 * h + 1]));
  }
  static __device__ __forceinline__ __half round(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ T2 round2(float v0, float v1) { return __floats2half2_rn(v0, v1); }
};
template <bool HALF>
struct MmaElemOf {
  using T = __nv_bfloat16;
};
template <>
struct MmaElemOf<true> {
  using T = __half;
};

}  // namespace tile
