// tile/tma.cuh — tessera tile library: TMA tensor copies global -> shared (sm_90+), the
// box of a tensor map landing in shared memory with one instruction, its completion
// counted in bytes on an mbarrier (as bulk copies, tile/bulk_copy.cuh).
//
// The tensor map is built by the host: a launch argument "tmap:NAME:B0xB1x..:SW" of the
// spec (docs/spec-format.md) is a CUtensorMap over tensor NAME (its dimensions NAME's
// shape, innermost first), passed by value. The kernel declares it as
//   const __grid_constant__ tile::tmap m        (never copied: its address is used)
// and one thread issues, after mbar_expect_tx(mbar, box bytes ...),
//   tma_prefetch_desc(&m)                       (optional, early: the descriptor cached)
//   tma_load_3d(dst, &m, c0, c1, c2, mbar)      the box at coordinates (c0, c1, c2),
//                                               innermost first, into dst (16-byte
//                                               aligned; 1024 with the 128-byte swizzle)
//   tma_load_2d(dst, &m, c0, c1, mbar[, policy])  likewise in 2d; with a policy
//                                               (tile::l2_policy, base.cuh) the box's lines
//                                               take its L2 eviction priority (.L2::cache_hint)
// Box elements outside the tensor arrive as zeros (and count towards the bytes). With
// swizzle SW = 128 the box's rows (B0 elements, 128 bytes) are stored 128-byte swizzled
// (tile::swz128 of the offset from a 1024-byte-aligned dst): element (r, c) of a
// [rows][64] bf16 box at swz128(r * 128 + c * 2), the layout of kda::sw128_off.
#pragma once
#include "base.cuh"

namespace tile {

struct alignas(64) tmap {
  unsigned long long opaque[16];  // the driver's CUtensorMap (128 bytes)
};

// Brings a tensor map into the descriptor cache ahead of its first copy (one thread).
__device__ __forceinline__ void tma_prefetch_desc(const tmap* m) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(m)) : "memory");
}

__device__ __forceinline__ void tma_load_3d(u32 dst, const tmap* m, int c0, int c1, int c2, u32 mbar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(m)), "r"(c0), "r"(c1), "r"(c2), "r"(mbar)
      : "memory");
}

__device__ __forceinline__ void tma_load_2d(u32 dst, const tmap* m, int c0, int c1, u32 mbar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<unsigned long long>(m)), "r"(c0), "r"(c1), "r"(mbar)
      : "memory");
}

__device__ __forceinline__ void tma_load_2d(u32 dst, const tmap* m, int c0, int c1, u32 mbar,
                                            unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, "
      "{%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(m)), "r"(c0), "r"(c1), "r"(mbar), "l"(policy)
      : "memory");
}

}  // namespace tile
