// gemm_mma.cu — tessera gemm template: tensor-core GEMM with mma.sync (sm_80+ path).
//
// C[M,N] (row-major) = A[M,K] (row-major) · B, with B column-major, i.e. given as b[N,K]
// row-major (C = A · bᵀ); fp32 accumulation. Elements are bf16, or fp16 with F16 1.
//
// Structure: one block computes a BM x BN tile of C with (BM/WM) x (BN/WN) warps, each
// warp a WM x WN sub-tile made of m16n8k16 mma.sync instructions. A and B k-slices of
// width BK stream through STAGES shared-memory buffers filled by cp.async (multistage
// pipeline); shared tiles use the 128-byte XOR swizzle (tile/base.cuh) so cp.async
// stores and ldmatrix reads are bank-conflict free. Blocks are rasterized in groups of
// GROUP_M tile-rows for L2 reuse.
//
// Parameters (#defined by tessera): BM, BN, BK (32 or 64), WM, WN (warp tile), STAGES,
// GROUP_M, and optionally SPLITK (default 1) and F16 (default 0).
//   SPLITK == 1: kernel `gemm_mma(a, b, c, M, N, K)` writes bf16 C.
//   SPLITK  > 1: kernel `gemm_mma_splitk(a, b, ws, M, N, K)` with grid.z = SPLITK writes
//                fp32 partial sums ws[SPLITK][M][N]; then `gemm_splitk_reduce(ws, c, M, N)`
//                sums them into bf16 C.
//   F16 == 1:    the same kernels for fp16 a, b and c, named with `_f16`: `gemm_mma_f16`,
//                `gemm_mma_splitk_f16`, `gemm_splitk_reduce_f16` (same arguments, launch
//                plans and constraints; mma.sync .f16 inputs, fp32 accumulation, C rounded
//                to nearest). A module holds one element type's kernels only, so that a
//                candidate's compile time and ptxas report (a spill anywhere rejects it)
//                are those of what it launches.
// The element type is a template parameter of the loader and the main loop (Elem<T>:
// its mma and its rounding); the entry points' bodies are written once, their names
// and pointer types come from F16 (GEMM_ENTRY, elem).
//
// Tails: any M, N, K >= 1. Rows/columns past M/N are zero-filled (cp.async src-size 0),
// K tails are zero-filled per 16-byte chunk. When K % 8 != 0 (rows not 16-byte aligned)
// or a pointer is not 16-byte aligned, a slow path loads elements one by one with bounds
// checks and stores them to shared memory synchronously (same pipeline, no cp.async).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "tile/base.cuh"
#include "tile/cp_async.cuh"
#include "tile/mma.cuh"

#ifndef SPLITK
#define SPLITK 1
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef F16
#define F16 0
#endif
#if F16
#define GEMM_ENTRY(name) name##_f16
#else
#define GEMM_ENTRY(name) name
#endif

namespace gemm_mma_impl {

using tile::u32;
constexpr int WARPS_M = BM / WM;
constexpr int WARPS_N = BN / WN;
constexpr int NTHREADS = WARPS_M * WARPS_N * 32;
constexpr int MI = WM / 16;        // m16 tiles per warp
constexpr int NJ = WN / 16;        // n16 (two n8) tiles per warp
constexpr int KS = BK / 16;        // k16 steps per k-tile
constexpr int CPR = BK / 8;        // 16-byte chunks per tile row
constexpr int A_BYTES = BM * BK * 2;
constexpr int B_BYTES = BN * BK * 2;
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiling");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16");
static_assert(BK == 32 || BK == 64, "BK must be 32 or 64");
static_assert((BM * CPR) % NTHREADS == 0 && (BN * CPR) % NTHREADS == 0, "loader divisibility");
static_assert(STAGES >= 2, "STAGES >= 2");

// What the element type changes: the mma instruction and the rounding of C (tile::MmaElem).
template <typename T>
using Elem = tile::MmaElem<T>;
using elem = tile::MmaElemOf<(F16 != 0)>::T;  // this module's element type


// Per-thread loader for one operand: ITERS 16-byte chunks of a ROWS x BK k-slice of a
// row-major [rows_total][K] matrix of 2-byte T. Row pointers and shared offsets are computed once.
template <typename T, int ROWS, bool VEC>
struct Loader {
  static constexpr int ITERS = ROWS * CPR / NTHREADS;
  static constexpr int RSTEP = NTHREADS / CPR;  // rows between a thread's chunks (multiple of 8)
  const T* g;              // matrix base
  long long row;           // this thread's first row
  long long rows_total;
  u32 soff;                // swizzled shared offset of the first chunk
  int kcol;                // chunk column inside the k-slice

  __device__ __forceinline__ Loader(const T* g_, long long row0, long long rows_total_)
      : g(g_), rows_total(rows_total_) {
    const int tid = (int)threadIdx.x;
    row = row0 + tid / CPR;
    kcol = (tid % CPR) * 8;
    soff = tile::swz128((u32)((tid / CPR) * BK + kcol) * 2u);
  }
  __device__ __forceinline__ void load(u32 sbase, long long k0, long long K) const {
    const long long gk = k0 + kcol;
    const T* p = g + row * K + gk;
    if (VEC) {
#pragma unroll
      for (int it = 0; it < ITERS; ++it) {
        const bool ok = (row + it * RSTEP < rows_total) && gk < K;
        tile::cp_async16(sbase + soff + it * RSTEP * BK * 2, ok ? (const void*)(p + it * RSTEP * K) : (const void*)g,
                         ok ? 16u : 0u);
      }
    } else {
#pragma unroll 1
      for (int it = 0; it < ITERS; ++it) {
        const bool rok = row + it * RSTEP < rows_total;
        const unsigned short* gs = reinterpret_cast<const unsigned short*>(p + it * RSTEP * K);
        u32 w[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          u32 lo = 0, hi = 0;
          if (rok && gk + 2 * e < K) lo = gs[2 * e];
          if (rok && gk + 2 * e + 1 < K) hi = gs[2 * e + 1];
          w[e] = lo | (hi << 16);
        }
        asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(sbase + soff + it * RSTEP * BK * 2), "r"(w[0]),
                     "r"(w[1]), "r"(w[2]), "r"(w[3])
                     : "memory");
      }
    }
  }
};

// Computes the block's accumulators over k-tiles [kt_begin, kt_end).
// Software pipeline: STAGES shared buffers filled by cp.async (one commit group per
// k-tile) and two register fragment sets: fragments for step ks+1 are loaded before the
// mma of step ks; the barrier that hands a stage over is taken at the last step of a tile.
template <typename T, bool VEC>
__device__ __forceinline__ void mainloop(tile::rt_c (&acc)[MI][2 * NJ], const T* a, const T* b, long long M,
                                         long long N, long long K, long long m0, long long n0, int kt_begin,
                                         int kt_end) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const u32 sbase = tile::smem_addr(smem);
  const int warp = threadIdx.x >> 5;
  const int wm = warp / WARPS_N;
  const int wn = warp % WARPS_N;
  const Loader<T, BM, VEC> la(a, m0, M);
  const Loader<T, BN, VEC> lb(b, n0, N);
  static_assert((NTHREADS / CPR) % 8 == 0, "loader row step must keep the swizzle phase");
  const u32 offa = tile::lane_off_a<BK>(wm * WM);
  const u32 offb = tile::lane_off_b<BK>(wn * WN);

#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < 2 * NJ; ++j) tile::zero(acc[i][j]);

  const int nk = kt_end - kt_begin;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) {
      const long long k0 = (long long)(kt_begin + s) * BK;
      la.load(sbase + s * STAGE_BYTES, k0, K);
      lb.load(sbase + s * STAGE_BYTES + A_BYTES, k0, K);
    }
    tile::cp_async_commit();
  }
  if (nk <= 0) {
    tile::cp_async_wait<0>();
    return;
  }
  tile::cp_async_wait<STAGES - 2>();
  __syncthreads();

  tile::rt_a fa[2][MI];
  tile::rt_b fb[2][NJ];
  int s = 0;  // stage being computed
#pragma unroll
  for (int i = 0; i < MI; ++i) tile::ldmatrix_x4(fa[0][i].x, sbase + offa + i * 16 * BK * 2);
#pragma unroll
  for (int j = 0; j < NJ; ++j) tile::ldmatrix_x4(fb[0][j].x, sbase + A_BYTES + offb + j * 16 * BK * 2);

  for (int kt = 0; kt < nk; ++kt) {
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      const int cur = ks & 1, nxt = cur ^ 1;
      if (ks == KS - 1) {
        // next tile must have landed, and every warp must be done with this one
        tile::cp_async_wait<STAGES - 2>();
        __syncthreads();
        s = (s + 1 == STAGES) ? 0 : s + 1;
      }
      if (ks < KS - 1 || kt + 1 < nk) {
        const u32 st = sbase + s * STAGE_BYTES;
        const u32 kx = ((ks + 1) % KS) * 32;  // column byte offset, XORed into the swizzled offset
#pragma unroll
        for (int i = 0; i < MI; ++i) tile::ldmatrix_x4(fa[nxt][i].x, st + (offa ^ kx) + i * 16 * BK * 2);
#pragma unroll
        for (int j = 0; j < NJ; ++j) tile::ldmatrix_x4(fb[nxt][j].x, st + A_BYTES + (offb ^ kx) + j * 16 * BK * 2);
      }
      if (ks == 0) {
        // refill the stage computed in the previous tile (freed by its last barrier)
        const int nt = kt + STAGES - 1;
        if (nt < nk) {
          int ws = s + STAGES - 1;
          if (ws >= STAGES) ws -= STAGES;
          const long long k0 = (long long)(kt_begin + nt) * BK;
          la.load(sbase + ws * STAGE_BYTES, k0, K);
          lb.load(sbase + ws * STAGE_BYTES + A_BYTES, k0, K);
        }
        tile::cp_async_commit();
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < 2 * NJ; ++j) Elem<T>::mma(acc[i][j], fa[cur][i], fb[cur][j >> 1], j & 1);
    }
  }
  tile::cp_async_wait<0>();
}

// Dispatches to the cp.async path or the unaligned element-wise path.
template <typename T>
__device__ __forceinline__ void compute(tile::rt_c (&acc)[MI][2 * NJ], const T* a, const T* b, long long M,
                                        long long N, long long K, long long m0, long long n0, int kt_begin,
                                        int kt_end) {
  const bool vec = ((K & 7) == 0) && ((reinterpret_cast<unsigned long long>(a) & 15) == 0) &&
                   ((reinterpret_cast<unsigned long long>(b) & 15) == 0);
  if (vec)
    mainloop<T, true>(acc, a, b, M, N, K, m0, n0, kt_begin, kt_end);
  else
    mainloop<T, false>(acc, a, b, M, N, K, m0, n0, kt_begin, kt_end);
}

// Maps the linear block id to a (tile_m, tile_n) pair, GROUP_M tile-rows at a time.
__device__ __forceinline__ void raster(long long M, long long N, long long& m0, long long& n0) {
  const long long tiles_m = (M + BM - 1) / BM;
  const long long tiles_n = (N + BN - 1) / BN;
  const long long pid = blockIdx.x;
  const long long group = (long long)GROUP_M * tiles_n;
  const long long first_m = (pid / group) * GROUP_M;
  const long long gsize = (tiles_m - first_m) < GROUP_M ? (tiles_m - first_m) : GROUP_M;
  const long long tm = first_m + (pid % group) % gsize;
  const long long tn = (pid % group) / gsize;
  m0 = tm * BM;
  n0 = tn * BN;
}

}  // namespace gemm_mma_impl

#if SPLITK == 1
// gemm_mma / gemm_mma_f16
extern "C" __global__ void __launch_bounds__(gemm_mma_impl::NTHREADS)
    GEMM_ENTRY(gemm_mma)(const gemm_mma_impl::elem* a, const gemm_mma_impl::elem* b, gemm_mma_impl::elem* c,
                         long long M, long long N, long long K) {
  using namespace gemm_mma_impl;
  long long m0, n0;
  raster(M, N, m0, n0);
  tile::rt_c acc[MI][2 * NJ];
  const int ktiles = (int)((K + BK - 1) / BK);
  compute(acc, a, b, M, N, K, m0, n0, 0, ktiles);

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const long long rbase = m0 + (warp / WARPS_N) * WM + (lane >> 2);
  const long long cbase = n0 + (warp % WARPS_N) * WN + (lane & 3) * 2;
  const bool pair = (N & 1) == 0 && ((reinterpret_cast<unsigned long long>(c) & 3) == 0);
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < 2 * NJ; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long r = rbase + i * 16 + h * 8;
        const long long col = cbase + j * 8;
        if (r >= M) continue;
        const float v0 = acc[i][j].x[2 * h], v1 = acc[i][j].x[2 * h + 1];
        elem* p = c + r * N + col;
        if (pair && col + 1 < N) {
          *reinterpret_cast<Elem<elem>::T2*>(p) = Elem<elem>::round2(v0, v1);
        } else {
          if (col < N) p[0] = Elem<elem>::round(v0);
          if (col + 1 < N) p[1] = Elem<elem>::round(v1);
        }
      }
}
#else
// gemm_mma_splitk / gemm_mma_splitk_f16
extern "C" __global__ void __launch_bounds__(gemm_mma_impl::NTHREADS)
    GEMM_ENTRY(gemm_mma_splitk)(const gemm_mma_impl::elem* a, const gemm_mma_impl::elem* b, float* ws,
                                long long M, long long N, long long K) {
  using namespace gemm_mma_impl;
  long long m0, n0;
  raster(M, N, m0, n0);
  tile::rt_c acc[MI][2 * NJ];
  const int ktiles = (int)((K + BK - 1) / BK);
  const int per = (ktiles + SPLITK - 1) / SPLITK;
  int kb = blockIdx.z * per;
  int ke = kb + per;
  if (ke > ktiles) ke = ktiles;
  if (kb > ke) kb = ke;  // empty slice still writes its (zero) partials
  compute(acc, a, b, M, N, K, m0, n0, kb, ke);

  float* out = ws + (long long)blockIdx.z * M * N;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const long long rbase = m0 + (warp / WARPS_N) * WM + (lane >> 2);
  const long long cbase = n0 + (warp % WARPS_N) * WN + (lane & 3) * 2;
  const bool pair = (N & 1) == 0;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < 2 * NJ; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long r = rbase + i * 16 + h * 8;
        const long long col = cbase + j * 8;
        if (r >= M) continue;
        const float v0 = acc[i][j].x[2 * h], v1 = acc[i][j].x[2 * h + 1];
        float* p = out + r * N + col;
        if (pair && col + 1 < N) {
          *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
        } else {
          if (col < N) p[0] = v0;
          if (col + 1 < N) p[1] = v1;
        }
      }
}

// c[i] = sum_z ws[z][i], 4 consecutive elements per thread (gemm_splitk_reduce / _f16).
extern "C" __global__ void __launch_bounds__(256)
    GEMM_ENTRY(gemm_splitk_reduce)(float* ws, gemm_mma_impl::elem* c, long long M, long long N) {
  using E = gemm_mma_impl::Elem<gemm_mma_impl::elem>;
  const long long total = M * N;
  const long long i0 = ((long long)blockIdx.x * 256 + threadIdx.x) * 4;
  if (i0 >= total) return;
  if (i0 + 4 <= total && (total & 3) == 0) {
    float4 s = *reinterpret_cast<const float4*>(ws + i0);
#pragma unroll
    for (int z = 1; z < SPLITK; ++z) {
      const float4 v = *reinterpret_cast<const float4*>(ws + (long long)z * total + i0);
      s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    E::T2 lo = E::round2(s.x, s.y), hi = E::round2(s.z, s.w);
    if ((reinterpret_cast<unsigned long long>(c) & 7) == 0) {
      uint2 w;
      w.x = *reinterpret_cast<unsigned*>(&lo);
      w.y = *reinterpret_cast<unsigned*>(&hi);
      *reinterpret_cast<uint2*>(c + i0) = w;
    } else {
      c[i0] = lo.x; c[i0 + 1] = lo.y; c[i0 + 2] = hi.x; c[i0 + 3] = hi.y;
    }
  } else {
    for (long long i = i0; i < i0 + 4 && i < total; ++i) {
      float s = 0.f;
      for (int z = 0; z < SPLITK; ++z) s += ws[(long long)z * total + i];
      c[i] = E::round(s);
    }
  }
}
#endif
