// tile/warpgroup.cuh — tessera tile library: Hopper warpgroup matrix products (wgmma,
// sm_90a) on 128-byte-swizzled shared tiles, for any operator (bf16 or fp16 in, fp32
// accumulate), and the warpgroup's register and barrier controls.
//
// Shared tiles ("sw128 tiles"): a [ROWS][COLS] tile of 16-bit elements is COLS/64
// column blocks, each [ROWS][64] with 128-byte rows and 16-byte chunks XOR-swizzled by
// row % 8 (tile::swz128), ROWS*128 bytes apart, the tile 1024-byte aligned. It is what a
// TMA box of 64 elements x ROWS rows with swizzle 128 writes (tile/tma.cuh), and it
// serves as either operand form:
//   K-major  (rows = M or N, columns = K):   desc_kmajor(base of a column block); the
//            k16 step inside a block is +32 bytes, the next block +ROWS*128
//   MN-major (rows = K, columns = M or N):   desc_mnmajor(base, ROWS*128) for N up to
//            COLS (the column blocks are the descriptor's leading-byte stride); the k16
//            step is +16 rows = +2048 bytes
//   sw128_offset<ROWS>(r, c)  byte offset of element (r, c) in such a tile
//   desc_advance(d, bytes)    d with its start address moved by bytes (a multiple of 16,
//                             the address below 256 KB): one 32-bit add
//
// Products (every thread of the warpgroup calls them together; accumulators are m64 x N,
// N/8 tile::rt_c fragments: fragment j of warp w (w = warp % 4) holds rows 16w + lane/4
// and 16w + lane/4 + 8, columns 8j + 2(lane%4) and +1, the layout of mma.sync's m16n8):
//   wgmma_ss<AB, TA, TB>(d, da, db, accumulate)   d (+)= A(64x16) B(16xN), both by
//                                                 descriptor; TA/TB 1 = MN-major
//   wgmma_rs<AB, TB>(d, a, db, accumulate)        A from registers (frag_a: this thread's
//                                                 share of the 64x16 A tile)
//   accumulate 0: d = A B (d's old values unread); N is d's size: 64 or 128, and for
//   wgmma_ss also 48, 96, 192 or 256 (m64n192k16, m64n256k16: a warpgroup's wide tile reads its
//   64 x 16 A slice once for all N columns, which halves A's shared-memory reads
//   against two n128 products).
//   to_frag_a<AB>(a, lo, hi)   accumulator fragments 2s and 2s+1 (m64 x 16 columns) as
//                              the A operand of k-slice s: a product feeds the next one
//   wgmma_fence()       before the first product of a batch that reads registers
//                       written by ordinary instructions (accumulators, A fragments)
//   wgmma_commit(), wgmma_wait<N>()  close the batch; wait until at most N batches are
//                       in flight (the accumulators are not touched in between)
//   fence_operand(d)    ties accumulators to this point of the program (after a wait: no
//                       read of d is moved above it by the compiler)
//   fence_async_shared()  orders ordinary shared-memory accesses with the async proxy
//                       (wgmma operand reads, TMA and bulk copies); then a barrier
// Registers and barriers:
//   set_max_registers<inc|dec, N>()  setmaxnreg: the warpgroup's per-thread registers
//                       (a multiple of 8, 24..256), moved between warpgroups of a block
//   named_barrier_sync(id, threads), named_barrier_arrive(id, threads)  bar.sync /
//                       bar.arrive on barrier id (1..15; 0 is __syncthreads)
// On targets without wgmma (anything but sm_90a) the products trap.
#pragma once
#include <cuda_fp16.h>

#include "base.cuh"
#include "mma.cuh"

namespace tile {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TILE_WARPGROUP_WGMMA 1
#else
#define TILE_WARPGROUP_WGMMA 0
#endif

typedef unsigned long long u64;

// The 16-bit input type of a product.
enum class Ab { bf16, f16 };

// A's share of one thread (the m16n8k16 A fragment of its warp's 16 rows).
struct frag_a {
  u32 x[4];
};

template <int ROWS>
__device__ __forceinline__ u32 sw128_offset(int r, int c) {
  return (u32)(c >> 6) * (ROWS * 128) + swz128((u32)r * 128 + (u32)(c & 63) * 2);
}

// Descriptor of a 128-byte-swizzled operand: start address, leading and stride byte
// offsets (encoded >> 4), swizzle mode 1 (128 bytes) in bits 62-63.
__device__ __forceinline__ u64 desc_sw128(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFFu) >> 4) | ((u64)((lbo >> 4) & 0x3FFFu) << 16) | ((u64)((sbo >> 4) & 0x3FFFu) << 32) |
         (1ull << 62);
}
// 8-row core-matrix groups 1024 bytes apart; the leading offset is unused for K-major.
__device__ __forceinline__ u64 desc_kmajor(u32 addr) { return desc_sw128(addr, 16, 1024); }
__device__ __forceinline__ u64 desc_mnmajor(u32 addr, u32 block_stride) { return desc_sw128(addr, block_stride, 1024); }
// The start address is bits 0-13 ((addr >> 4) of an 18-bit address): adding bytes >> 4 to
// the low word cannot carry into the other fields while addr + bytes < 2^18.
__device__ __forceinline__ u64 desc_advance(u64 d, u32 bytes) {
  return (d & 0xffffffff00000000ull) | (u32)((u32)d + (bytes >> 4));
}

__device__ __forceinline__ void wgmma_fence() {
#if TILE_WARPGROUP_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if TILE_WARPGROUP_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if TILE_WARPGROUP_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
__device__ __forceinline__ void fence_async_shared() {
#if TILE_WARPGROUP_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void fence_operand(rt_c (&d)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[j].x[e])::"memory");
}

// A warpgroup's registers per thread: dec gives them back, inc takes them (a multiple of 8).
template <bool kIncrease, int N>
__device__ __forceinline__ void set_max_registers() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: a multiple of 8 in 24..256");
#if TILE_WARPGROUP_WGMMA
  if constexpr (kIncrease)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
  else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

template <Ab T>
__device__ __forceinline__ u32 pack2(float lo, float hi) {
  if constexpr (T == Ab::bf16) {
    return pack_bf16x2(lo, hi);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<u32*>(&v);
  }
}

template <Ab T>
__device__ __forceinline__ void to_frag_a(frag_a& a, const rt_c& lo, const rt_c& hi) {
  a.x[0] = pack2<T>(lo.x[0], lo.x[1]);
  a.x[1] = pack2<T>(lo.x[2], lo.x[3]);
  a.x[2] = pack2<T>(hi.x[0], hi.x[1]);
  a.x[3] = pack2<T>(hi.x[2], hi.x[3]);
}

// ---- the instructions (operand lists spelled once; the type is part of the opcode)
#define TILE_WG_ACC4(d, j) "+f"(d[j].x[0]), "+f"(d[j].x[1]), "+f"(d[j].x[2]), "+f"(d[j].x[3])
#define TILE_WG_ACC32(d)                                                                                     \
  TILE_WG_ACC4(d, 0), TILE_WG_ACC4(d, 1), TILE_WG_ACC4(d, 2), TILE_WG_ACC4(d, 3), TILE_WG_ACC4(d, 4), \
      TILE_WG_ACC4(d, 5), TILE_WG_ACC4(d, 6), TILE_WG_ACC4(d, 7)
#define TILE_WG_ACC64(d)                                                                                     \
  TILE_WG_ACC32(d), TILE_WG_ACC4(d, 8), TILE_WG_ACC4(d, 9), TILE_WG_ACC4(d, 10), TILE_WG_ACC4(d, 11),  \
      TILE_WG_ACC4(d, 12), TILE_WG_ACC4(d, 13), TILE_WG_ACC4(d, 14), TILE_WG_ACC4(d, 15)
#define TILE_WG_R24                                                                                       \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23}"
#define TILE_WG_R48                                                                                       \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
  "%40, %41, %42, %43, %44, %45, %46, %47}"
#define TILE_WG_ACC24(d) \
  TILE_WG_ACC4(d, 0), TILE_WG_ACC4(d, 1), TILE_WG_ACC4(d, 2), TILE_WG_ACC4(d, 3), TILE_WG_ACC4(d, 4), TILE_WG_ACC4(d, 5)
#define TILE_WG_R32                                                                                         \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define TILE_WG_R64                                                                                         \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "  \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "  \
  "%62, %63}"
#define TILE_WG_R96 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
  "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, " \
  "%59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, " \
  "%78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define TILE_WG_R128 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
  "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, " \
  "%59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, " \
  "%78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, " \
  "%97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, " \
  "%113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define TILE_WG_ACC96(d)                                                                                    \
  TILE_WG_ACC64(d), TILE_WG_ACC4(d, 16), TILE_WG_ACC4(d, 17), TILE_WG_ACC4(d, 18), TILE_WG_ACC4(d, 19), \
      TILE_WG_ACC4(d, 20), TILE_WG_ACC4(d, 21), TILE_WG_ACC4(d, 22), TILE_WG_ACC4(d, 23)
#define TILE_WG_ACC128(d)                                                                                   \
  TILE_WG_ACC96(d), TILE_WG_ACC4(d, 24), TILE_WG_ACC4(d, 25), TILE_WG_ACC4(d, 26), TILE_WG_ACC4(d, 27), \
      TILE_WG_ACC4(d, 28), TILE_WG_ACC4(d, 29), TILE_WG_ACC4(d, 30), TILE_WG_ACC4(d, 31)
#define TILE_WG_ACC48(d) \
  TILE_WG_ACC32(d), TILE_WG_ACC4(d, 8), TILE_WG_ACC4(d, 9), TILE_WG_ACC4(d, 10), TILE_WG_ACC4(d, 11)
// descriptors A, B at %24/%25 (n48), %48/%49 (n96), %32/%33 (n64), %64/%65 (n128), %96/%97 (n192) or %128/%129 (n256);
// then scale-d, trans-a, trans-b
#define TILE_WG_SS48(TY)                                                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\nwgmma.mma_async.sync.aligned.m64n48k16.f32." TY "." TY \
  " " TILE_WG_R24 ", %24, %25, p, 1, 1, %27, %28;\n}\n"
#define TILE_WG_SS96(TY)                                                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\nwgmma.mma_async.sync.aligned.m64n96k16.f32." TY "." TY \
  " " TILE_WG_R48 ", %48, %49, p, 1, 1, %51, %52;\n}\n"
#define TILE_WG_SS64(TY)                                                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY \
  " " TILE_WG_R32 ", %32, %33, p, 1, 1, %35, %36;\n}\n"
#define TILE_WG_SS128(TY)                                                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\nwgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY \
  " " TILE_WG_R64 ", %64, %65, p, 1, 1, %67, %68;\n}\n"
#define TILE_WG_SS192(TY)                                                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\nwgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY \
  " " TILE_WG_R96 ", %96, %97, p, 1, 1, %99, %100;\n}\n"
#define TILE_WG_SS256(TY)                                                                             \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\nwgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY \
  " " TILE_WG_R128 ", %128, %129, p, 1, 1, %131, %132;\n}\n"
// A registers at %32..%35 (n64) or %64..%67 (n128), B's descriptor, scale-d, trans-b
#define TILE_WG_RS64(TY)                                                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY \
  " " TILE_WG_R32 ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
#define TILE_WG_RS128(TY)                                                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\nwgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY \
  " " TILE_WG_R64 ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"

template <Ab T, int TA, int TB>
__device__ __forceinline__ void wgmma_ss(rt_c (&d)[8], u64 da, u64 db, int accumulate) {
#if TILE_WARPGROUP_WGMMA
  if constexpr (T == Ab::bf16)
    asm volatile(TILE_WG_SS64("bf16") : TILE_WG_ACC32(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
  else
    asm volatile(TILE_WG_SS64("f16") : TILE_WG_ACC32(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
#else
  (void)d, (void)da, (void)db, (void)accumulate;
  __trap();
#endif
}
template <Ab T, int TA, int TB>
__device__ __forceinline__ void wgmma_ss(rt_c (&d)[16], u64 da, u64 db, int accumulate) {
#if TILE_WARPGROUP_WGMMA
  if constexpr (T == Ab::bf16)
    asm volatile(TILE_WG_SS128("bf16") : TILE_WG_ACC64(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
  else
    asm volatile(TILE_WG_SS128("f16") : TILE_WG_ACC64(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
#else
  (void)d, (void)da, (void)db, (void)accumulate;
  __trap();
#endif
}
// The narrow products between (n48, n96), shared-memory operands only: tiles of 48 or 96
// columns, for shapes whose 64-multiple tiles leave SMs idle (gemm at M 128, N 6144: 128
// tiles of 64 x 96 for 132 SMs, against 96 of 64 x 128).
template <Ab T, int TA, int TB>
__device__ __forceinline__ void wgmma_ss(rt_c (&d)[6], u64 da, u64 db, int accumulate) {
#if TILE_WARPGROUP_WGMMA
  if constexpr (T == Ab::bf16)
    asm volatile(TILE_WG_SS48("bf16") : TILE_WG_ACC24(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
  else
    asm volatile(TILE_WG_SS48("f16") : TILE_WG_ACC24(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
#else
  (void)d, (void)da, (void)db, (void)accumulate;
  __trap();
#endif
}
template <Ab T, int TA, int TB>
__device__ __forceinline__ void wgmma_ss(rt_c (&d)[12], u64 da, u64 db, int accumulate) {
#if TILE_WARPGROUP_WGMMA
  if constexpr (T == Ab::bf16)
    asm volatile(TILE_WG_SS96("bf16") : TILE_WG_ACC48(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
  else
    asm volatile(TILE_WG_SS96("f16") : TILE_WG_ACC48(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
#else
  (void)d, (void)da, (void)db, (void)accumulate;
  __trap();
#endif
}
// The wide products (n192, n256), shared-memory operands only.
template <Ab T, int TA, int TB>
__device__ __forceinline__ void wgmma_ss(rt_c (&d)[24], u64 da, u64 db, int accumulate) {
#if TILE_WARPGROUP_WGMMA
  if constexpr (T == Ab::bf16)
    asm volatile(TILE_WG_SS192("bf16") : TILE_WG_ACC96(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
  else
    asm volatile(TILE_WG_SS192("f16") : TILE_WG_ACC96(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
#else
  (void)d, (void)da, (void)db, (void)accumulate;
  __trap();
#endif
}
template <Ab T, int TA, int TB>
__device__ __forceinline__ void wgmma_ss(rt_c (&d)[32], u64 da, u64 db, int accumulate) {
#if TILE_WARPGROUP_WGMMA
  if constexpr (T == Ab::bf16)
    asm volatile(TILE_WG_SS256("bf16") : TILE_WG_ACC128(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
  else
    asm volatile(TILE_WG_SS256("f16") : TILE_WG_ACC128(d) : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
#else
  (void)d, (void)da, (void)db, (void)accumulate;
  __trap();
#endif
}
template <Ab T, int TB>
__device__ __forceinline__ void wgmma_rs(rt_c (&d)[8], const frag_a& a, u64 db, int accumulate) {
#if TILE_WARPGROUP_WGMMA
  if constexpr (T == Ab::bf16)
    asm volatile(TILE_WG_RS64("bf16")
                 : TILE_WG_ACC32(d)
                 : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "l"(db), "r"(accumulate), "n"(TB));
  else
    asm volatile(TILE_WG_RS64("f16")
                 : TILE_WG_ACC32(d)
                 : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "l"(db), "r"(accumulate), "n"(TB));
#else
  (void)d, (void)a, (void)db, (void)accumulate;
  __trap();
#endif
}
template <Ab T, int TB>
__device__ __forceinline__ void wgmma_rs(rt_c (&d)[16], const frag_a& a, u64 db, int accumulate) {
#if TILE_WARPGROUP_WGMMA
  if constexpr (T == Ab::bf16)
    asm volatile(TILE_WG_RS128("bf16")
                 : TILE_WG_ACC64(d)
                 : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "l"(db), "r"(accumulate), "n"(TB));
  else
    asm volatile(TILE_WG_RS128("f16")
                 : TILE_WG_ACC64(d)
                 : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "l"(db), "r"(accumulate), "n"(TB));
#else
  (void)d, (void)a, (void)db, (void)accumulate;
  __trap();
#endif
}

#undef TILE_WG_SS48
#undef TILE_WG_SS96
#undef TILE_WG_SS64
#undef TILE_WG_SS128
#undef TILE_WG_SS192
#undef TILE_WG_SS256
#undef TILE_WG_RS64
#undef TILE_WG_RS128
#undef TILE_WG_R24
#undef TILE_WG_R48
#undef TILE_WG_R32
#undef TILE_WG_R64
#undef TILE_WG_R96
#undef TILE_WG_R128
#undef TILE_WG_ACC128
#undef TILE_WG_ACC96
#undef TILE_WG_ACC64
#undef TILE_WG_ACC48
#undef TILE_WG_ACC32
#undef TILE_WG_ACC24
#undef TILE_WG_ACC4

}  // namespace tile
