// tile/base.cuh — tessera tile library: basic types and shared-memory addressing.
//
// Vocabulary used across targets/common/tile/*.cuh (ThunderKittens-like, but small):
//   * shared tiles  (st_*)  — a pointer into shared memory plus a fixed layout;
//   * register tiles (rt_*) — per-warp fragments in the layouts the tensor cores use;
//   * operations on whole tiles, destination first: load(dst, src, ...), mma(d, a, b).
// Everything is header-only, NVRTC-safe (no standard library), in namespace `tile`.
//
// This header: u32 alias, generic->shared address conversion, L2 cache policies, and the 128-byte XOR
// swizzle used by the shared tiles (16-byte chunk index, bits 4..6 of the byte offset,
// XORed with the 128-byte line index mod 8, bits 7..9). With rows of 64 or 128 bytes
// it makes both 16-byte cp.async stores and ldmatrix row reads bank-conflict free.
#pragma once
#include <cuda_bf16.h>

namespace tile {

typedef unsigned int u32;

// Shared-memory (32-bit) address of a generic pointer into shared memory.
__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// An L2 cache policy (createpolicy.fractional over all of an access's lines), the operand of
// loads and copies with .L2::cache_hint (tma_load_2d's policy, tile/tma.cuh): L2::first for
// data read once (its lines become the next victims, so a stream of them evicts its own lines,
// not what L2 held before), L2::last for data read again. (Not volatile: a loop's policies are
// one instruction, hoisted.)
enum class L2 { first, last };
template <L2 P>
__device__ __forceinline__ unsigned long long l2_policy() {
  unsigned long long p;
  if constexpr (P == L2::first)
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  else
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

// 128-byte swizzle of a byte offset (relative to a 1024-byte-aligned tile base).
__device__ __forceinline__ u32 swz128(u32 byte_off) {
  return byte_off ^ (((byte_off >> 7) & 7u) << 4);
}

// Bytes of dynamic shared memory this launch was given. A kernel whose layout needs
// more than its spec's launch provides can refuse to run (__trap) instead of
// reading and writing past the allocation.
__device__ __forceinline__ u32 dynamic_smem_bytes() {
  u32 r;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}

// Pack two floats into a bf16x2 register (lo in the low half).
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<u32*>(&v);
}

}  // namespace tile
