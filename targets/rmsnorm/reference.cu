// targets/rmsnorm/reference.cu — the float64 judges of rmsnorm: direct
// transcriptions of y = x / sqrt(mean(x^2) + eps) * w (rmsnorm_reference) and of the
// same over x + r (rmsnorm_residual_reference, fused add + rmsnorm), one block per row.
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

// The judge of fused add + rmsnorm (rmsnorm_rows_residual): v = x + r, summed in
// double (bf16 -> double is exact), y = v / sqrt(mean(v^2) + eps) * w; one block of 256
// threads per row, like rmsnorm_reference.
extern "C" __global__ void rmsnorm_residual_reference(const __nv_bfloat16* x, const __nv_bfloat16* r,
                                                      const __nv_bfloat16* w, double* y, long long M, long long N,
                                                      float eps) {
  __shared__ double partial[256];
  long long row = blockIdx.x;
  if (row >= M) return;
  const __nv_bfloat16* xr = x + row * N;
  const __nv_bfloat16* rr = r + row * N;
  double s = 0;
  for (long long j = threadIdx.x; j < N; j += blockDim.x) {
    double v = (double)__bfloat162float(xr[j]) + (double)__bfloat162float(rr[j]);
    s += v * v;
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  double inv = 1.0 / sqrt(partial[0] / (double)N + (double)eps);
  for (long long j = threadIdx.x; j < N; j += blockDim.x) {
    double v = (double)__bfloat162float(xr[j]) + (double)__bfloat162float(rr[j]);
    y[row * N + j] = v * inv * (double)__bfloat162float(w[j]);
  }
}
