// targets/kda/ops/kda_tf32.cuh — warp-level tf32 tensor-core fragments on fp32 shared memory,
// written for kda (targets/kda/kernels/) where fp32 intermediates must keep
// ~1e-4 precision (bf16 operands alone cost ~0.2-0.4% error, the whole budget).
//
// One mma.sync.m16n8k8 tf32 (fp32 accumulate) per call. Fragments are loaded from
// plain row-major fp32 shared arrays with a leading dimension `ld` (in floats) and
// converted with cvt.rna. For conflict-free loads choose:
//   load_a_rm / load_b_nm (element (m|n, k) at p[m*ld + k])   ld % 32 == 4
//   load_a_cm / load_b_km (element (k, m|n) at p[k*ld + m])   ld % 32 == 8
// Each loader takes <kRound>: true converts with cvt.rna; false passes the fp32 bits
// unchanged (the tensor core then ignores the low 13 mantissa bits: truncation),
// for operands already rounded to tf32 when they were stored, or where the
// truncation error is acceptable (saves one instruction per element).
// Lane layout (PTX ISA, m16n8k8 .tf32): g = lane/4, t = lane%4;
//   A: a0 (g, t) a1 (g+8, t) a2 (g, t+4) a3 (g+8, t+4)      [row, k]
//   B: b0 (k=t, n=g) b1 (k=t+4, n=g)
//   C: c0 (g, 2t) c1 (g, 2t+1) c2 (g+8, 2t) c3 (g+8, 2t+1)
// Also here: 16-byte cp.async (global -> shared, L2-only) with commit/wait, used by
// the kda state kernel to prefetch the next phase's chunk operands.
// What does not live here: bf16 fragments (tile/mma.cuh), shared-tile swizzles.
#pragma once

namespace kda {

typedef unsigned int u32;

struct frag_a { u32 x[4]; };
struct frag_b { u32 x[2]; };
struct frag_c { float x[4]; };

__device__ __forceinline__ u32 to_tf32(float f) {
  u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(f));
  return r;
}

template <bool kRound>
__device__ __forceinline__ u32 tf32_bits(float f) {
  if constexpr (kRound) return to_tf32(f);
  else return __float_as_uint(f);
}
// fp32 -> tf32 operand bits, rounded to nearest with ties away from zero like
// to_tf32, in one integer add instead of cvt's compare and add: the tensor core ignores
// the low 13 bits, so adding half a tf32 ulp (0x1000) to the bits rounds the value the
// mma sees. For finite |f| < 2^127 only (no NaN/Inf/overflow handling); the low 13
// bits of the result are not cleared (not a tf32 value to store, see round_tf32).
__device__ __forceinline__ u32 to_tf32_fast(float f) { return __float_as_uint(f) + 0x1000u; }
// fp32 -> the nearest tf32 value, as a float (for storing pre-rounded operands).
__device__ __forceinline__ float round_tf32(float f) { return __uint_as_float(to_tf32(f)); }

__device__ __forceinline__ void zero(frag_c& c) { c.x[0] = c.x[1] = c.x[2] = c.x[3] = 0.f; }

// d += a * b
__device__ __forceinline__ void mma(frag_c& d, const frag_a& a, const frag_b& b) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
      : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]));
}

__device__ __forceinline__ int lane_g() { return (threadIdx.x & 31) >> 2; }
__device__ __forceinline__ int lane_t() { return threadIdx.x & 3; }

// A(m, k) = p[m*ld + k], tile at (m0, k0).
template <bool kRound = true>
__device__ __forceinline__ void load_a_rm(frag_a& a, const float* p, int ld, int m0, int k0) {
  const int g = lane_g(), t = lane_t();
  const float* r0 = p + (m0 + g) * ld + k0 + t;
  const float* r1 = r0 + 8 * ld;
  a.x[0] = tf32_bits<kRound>(r0[0]);
  a.x[1] = tf32_bits<kRound>(r1[0]);
  a.x[2] = tf32_bits<kRound>(r0[4]);
  a.x[3] = tf32_bits<kRound>(r1[4]);
}
// A(m, k) = p[k*ld + m].
template <bool kRound = true>
__device__ __forceinline__ void load_a_cm(frag_a& a, const float* p, int ld, int m0, int k0) {
  const int g = lane_g(), t = lane_t();
  const float* c0 = p + (k0 + t) * ld + m0 + g;
  const float* c1 = c0 + 4 * ld;
  a.x[0] = tf32_bits<kRound>(c0[0]);
  a.x[1] = tf32_bits<kRound>(c0[8]);
  a.x[2] = tf32_bits<kRound>(c1[0]);
  a.x[3] = tf32_bits<kRound>(c1[8]);
}
// B(k, n) = p[k*ld + n].
template <bool kRound = true>
__device__ __forceinline__ void load_b_km(frag_b& b, const float* p, int ld, int k0, int n0) {
  const int g = lane_g(), t = lane_t();
  b.x[0] = tf32_bits<kRound>(p[(k0 + t) * ld + n0 + g]);
  b.x[1] = tf32_bits<kRound>(p[(k0 + t + 4) * ld + n0 + g]);
}
// B(k, n) = p[n*ld + k].
template <bool kRound = true>
__device__ __forceinline__ void load_b_nm(frag_b& b, const float* p, int ld, int k0, int n0) {
  const int g = lane_g(), t = lane_t();
  b.x[0] = tf32_bits<kRound>(p[(n0 + g) * ld + k0 + t]);
  b.x[1] = tf32_bits<kRound>(p[(n0 + g) * ld + k0 + t + 4]);
}

// acc[j] += A(m0..m0+15, 0..K-1) B(0..K-1, n0+8j .. n0+8j+7) for j < N: one warp's
// 16 x 8N strip of a product, A row-major (as load_a_rm) and B k-major (as
// load_b_km) in shared memory, K a multiple of 8, kUnroll k-steps unrolled.
// The accumulators are not cleared first.
template <int K, int N, int kUnroll, bool kRound = true>
__device__ __forceinline__ void mma_strip_rm_km(frag_c (&acc)[N], const float* A, int lda, int m0, const float* B,
                                                int ldb, int n0) {
#pragma unroll kUnroll
  for (int ks = 0; ks < K / 8; ++ks) {
    frag_a a;
    load_a_rm<kRound>(a, A, lda, m0, ks * 8);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      frag_b b;
      load_b_km<kRound>(b, B, ldb, ks * 8, n0 + j * 8);
      mma(acc[j], a, b);
    }
  }
}

// 16-byte asynchronous copy global -> shared (both 16-byte aligned).
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src) {
  const u32 d = static_cast<u32>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(gmem_src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

}  // namespace kda
