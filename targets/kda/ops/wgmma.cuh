// targets/kda/ops/wgmma.cuh — Hopper warpgroup matrix multiply (wgmma, sm_90a only) on shared tiles
// in the 128-byte-swizzled canonical layout.
//
// Layout ("sw128 tile", what wgmma's 128B-swizzle descriptors describe): a [rows][cols]
// tile of 16-bit elements is stored as cols/64 column blocks, each [rows][64] with
// 128-byte rows, 16-byte chunks XOR-swizzled by (row % 8) (tile::swz128); blocks are
// rows*128 bytes apart and the tile base is 1024-byte aligned. The same bytes serve as
// a K-major operand (rows = M or N, cols = K) and as an MN-major one (rows = K,
// cols = M or N), so one copy routine fills both.
//   sw128_off<ROWS>(r, c)      byte offset of element (r, c)
//   desc_kmajor(addr)          descriptor of a 64-row K-major operand block (K <= 64 per
//                              block: step k16 by adding 32 bytes, next K block at
//                              +ROWS*128)
//   desc_mnmajor(addr, lbo)    descriptor of an MN-major operand (64 MN columns per block,
//                              lbo = block stride; step k16 by adding 16 rows = 2048 bytes)
//   desc_kmajor64(addr)        the same for a [rows][32] tile with 64-byte rows, chunks
//                              swizzled by (row / 2) % 4 (sw_off<64> of tile/kda_f16.cuh),
//                              base 512-byte aligned: a K-major operand with K = 32 in half
//                              the bytes of a [rows][64] sw128 tile (step k16 by 32 bytes)
//   desc_add(d, bytes)         d with its start address advanced by bytes (a multiple of
//                              16; the address stays below 256 KB): one 32-bit add, so a
//                              loop's descriptors come from one built before it
//   wgmma_m64n64k16<TA, TB, ACC = 1>(d, da, db)
//                              d[8] += A(64x16) B(16x64) (ACC 0: d = A B, d's old values
//                              unread), fp16 in, fp32 accumulate; TA / TB 1 = MN-major.
//                              d[j] is the m16n8 accumulator fragment of rows
//                              16*(warp%4).., columns 8j.. (as frag_c of mma.sync).
//   wgmma_m64n64k16_rs<TB, ACC = 1>(d, a, db), wgmma_m64n128k16_rs (d[16]),
//   wgmma_m64n32k16_rs (d[4]), wgmma_m64nk16_rs (n32 or n64 by d's size)
//                              the same with A from registers (a[4]: this thread's
//                              share of the 64 x 16 A tile, see acc_to_a)
//   acc_to_a(a, lo, hi)        an accumulator's n8 blocks 2s, 2s+1 as the A fragment of
//                              k-slice s (fp16): one product's result feeds the next
//   wgmma_fence(), wgmma_commit(), wgmma_wait<N>()   the wgmma ordering instructions
//                              (accumulators untouched between issue and wait)
//   fence_async_shared()       orders this thread's ordinary shared-memory accesses
//                              (st.shared, ld.shared, cp.async) with the async proxy
//                              (wgmma operand reads, bulk copies); then a barrier.
// Every thread of a warpgroup (4 consecutive warps, the first a multiple of 4) calls
// the wgmma functions together. On targets without wgmma they trap.
#pragma once
#include "tile/base.cuh"
#include "kda_f16.cuh"
#include "kda_tf32.cuh"

namespace kda {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TILE_HAS_WGMMA 1
#else
#define TILE_HAS_WGMMA 0
#endif

template <int ROWS>
__device__ __forceinline__ u32 sw128_off(int r, int c) {
  return (u32)(c >> 6) * (ROWS * 128) + tile::swz128((u32)r * 128 + (u32)(c & 63) * 2);
}

// mode: the descriptor's swizzle field (bits 62-63): 1 = 128-byte, 2 = 64-byte swizzle.
__device__ __forceinline__ unsigned long long desc_swz(u32 addr, u32 lbo, u32 sbo, unsigned mode) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32) | ((unsigned long long)mode << 62);
}
__device__ __forceinline__ unsigned long long desc_sw128(u32 addr, u32 lbo, u32 sbo) { return desc_swz(addr, lbo, sbo, 1); }
__device__ __forceinline__ unsigned long long desc_kmajor(u32 addr) { return desc_sw128(addr, 16, 1024); }
// 8 rows of 64 bytes between core-matrix groups along M/N
__device__ __forceinline__ unsigned long long desc_kmajor64(u32 addr) { return desc_swz(addr, 16, 512, 2); }
__device__ __forceinline__ unsigned long long desc_mnmajor(u32 addr, u32 lbo) { return desc_sw128(addr, lbo, 1024); }

// (The start address field is bits 0-13, (addr >> 4) of an 18-bit shared address: adding
// bytes >> 4 to the low word cannot carry into the other fields while addr + bytes < 2^18.)
__device__ __forceinline__ unsigned long long desc_add(unsigned long long d, u32 bytes) {
  return (d & 0xffffffff00000000ull) | (u32)((u32)d + (bytes >> 4));
}

__device__ __forceinline__ void wgmma_fence() {
#if TILE_HAS_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if TILE_HAS_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if TILE_HAS_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
__device__ __forceinline__ void fence_async_shared() {
#if TILE_HAS_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

template <int TA, int TB, int ACC = 1>
__device__ __forceinline__ void wgmma_m64n64k16(frag_c (&d)[8], unsigned long long da, unsigned long long db) {
#if TILE_HAS_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %36, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, %34, %35;\n}\n"
      : "+f"(d[0].x[0]), "+f"(d[0].x[1]), "+f"(d[0].x[2]), "+f"(d[0].x[3]),
        "+f"(d[1].x[0]), "+f"(d[1].x[1]), "+f"(d[1].x[2]), "+f"(d[1].x[3]),
        "+f"(d[2].x[0]), "+f"(d[2].x[1]), "+f"(d[2].x[2]), "+f"(d[2].x[3]),
        "+f"(d[3].x[0]), "+f"(d[3].x[1]), "+f"(d[3].x[2]), "+f"(d[3].x[3]),
        "+f"(d[4].x[0]), "+f"(d[4].x[1]), "+f"(d[4].x[2]), "+f"(d[4].x[3]),
        "+f"(d[5].x[0]), "+f"(d[5].x[1]), "+f"(d[5].x[2]), "+f"(d[5].x[3]),
        "+f"(d[6].x[0]), "+f"(d[6].x[1]), "+f"(d[6].x[2]), "+f"(d[6].x[3]),
        "+f"(d[7].x[0]), "+f"(d[7].x[1]), "+f"(d[7].x[2]), "+f"(d[7].x[3])
      : "l"(da), "l"(db), "n"(TA), "n"(TB), "n"(ACC));
#else
  (void)d;
  (void)da;
  (void)db;
  __trap();
#endif
}


// Register-A forms (A from registers, B by descriptor; TB 1: B MN-major). a is this thread's
// share of the m64 x k16 f16 A tile, laid out per warp (rows 16w..16w+15 of warp w of the
// warpgroup) as mma.m16n8k16's A fragment: a[0] (row g, k 2t, 2t+1), a[1] (row g + 8),
// a[2] (row g, k 2t+8, 2t+9), a[3] (row g + 8, k 2t+8..). An m64 accumulator's n8 blocks 2s
// and 2s + 1, packed to f16 pairs (acc_to_a), are exactly the A fragment of k-slice s: a
// product's result feeds the next product from registers.
__device__ __forceinline__ void acc_to_a(u32 (&a)[4], const frag_c& lo, const frag_c& hi) {
  a[0] = pack_f16x2(lo.x[0], lo.x[1]);
  a[1] = pack_f16x2(lo.x[2], lo.x[3]);
  a[2] = pack_f16x2(hi.x[0], hi.x[1]);
  a[3] = pack_f16x2(hi.x[2], hi.x[3]);
}
template <int TB, int ACC = 1>
__device__ __forceinline__ void wgmma_m64n64k16_rs(frag_c (&d)[8], const u32 (&a)[4], unsigned long long db) {
#if TILE_HAS_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %39, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, %37;\n}\n"
      : "+f"(d[0].x[0]), "+f"(d[0].x[1]), "+f"(d[0].x[2]), "+f"(d[0].x[3]),
        "+f"(d[1].x[0]), "+f"(d[1].x[1]), "+f"(d[1].x[2]), "+f"(d[1].x[3]),
        "+f"(d[2].x[0]), "+f"(d[2].x[1]), "+f"(d[2].x[2]), "+f"(d[2].x[3]),
        "+f"(d[3].x[0]), "+f"(d[3].x[1]), "+f"(d[3].x[2]), "+f"(d[3].x[3]),
        "+f"(d[4].x[0]), "+f"(d[4].x[1]), "+f"(d[4].x[2]), "+f"(d[4].x[3]),
        "+f"(d[5].x[0]), "+f"(d[5].x[1]), "+f"(d[5].x[2]), "+f"(d[5].x[3]),
        "+f"(d[6].x[0]), "+f"(d[6].x[1]), "+f"(d[6].x[2]), "+f"(d[6].x[3]),
        "+f"(d[7].x[0]), "+f"(d[7].x[1]), "+f"(d[7].x[2]), "+f"(d[7].x[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(TB), "n"(0), "n"(ACC));
#else
  (void)d;
  (void)a;
  (void)db;
  __trap();
#endif
}
template <int TB, int ACC = 1>
__device__ __forceinline__ void wgmma_m64n32k16_rs(frag_c (&d)[4], const u32 (&a)[4], unsigned long long db) {
#if TILE_HAS_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %23, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, %21;\n}\n"
      : "+f"(d[0].x[0]), "+f"(d[0].x[1]), "+f"(d[0].x[2]), "+f"(d[0].x[3]),
        "+f"(d[1].x[0]), "+f"(d[1].x[1]), "+f"(d[1].x[2]), "+f"(d[1].x[3]),
        "+f"(d[2].x[0]), "+f"(d[2].x[1]), "+f"(d[2].x[2]), "+f"(d[2].x[3]),
        "+f"(d[3].x[0]), "+f"(d[3].x[1]), "+f"(d[3].x[2]), "+f"(d[3].x[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(TB), "n"(0), "n"(ACC));
#else
  (void)d;
  (void)a;
  (void)db;
  __trap();
#endif
}
// m64 x n(8N) by the fragment count: N = 8 -> m64n64k16_rs, N = 4 -> m64n32k16_rs.
template <int TB, int ACC = 1, int N>
__device__ __forceinline__ void wgmma_m64nk16_rs(frag_c (&d)[N], const u32 (&a)[4], unsigned long long db) {
  static_assert(N == 4 || N == 8, "wgmma_m64nk16_rs: n32 or n64");
  if constexpr (N == 8) wgmma_m64n64k16_rs<TB, ACC>(d, a, db);
  else wgmma_m64n32k16_rs<TB, ACC>(d, a, db);
}
template <int TB, int ACC = 1>
__device__ __forceinline__ void wgmma_m64n128k16_rs(frag_c (&d)[16], const u32 (&a)[4], unsigned long long db) {
#if TILE_HAS_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %71, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, %69;\n}\n"
      : "+f"(d[0].x[0]), "+f"(d[0].x[1]), "+f"(d[0].x[2]), "+f"(d[0].x[3]),
        "+f"(d[1].x[0]), "+f"(d[1].x[1]), "+f"(d[1].x[2]), "+f"(d[1].x[3]),
        "+f"(d[2].x[0]), "+f"(d[2].x[1]), "+f"(d[2].x[2]), "+f"(d[2].x[3]),
        "+f"(d[3].x[0]), "+f"(d[3].x[1]), "+f"(d[3].x[2]), "+f"(d[3].x[3]),
        "+f"(d[4].x[0]), "+f"(d[4].x[1]), "+f"(d[4].x[2]), "+f"(d[4].x[3]),
        "+f"(d[5].x[0]), "+f"(d[5].x[1]), "+f"(d[5].x[2]), "+f"(d[5].x[3]),
        "+f"(d[6].x[0]), "+f"(d[6].x[1]), "+f"(d[6].x[2]), "+f"(d[6].x[3]),
        "+f"(d[7].x[0]), "+f"(d[7].x[1]), "+f"(d[7].x[2]), "+f"(d[7].x[3]),
        "+f"(d[8].x[0]), "+f"(d[8].x[1]), "+f"(d[8].x[2]), "+f"(d[8].x[3]),
        "+f"(d[9].x[0]), "+f"(d[9].x[1]), "+f"(d[9].x[2]), "+f"(d[9].x[3]),
        "+f"(d[10].x[0]), "+f"(d[10].x[1]), "+f"(d[10].x[2]), "+f"(d[10].x[3]),
        "+f"(d[11].x[0]), "+f"(d[11].x[1]), "+f"(d[11].x[2]), "+f"(d[11].x[3]),
        "+f"(d[12].x[0]), "+f"(d[12].x[1]), "+f"(d[12].x[2]), "+f"(d[12].x[3]),
        "+f"(d[13].x[0]), "+f"(d[13].x[1]), "+f"(d[13].x[2]), "+f"(d[13].x[3]),
        "+f"(d[14].x[0]), "+f"(d[14].x[1]), "+f"(d[14].x[2]), "+f"(d[14].x[3]),
        "+f"(d[15].x[0]), "+f"(d[15].x[1]), "+f"(d[15].x[2]), "+f"(d[15].x[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(TB), "n"(0), "n"(ACC));
#else
  (void)d;
  (void)a;
  (void)db;
  __trap();
#endif
}

}  // namespace kda
