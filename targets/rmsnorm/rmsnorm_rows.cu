// targets/rmsnorm/rmsnorm_rows.cu — tunable rmsnorm: ROWS rows per block,
// THREADS/ROWS threads per row, VEC-wide (up to 16-byte) loads, UNROLL
// independent loads in flight per thread, and optionally the row kept in
// shared memory between the two passes (SMEM_ROW) instead of re-read from L2.
//
// Parameters (#defined by tessera): THREADS, ROWS, VEC, UNROLL, SMEM_ROW, and
// optionally RESIDUAL (default 0), which picks the module's one entry point:
//   RESIDUAL 0: rmsnorm_rows(x, w, y, M, N, eps)
//               y = x * rsqrt(mean(x^2) + eps) * w;
//               dynamic shared memory SMEM_ROW * ROWS * N * 2 (the bf16 row)
//   RESIDUAL 1: rmsnorm_rows_residual(x, r, w, y, M, N, eps)   (fused add + rmsnorm)
//               the same of v = x + r, the sum formed in fp32 and never rounded to bf16;
//               dynamic shared memory SMEM_ROW * ROWS * N * 4 (the fp32 sum)
// The two share the kernel body (`if constexpr (RESIDUAL)` where they differ; the
// residual's passes are sum_squares_of_sum and normalize_sum). One entry point per module
// keeps a candidate's compile time and ptxas report (registers, spills: a spill anywhere
// in the module rejects the candidate) those of the kernel its launch plan runs.
// x, r, y: [M, N] bf16 row-major; w: [N] bf16.
// Any N works: the vector path runs when N % VEC == 0, a scalar path otherwise.
#include <cuda_bf16.h>

#ifndef RESIDUAL
#define RESIDUAL 0
#endif

#define TPR (THREADS / ROWS)   // threads per row, a multiple of 32
#define WARPS_PER_ROW (TPR / 32)

struct alignas(2 * VEC) Pack {
  __nv_bfloat16 v[VEC];
};
// VEC fp32 sums (the residual kernel's row in shared memory); aligned to at most the
// 16 bytes that dynamic shared memory guarantees.
struct alignas(4 * VEC < 16 ? 4 * VEC : 16) FPack {
  float v[VEC];
};

__device__ __forceinline__ float warp_sum(float s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

// rmsnorm_rows_residual's pass 1: this thread's part of sum(v^2) over the row,
// v = x + r in fp32, kept in srow (fp32) with SMEM_ROW.
__device__ __forceinline__ float sum_squares_of_sum(const __nv_bfloat16* __restrict__ xr,
                                                    const __nv_bfloat16* __restrict__ rr, float* srow, long long N,
                                                    int t, bool vec) {
  float s = 0.f;
  if (vec) {
    const long long nv = N / VEC;
    const Pack* xp = reinterpret_cast<const Pack*>(xr);
    const Pack* rp = reinterpret_cast<const Pack*>(rr);
    for (long long i0 = t; i0 < nv; i0 += (long long)TPR * UNROLL) {
      Pack p[UNROLL], q[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        long long i = i0 + (long long)u * TPR;
        if (i < nv) p[u] = xp[i], q[u] = rp[i];
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        long long i = i0 + (long long)u * TPR;
        if (i < nv) {
          FPack f;
#pragma unroll
          for (int k = 0; k < VEC; ++k) {
            f.v[k] = __bfloat162float(p[u].v[k]) + __bfloat162float(q[u].v[k]);
            s += f.v[k] * f.v[k];
          }
          if (SMEM_ROW) reinterpret_cast<FPack*>(srow)[i] = f;
        }
      }
    }
  } else {
    for (long long j = t; j < N; j += TPR) {
      const float f = __bfloat162float(xr[j]) + __bfloat162float(rr[j]);
      s += f * f;
      if (SMEM_ROW) srow[j] = f;
    }
  }
  return s;
}

// rmsnorm_rows_residual's pass 2: y = v * inv * w, v = x + r from srow (SMEM_ROW) or
// formed again from x and r.
__device__ __forceinline__ void normalize_sum(const __nv_bfloat16* __restrict__ xr,
                                              const __nv_bfloat16* __restrict__ rr, const float* srow,
                                              const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ yr,
                                              long long N, int t, bool vec, float inv) {
  if (vec) {
    const long long nv = N / VEC;
    for (long long i = t; i < nv; i += TPR) {
      FPack f;
      if (SMEM_ROW) {
        f = reinterpret_cast<const FPack*>(srow)[i];
      } else {
        Pack p = reinterpret_cast<const Pack*>(xr)[i];
        Pack q = reinterpret_cast<const Pack*>(rr)[i];
#pragma unroll
        for (int k = 0; k < VEC; ++k) f.v[k] = __bfloat162float(p.v[k]) + __bfloat162float(q.v[k]);
      }
      Pack g = reinterpret_cast<const Pack*>(w)[i];
      Pack o;
#pragma unroll
      for (int k = 0; k < VEC; ++k) o.v[k] = __float2bfloat16(f.v[k] * inv * __bfloat162float(g.v[k]));
      reinterpret_cast<Pack*>(yr)[i] = o;
    }
  } else {
    for (long long j = t; j < N; j += TPR) {
      const float f = SMEM_ROW ? srow[j] : __bfloat162float(xr[j]) + __bfloat162float(rr[j]);
      yr[j] = __float2bfloat16(f * inv * __bfloat162float(w[j]));
    }
  }
}

// The module's one entry point, picked by RESIDUAL; the body after the two signatures
// serves both. It is written out in the kernel rather than in a device function shared by
// two thin kernels: NVVM simplifies such a function before inlining it, without the
// kernel's __launch_bounds__, and rmsnorm_rows' code then changed on sm_100a/sm_103a.
// Without RESIDUAL the body is rmsnorm_rows' original one, instruction for instruction.
#if RESIDUAL
extern "C" __global__ void __launch_bounds__(THREADS)
rmsnorm_rows_residual(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ r,
                      const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ y, long long M, long long N,
                      float eps) {
#else
extern "C" __global__ void __launch_bounds__(THREADS)
rmsnorm_rows(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ y,
             long long M, long long N, float eps) {
  const __nv_bfloat16* const r = nullptr;  // (no residual)
#endif
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ float red[ROWS][WARPS_PER_ROW];
  const int sub = threadIdx.x / TPR;   // which row of this block
  const int t = threadIdx.x % TPR;     // thread within the row
  const long long row = (long long)blockIdx.x * ROWS + sub;
  const bool active = row < M;
  const __nv_bfloat16* xr = x + (active ? row : 0) * N;
  const __nv_bfloat16* rr = RESIDUAL ? r + (active ? row : 0) * N : nullptr;
  __nv_bfloat16* srow = reinterpret_cast<__nv_bfloat16*>(smem_raw) + (SMEM_ROW ? sub * N : 0);
  float* srow_sum = reinterpret_cast<float*>(smem_raw) + (SMEM_ROW ? sub * N : 0);  // (RESIDUAL's row)
  const bool vec = (N % VEC) == 0;

  float s = 0.f;
  if constexpr (RESIDUAL) {
    if (active) s = sum_squares_of_sum(xr, rr, srow_sum, N, t, vec);
  } else if (active) {
    if (vec) {
      const long long nv = N / VEC;
      const Pack* xp = reinterpret_cast<const Pack*>(xr);
      for (long long i0 = t; i0 < nv; i0 += (long long)TPR * UNROLL) {
        Pack p[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          long long i = i0 + (long long)u * TPR;
          if (i < nv) p[u] = xp[i];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          long long i = i0 + (long long)u * TPR;
          if (i < nv) {
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
              float f = __bfloat162float(p[u].v[k]);
              s += f * f;
            }
            if (SMEM_ROW) reinterpret_cast<Pack*>(srow)[i] = p[u];
          }
        }
      }
    } else {
      for (long long j = t; j < N; j += TPR) {
        __nv_bfloat16 b = xr[j];
        float f = __bfloat162float(b);
        s += f * f;
        if (SMEM_ROW) srow[j] = b;
      }
    }
  }
  s = warp_sum(s);
  if ((t & 31) == 0) red[sub][t / 32] = s;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int k = 0; k < WARPS_PER_ROW; ++k) total += red[sub][k];
  if (!active) return;
  const float inv = rsqrtf(total / (float)N + eps);
  __nv_bfloat16* yr = y + row * N;
  if constexpr (RESIDUAL) {
    normalize_sum(xr, rr, srow_sum, w, yr, N, t, vec, inv);
    return;
  }
  const __nv_bfloat16* src = SMEM_ROW ? srow : xr;
  if (vec) {
    const long long nv = N / VEC;
    for (long long i = t; i < nv; i += TPR) {
      Pack p = reinterpret_cast<const Pack*>(src)[i];
      Pack q = reinterpret_cast<const Pack*>(w)[i];
      Pack o;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        o.v[k] = __float2bfloat16(__bfloat162float(p.v[k]) * inv * __bfloat162float(q.v[k]));
      reinterpret_cast<Pack*>(yr)[i] = o;
    }
  } else {
    for (long long j = t; j < N; j += TPR)
      yr[j] = __float2bfloat16(__bfloat162float(src[j]) * inv * __bfloat162float(w[j]));
  }
}
