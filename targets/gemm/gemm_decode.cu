// gemm_decode.cu — tessera gemm template `decode`: the product at decode widths (M up to a
// few dozen rows), where the time is the reading of the weights b[N,K] and nothing else.
//
// C[M,N] (row-major) = A[M,K] (row-major) · b[N,K]ᵀ, fp32 accumulation, bf16 (or fp16 with
// F16 1) in and out; any M, N, K >= 1. One kernel, no scratch, no second launch.
//
// Why a template of its own (issue 33): the wgmma template streams the weights through
// shared memory in 64-row tiles, splits k over blocks and adds the splits in a second
// kernel; at M 1 that is a 64x larger product than needed, a ring of stages to fill, and a
// reduce step (ncu, m1_qkv: 3.8 of 21.8 us). Here every weight byte goes from DRAM into
// registers once, by 16-byte loads, and into mma.sync m16n8k16 as its B fragment:
//
// - Block: WARPS warps on the same 8·NJ columns of C and the same 16·MT rows, each warp a
//   share of the k-slabs (32 wide): warp w takes slabs w, w + WARPS, ..., UNROLL of them in
//   flight at once (the block reads 64·UNROLL·WARPS contiguous bytes of each of its rows a
//   round). The warps' sums are added through shared memory at the end and stored as C.
// - The k order inside a slab is permuted so that one 16-byte load is a whole B fragment
//   for two k16 steps: lane (g, t) = (lane / 4, lane % 4) loads b[n0 + 8j + g][32s + 8t ..
//   + 7]; step h (0, 1) takes its registers 2h and 2h + 1, i.e. logical k 2t + i -> physical
//   8t + 4h + i and 2t + 8 + i -> 8t + 4h + 2 + i (i = 0, 1), a bijection of the slab's 32.
//   A's fragments follow the same map: A[row][32s + 8t .. + 7] for rows g and g + 8 of each
//   m16 tile are two 16-byte loads, registers (x, y) for step 0 and (z, w) for step 1.
// - The weights are read once: `ld.global.nc.L1::no_allocate` (PF 1 adds the .L2::256B
//   prefetch hint); A is re-read by every block from L2 and goes through L1.
// - Grid cdiv(M, 16·MT)·cdiv(N, 8·NJ), row blocks fastest: a column block's row blocks are
//   neighbours in launch order, so at M > 16·MT they share its weights in L2. At large M this template
//   reads the weights once per 16·MT rows and is slow; the wgmma template is for that.
// - Rows past M and columns past N are not loaded (zeros); with K % 8 == 0 and 16-byte
//   aligned a and b every chunk of 8 is whole or wholly past K, otherwise (kVec false) each
//   element is loaded on its own with its bounds check.
//
// Parameters (#defined by tessera): NJ (n8 tiles: 8·NJ columns a block), WARPS (warps a
// block, each a share of k), MT (m16 tiles: 16·MT rows a block), UNROLL (slabs in flight a
// warp), PF (L2 prefetch hint on the weights' loads), OCC (blocks a SM the registers are
// bounded for: __launch_bounds__(32·WARPS, OCC·8/WARPS)), F16 (0: bf16; 1: fp16 kernels,
// `gemm_decode_f16`). The constraints keep a warp's fragments in flight, UNROLL·(NJ + 2·MT)
// 16-byte loads, at most 24 (at OCC 2, 128 registers a thread, 16 with one m16 tile and 12
// with more: beyond, ptxas spills).
// Shared memory: WARPS·16·MT·(8·NJ + 8)·4 bytes (each warp's sums, rows padded by 8 floats).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "tile/mma.cuh"

#ifndef F16
#define F16 0
#endif
#ifndef PF
#define PF 0
#endif
#ifndef OCC
#define OCC 1
#endif

namespace gemm_decode_impl {

using tile::u32;
constexpr int kWarps = WARPS;
constexpr int kThreads = 32 * WARPS;
constexpr int kNJ = NJ;
constexpr int kMT = MT;
constexpr int kU = UNROLL;
constexpr int kBN = 8 * NJ;        // columns a block
constexpr int kBM = 16 * MT;       // rows a block
constexpr int kLd = kBN + 8;       // a row of the sums in shared memory (floats)
// The dynamic shared memory the sums take (tests/core/templates_test checks spec.json's launch
// gives at least this).
#define TESSERA_SMEM_gemm_decode (WARPS * 16 * MT * (8 * NJ + 8) * 4)
static_assert(TESSERA_SMEM_gemm_decode == kWarps * kBM * kLd * 4, "the sums' layout");
constexpr int kMinBlocks = OCC * 8 / WARPS;
static_assert(NJ >= 1 && MT >= 1 && UNROLL >= 1, "NJ, MT, UNROLL");
static_assert(WARPS == 4 || WARPS == 8, "WARPS");
static_assert(OCC == 1 || OCC == 2, "OCC");

using elem = tile::MmaElemOf<(F16 != 0)>::T;  // this module's element type
using E = tile::MmaElem<elem>;                   // its product and C's rounding

// 16 bytes of the weights, read once: not kept in L1 (PF 1: L2 fetches the 256 bytes around).
__device__ __forceinline__ uint4 ld_weights(const elem* p) {
  uint4 v;
  if constexpr (PF != 0)
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  else
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  return v;
}

// 8 elements row[k0 .. k0 + 7] as 16 bytes, zeros where !ok or past K: one load where the
// chunk is whole and aligned (kVec; kInK: known to lie inside K, else checked), or one element
// at a time, each checked.
template <bool kVec, bool kInK, bool kWeights>
__device__ __forceinline__ uint4 ld_chunk(const elem* row, int k0, int K, bool ok) {
  if constexpr (kVec) {
    if (!ok || (!kInK && k0 >= K)) return make_uint4(0u, 0u, 0u, 0u);
    if constexpr (kWeights) return ld_weights(row + k0);
    else return __ldg(reinterpret_cast<const uint4*>(row + k0));
  } else {
    unsigned short e[8];
    const unsigned short* r = reinterpret_cast<const unsigned short*>(row);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = ok && k0 + i < K ? r[k0 + i] : (unsigned short)0;
    return make_uint4(e[0] | (u32)e[1] << 16, e[2] | (u32)e[3] << 16, e[4] | (u32)e[5] << 16, e[6] | (u32)e[7] << 16);
  }
}

// One k-slab's fragments for a lane: b[j] its 16 bytes of column block j's row, a[mt][0 / 1]
// those of rows g and g + 8 of m16 tile mt.
struct Slab {
  uint4 b[kNJ];
  uint4 a[kMT][2];
};

// The lane's rows: pointers to their starts and whether they exist (rows past M or N are
// never read).
struct Rows {
  const elem* b[kNJ];
  bool bok[kNJ];
  const elem* a[kMT][2];
  bool aok[kMT][2];
};

__device__ __forceinline__ Rows lane_rows(const elem* a, const elem* b, long long M, long long N, long long K,
                                          long long m0, long long n0, int g) {
  Rows r;
#pragma unroll
  for (int j = 0; j < kNJ; ++j) {
    const long long n = n0 + 8 * j + g;
    r.bok[j] = n < N;
    r.b[j] = b + (r.bok[j] ? n : 0) * K;
  }
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long m = m0 + 16 * mt + 8 * h + g;
      r.aok[mt][h] = m < M;
      r.a[mt][h] = a + (r.aok[mt][h] ? m : 0) * K;
    }
  return r;
}

template <bool kVec, bool kInK>
__device__ __forceinline__ void load_slab(Slab& s, const Rows& r, int k0, int K) {
#pragma unroll
  for (int j = 0; j < kNJ; ++j) s.b[j] = ld_chunk<kVec, kInK, true>(r.b[j], k0, K, r.bok[j]);
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) s.a[mt][h] = ld_chunk<kVec, kInK, false>(r.a[mt][h], k0, K, r.aok[mt][h]);
}

// The slab's two k16 steps on every (m16, n8) tile, in the permuted k order (header).
__device__ __forceinline__ void mma_slab(tile::rt_c (&acc)[kMT][kNJ], const Slab& s) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    const tile::rt_a a0 = {{s.a[mt][0].x, s.a[mt][1].x, s.a[mt][0].y, s.a[mt][1].y}};
    const tile::rt_a a1 = {{s.a[mt][0].z, s.a[mt][1].z, s.a[mt][0].w, s.a[mt][1].w}};
#pragma unroll
    for (int j = 0; j < kNJ; ++j) {
      const tile::rt_b bb = {{s.b[j].x, s.b[j].y, s.b[j].z, s.b[j].w}};
      E::mma(acc[mt][j], a0, bb, 0);
      E::mma(acc[mt][j], a1, bb, 1);
    }
  }
}

// The warp's share of the k-slabs, w, w + WARPS, ..., kN of them loaded before any is used
// (UNROLL; 1 on the element-wise path, a correctness path that should not set the registers).
// Where all of a round's slabs lie inside K (a uniform branch: every round but the last), no
// chunk is checked against K. (k as int: K at most kMaxK, checked by decode.)
template <bool kVec>
__device__ __forceinline__ void warp_sums(tile::rt_c (&acc)[kMT][kNJ], const Rows& r, int K, int warp, int t) {
  constexpr int kN = kVec ? kU : 1;
  constexpr int kStep = 32 * kWarps;  // from one of the warp's slabs to its next
  for (int kb = 32 * warp; kb < K; kb += kStep * kN) {
    Slab s[kN];
    if (kVec && kb + kStep * (kN - 1) + 32 <= K) {
#pragma unroll
      for (int u = 0; u < kN; ++u) load_slab<kVec, true>(s[u], r, kb + kStep * u + 8 * t, K);
    } else {
#pragma unroll
      for (int u = 0; u < kN; ++u) load_slab<kVec, false>(s[u], r, kb + kStep * u + 8 * t, K);
    }
#pragma unroll
    for (int u = 0; u < kN; ++u) mma_slab(acc, s[u]);
  }
}

// The warps' sums added through shared memory (red: WARPS x 16·MT x kLd floats) and stored
// as C's rows m0 .. and columns n0 .. inside M and N.
__device__ __forceinline__ void store_sums(const tile::rt_c (&acc)[kMT][kNJ], float* red, elem* c, long long M,
                                           long long N, long long m0, long long n0, int warp, int g, int t) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int j = 0; j < kNJ; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float* p = red + ((long long)warp * kBM + 16 * mt + 8 * h + g) * kLd + 8 * j + 2 * t;
        *reinterpret_cast<float2*>(p) = make_float2(acc[mt][j].x[2 * h], acc[mt][j].x[2 * h + 1]);
      }
  __syncthreads();
  const int rows = (int)(M - m0 < kBM ? M - m0 : kBM);
  const bool pairs = (N & 1) == 0;  // (n0 is even: column pairs stay inside a row of C)
  for (int i = (int)threadIdx.x; i < rows * (kBN / 2); i += kThreads) {
    const int row = i / (kBN / 2), col = 2 * (i % (kBN / 2));
    const long long n = n0 + col;
    if (n >= N) continue;
    float2 v = make_float2(0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float2 x = *reinterpret_cast<const float2*>(red + ((long long)w * kBM + row) * kLd + col);
      v.x += x.x;
      v.y += x.y;
    }
    elem* out = c + (m0 + row) * N + n;
    if (pairs) {
      *reinterpret_cast<E::T2*>(out) = E::round2(v.x, v.y);
    } else {
      out[0] = E::round(v.x);
      if (n + 1 < N) out[1] = E::round(v.y);
    }
  }
}

// k offsets are ints (warp_sums): a K they cannot hold stops the kernel rather than wrap.
constexpr long long kMaxK = 2147483647LL - 32LL * kWarps * kU;

__device__ __forceinline__ void decode(const elem* a, const elem* b, elem* c, long long M, long long N, long long K) {
  extern __shared__ float4 smem4[];
  if (K > kMaxK) __trap();
  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const long long row_blocks = (M + kBM - 1) / kBM;
  const long long m0 = (long long)blockIdx.x % row_blocks * kBM, n0 = (long long)blockIdx.x / row_blocks * kBN;
  const Rows r = lane_rows(a, b, M, N, K, m0, n0, g);
  tile::rt_c acc[kMT][kNJ];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int j = 0; j < kNJ; ++j) tile::zero(acc[mt][j]);
  const bool vec = (K & 7) == 0 && ((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b)) & 15) == 0;
  if (vec)
    warp_sums<true>(acc, r, (int)K, warp, t);
  else
    warp_sums<false>(acc, r, (int)K, warp, t);
  store_sums(acc, reinterpret_cast<float*>(smem4), c, M, N, m0, n0, warp, g, t);
}

}  // namespace gemm_decode_impl

#if F16
#define GEMM_DECODE gemm_decode_f16
#else
#define GEMM_DECODE gemm_decode
#endif

extern "C" __global__ void __launch_bounds__(gemm_decode_impl::kThreads, gemm_decode_impl::kMinBlocks)
    GEMM_DECODE(const gemm_decode_impl::elem* a, const gemm_decode_impl::elem* b, gemm_decode_impl::elem* c,
                long long M, long long N, long long K) {
  gemm_decode_impl::decode(a, b, c, M, N, K);
}
