// tile/cluster.cuh — tessera tile library: thread-block clusters (sm_90+). A kernel declared
// with __cluster_dims__(X, 1, 1) runs its blocks in groups of X that share their shared
// memory (blocks blockIdx.x = X c .. X c + X - 1 form cluster c); the pieces here let a
// producer load one box into every block of the cluster at once and the blocks' consumers
// release a ring stage to every producer that writes it.
//
//   cluster_rank()                     this block's rank in its cluster (%cluster_ctarank)
//   cluster_sync()                     all threads of every block of the cluster: after it,
//                                      what each did before (mbarrier inits included, with
//                                      fence_mbarrier_init) is visible to the others
//   fence_mbarrier_init()              after mbar_init, before the cluster_sync that
//                                      publishes the barriers to the other blocks
//   mbar_arrive_remote(mbar, rank)     arrive on the barrier at the same shared-memory
//                                      offset as mbar in block `rank` of the cluster (release
//                                      at cluster scope: this thread's earlier reads of the
//                                      stage are done before the arrival is seen)
//   tma_load_2d_multicast(dst, m, c0, c1, mbar, mask)
//                                      tma_load_2d (tile/tma.cuh) into dst of every block
//                                      whose rank's bit is set in mask, each completing the
//                                      box's bytes on its own barrier at mbar's offset
// A block must not exit while another block of its cluster may still write its shared
// memory or arrive on its barriers: the producer of a ring fed by multicast waits for the
// last release of every stage before it returns (the ring's "tail").
#pragma once
#include "base.cuh"
#include "tma.cuh"

namespace tile {

__device__ __forceinline__ u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_remote(u32 mbar, u32 rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(mbar),
      "r"(rank)
      : "memory");
}

__device__ __forceinline__ void tma_load_2d_multicast(u32 dst, const tmap* m, int c0, int c1, u32 mbar,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(m)), "r"(c0), "r"(c1), "r"(mbar), "h"(mask)
      : "memory");
}

}  // namespace tile
