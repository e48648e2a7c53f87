// reference.cu — tessera gemm reference: C = A · B in float64.
//
// a: [M,K] row-major; b: [N,K] row-major (B column-major, C = A · bᵀ); c: double [M,N].
// gemm_reference takes bf16 a and b, gemm_reference_f16 fp16 ones (the fp16 kernels of
// gemm_mma.cu); one body, reference_tile<T>.
// Every product and sum is done in double (bf16 or fp16 -> double is exact). Tiled in shared
// memory for speed (8192^3 in a few hundred ms on H200): a block of 256 threads computes
// a 128x128 tile, each thread 8x8 outputs at rows ty+16*i, cols tx+16*j; k-slices of 16
// are staged in shared memory as double, transposed to [k][m] / [k][n].
// Launch: grid (cdiv(N,128), cdiv(M,128)), block 256, no dynamic shared memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define REF_T 128
#define REF_BK 16

__device__ __forceinline__ double to_double(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
__device__ __forceinline__ double to_double(__half v) { return (double)__half2float(v); }

template <typename T>
__device__ __forceinline__ void reference_tile(const T* a, const T* b, double* c, long long M, long long N,
                                               long long K) {
  __shared__ double As[REF_BK][REF_T];
  __shared__ double Bs[REF_BK][REF_T];
  const int tid = threadIdx.x;
  const int tx = tid & 15, ty = tid >> 4;
  const long long m0 = (long long)blockIdx.y * REF_T;
  const long long n0 = (long long)blockIdx.x * REF_T;
  double acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0;

  for (long long k0 = 0; k0 < K; k0 += REF_BK) {
    // 128 rows x 16 k per operand = 2048 elements, 8 per thread; k fastest.
#pragma unroll
    for (int it = 0; it < 8; ++it) {
      const int id = it * 256 + tid;
      const int r = id >> 4, kk = id & 15;
      const long long gk = k0 + kk;
      const long long gm = m0 + r, gn = n0 + r;
      As[kk][r] = (gm < M && gk < K) ? to_double(a[gm * K + gk]) : 0.0;
      Bs[kk][r] = (gn < N && gk < K) ? to_double(b[gn * K + gk]) : 0.0;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < REF_BK; ++kk) {
      double av[8], bv[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) av[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 8; ++j) bv[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const long long r = m0 + ty + 16 * i;
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const long long col = n0 + tx + 16 * j;
      if (col < N) c[r * N + col] = acc[i][j];
    }
  }
}

extern "C" __global__ void __launch_bounds__(256)
    gemm_reference(const __nv_bfloat16* a, const __nv_bfloat16* b, double* c, long long M, long long N,
                   long long K) {
  reference_tile(a, b, c, M, N, K);
}

extern "C" __global__ void __launch_bounds__(256)
    gemm_reference_f16(const __half* a, const __half* b, double* c, long long M, long long N, long long K) {
  reference_tile(a, b, c, M, N, K);
}
