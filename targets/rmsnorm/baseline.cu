// targets/rmsnorm/baseline.cu — the plain kernel tessera's speedups are
// measured against: one row per block of 256 threads, scalar loads, a float
// shared-memory reduction, and a second pass over the row.
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_baseline(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                                            long long M, long long N, float eps) {
  __shared__ float partial[256];
  long long row = blockIdx.x;
  if (row >= M) return;
  const __nv_bfloat16* xr = x + row * N;
  float s = 0.f;
  for (long long j = threadIdx.x; j < N; j += blockDim.x) {
    float v = __bfloat162float(xr[j]);
    s += v * v;
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  float inv = rsqrtf(partial[0] / (float)N + eps);
  for (long long j = threadIdx.x; j < N; j += blockDim.x)
    y[row * N + j] = __float2bfloat16(__bfloat162float(xr[j]) * inv * __bfloat162float(w[j]));
}
