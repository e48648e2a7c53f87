// tile/pipeline.cuh — tessera tile library: a ring of shared-memory buffers between a
// producer (one thread issuing TMA or bulk copies) and consumer threads, each buffer
// guarded by two mbarriers: "full" (completes when the copies' bytes have landed) and
// "empty" (completes when every consumer thread has arrived: the buffer may be refilled).
//
//   Ring<NSTAGE> r{barrier base}    2*NSTAGE 8-byte mbarriers at base (8-byte aligned)
//   r.init(consumer_threads)        one thread, then a barrier among all users
//   RingPos pos                     the buffer (stage) and phase parity of the n-th use;
//                                   pos.next<NSTAGE>() moves to use n + 1
//   producer:  r.acquire(pos)       wait until the consumers released the buffer's
//                                   previous use (returns at once on the first pass)
//              r.expect(pos, bytes) the full barrier's phase expects bytes more; then
//                                   issue copies completing on r.full(pos.stage)
//   consumers: r.wait(pos)          until the buffer's bytes have landed
//              r.release(pos)       every consumer thread arrives on empty, once per use,
//                                   after its reads of the buffer are complete (for wgmma
//                                   operands: after wgmma_wait)
// A consumer that skips a use still waits and releases it: an arrival for use n + NSTAGE
// before use n completed would be counted towards use n.
#pragma once
#include "base.cuh"
#include "bulk_copy.cuh"

namespace tile {

__device__ __forceinline__ void mbar_arrive(u32 mbar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(mbar) : "memory");
}

struct RingPos {
  int stage = 0;
  u32 phase = 0;
  template <int NSTAGE>
  __device__ __forceinline__ void next() {
    if (++stage == NSTAGE) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

template <int NSTAGE>
struct Ring {
  u32 base;  // full barriers at base + 8 s, empty barriers at base + 8 (NSTAGE + s)
  __device__ __forceinline__ u32 full(int s) const { return base + 8u * (u32)s; }
  __device__ __forceinline__ u32 empty(int s) const { return base + 8u * (u32)(NSTAGE + s); }
  __device__ __forceinline__ void init(u32 consumer_threads) const {
    for (int s = 0; s < NSTAGE; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), consumer_threads);
    }
  }
  __device__ __forceinline__ void acquire(const RingPos& p) const { mbar_wait(empty(p.stage), p.phase ^ 1u); }
  __device__ __forceinline__ void expect(const RingPos& p, u32 bytes) const { mbar_expect_tx(full(p.stage), bytes); }
  __device__ __forceinline__ void wait(const RingPos& p) const { mbar_wait(full(p.stage), p.phase); }
  __device__ __forceinline__ void release(const RingPos& p) const { mbar_arrive(empty(p.stage)); }
};

}  // namespace tile
