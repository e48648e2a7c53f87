// tile/cp_async.cuh — tessera tile library: asynchronous global->shared copies (sm_80+).
//
//   cp_async16(dst_smem_addr, src, src_bytes)  16-byte copy; bytes past src_bytes are
//                                              zero-filled (src_bytes = 0: all zeros,
//                                              src must still be a valid address).
//   cp_async_commit()                          close the current group of copies.
//   cp_async_wait<N>()                         wait until at most N groups are pending.
// Copies use .cg (bypass L1, cache in L2): right for streamed GEMM/attention tiles.
#pragma once
#include "base.cuh"

namespace tile {

__device__ __forceinline__ void cp_async16(u32 dst, const void* src, u32 src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace tile
