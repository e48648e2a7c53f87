// tile/bulk_copy.cuh — bulk copies global -> shared (cp.async.bulk, sm_90+) whose
// completion is counted in bytes on a shared-memory mbarrier, and shared -> global
// whose completion is counted in bulk groups.
//
// One thread of the block issues: mbar_expect_tx(mbar, total bytes), then the copies
// (each: 16-byte aligned addresses, a multiple of 16 bytes). Every thread that reads
// the destination waits with mbar_wait(mbar, parity), parity being the barrier's phase
// (0 for its first use, then alternating). The copies are async-proxy writes: before
// re-filling a buffer that threads wrote or read with ordinary instructions, those
// threads run fence.proxy.async (tile::fence_async_shared in tile/warpgroup.cuh) and a
// barrier.
//   mbar_init(mbar, count)      once, by one thread, then a barrier
//   mbar_expect_tx(mbar, bytes) arrive and add bytes to the phase's expected count
//   bulk_g2s(dst, src, bytes, mbar)
//   mbar_wait(mbar, parity)
// Stores: the threads that wrote the source with ordinary instructions run
// fence.proxy.async (kda::fence_async_shared) and a barrier; then one thread issues
//   bulk_s2g(dst, src, bytes)   (16-byte aligned, a multiple of 16 bytes)
//   bulk_commit()               closes the group of copies issued so far
//   bulk_wait_read<N>()         until at most N groups still read shared memory (the
//                               source may be overwritten, or the block may exit, at 0)
#pragma once
#include "base.cuh"

namespace tile {

__device__ __forceinline__ void mbar_init(u32 mbar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(mbar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u32 mbar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(mbar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_g2s(u32 dst, const void* src, u32 bytes, u32 mbar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(mbar)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 mbar, u32 parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "TILE_MBAR_WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra TILE_MBAR_WAIT_%=;\n}\n" ::"r"(mbar),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void bulk_s2g(void* dst, u32 src, u32 bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

}  // namespace tile
