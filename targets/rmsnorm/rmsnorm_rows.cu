// targets/rmsnorm/rmsnorm_rows.cu — tunable rmsnorm: ROWS rows per block,
// THREADS/ROWS threads per row, VEC-wide (up to 16-byte) loads, UNROLL
// independent loads in flight per thread, and optionally the row kept in
// shared memory between the two passes (SMEM_ROW) instead of re-read from L2.
//
// Parameters (#defined by tessera): THREADS, ROWS, VEC, UNROLL, SMEM_ROW.
// Any N works: the vector path runs when N % VEC == 0, a scalar path otherwise.
#include <cuda_bf16.h>

#define TPR (THREADS / ROWS)   // threads per row, a multiple of 32
#define WARPS_PER_ROW (TPR / 32)

struct alignas(2 * VEC) Pack {
  __nv_bfloat16 v[VEC];
};

__device__ __forceinline__ float warp_sum(float s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

extern "C" __global__ void __launch_bounds__(THREADS)
rmsnorm_rows(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ y,
             long long M, long long N, float eps) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ float red[ROWS][WARPS_PER_ROW];
  const int sub = threadIdx.x / TPR;   // which row of this block
  const int t = threadIdx.x % TPR;     // thread within the row
  const long long row = (long long)blockIdx.x * ROWS + sub;
  const bool active = row < M;
  const __nv_bfloat16* xr = x + (active ? row : 0) * N;
  __nv_bfloat16* srow = reinterpret_cast<__nv_bfloat16*>(smem_raw) + (SMEM_ROW ? sub * N : 0);
  const bool vec = (N % VEC) == 0;

  float s = 0.f;
  if (active) {
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
