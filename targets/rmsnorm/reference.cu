// targets/rmsnorm/reference.cu — the float64 judge of rmsnorm: a direct
// transcription of y = x / sqrt(mean(x^2) + eps) * w, one block per row.
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_reference(const __nv_bfloat16* x, const __nv_bfloat16* w, double* y, long long M,
                                             long long N, float eps) {
  __shared__ double partial[256];
  long long row = blockIdx.x;
  if (row >= M) return;
  const __nv_bfloat16* xr = x + row * N;
  double s = 0;
  for (long long j = threadIdx.x; j < N; j += blockDim.x) {
    double v = (double)__bfloat162float(xr[j]);
    s += v * v;
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  double inv = 1.0 / sqrt(partial[0] / (double)N + (double)eps);
  for (long long j = threadIdx.x; j < N; j += blockDim.x)
    y[row * N + j] = (double)__bfloat162float(xr[j]) * inv * (double)__bfloat162float(w[j]);
}
