// tests/llm/answers.h — scripted model answers used by several tests: a good
// kernel, one that will not compile, one that compiles but computes the wrong
// thing, a template with a parameter space, and assorted garbage.
#pragma once

#include <string>

namespace tessera::llm::testing {

// A correct one-row-per-block rmsnorm kernel named `kernel` (for answers built in a test).
inline std::string rows_kernel_source(const std::string& kernel) {
  return "#include <cuda_bf16.h>\n\nextern \"C\" __global__ void " + kernel + R"((const __nv_bfloat16* x,
    const __nv_bfloat16* w, __nv_bfloat16* y, long long M, long long N, float eps) {
  long long row = blockIdx.x;
  if (row >= M) return;
  __shared__ float partial[32];
  float sum = 0.f;
  for (long long i = threadIdx.x; i < N; i += blockDim.x) {
    float v = __bfloat162float(x[row * N + i]);
    sum += v * v;
  }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (threadIdx.x == 0) partial[0] = rsqrtf(sum / N + eps);
  }
  __syncthreads();
  float r = partial[0];
  for (long long i = threadIdx.x; i < N; i += blockDim.x)
    y[row * N + i] = __float2bfloat16(__bfloat162float(x[row * N + i]) * r * __bfloat162float(w[i]));
}
)";
}

inline const std::string kGoodKernelAnswer =
    "Each block handles one row; a warp-shuffle\nreduction computes the mean of squares, then the row is scaled.\n\n"
    "```cuda\n" +
    rows_kernel_source("rmsnorm_rows") + R"ANS(```

```json
{"name": "rows-shuffle",
 "launch": [{"kernel": "rmsnorm_rows", "grid": ["M"], "block": [256], "smem": 0,
             "args": ["x", "w", "y", "M", "N", "eps"]}]}
```
)ANS";

// Compiles? No: `undeclared_thing` does not exist. The static checks pass; NVRTC
// is what catches it.
inline const std::string kCompileErrorAnswer = R"ANS(```cuda
extern "C" __global__ void broken(float* y, long long N) {
  long long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) y[i] = undeclared_thing * 2.0f;
}
```
```json
{"launch": [{"kernel": "broken", "grid": ["cdiv(N, 256)", "1", "1"],
             "block": ["256", "1", "1"], "args": ["y", "N"]}]}
```
)ANS";

// Valid and well-formed, but forgets the weight: validation must catch it.
inline const std::string kWrongKernelAnswer = R"ANS(```cuda
#include <cuda_bf16.h>
extern "C" __global__ void rmsnorm_wrong(const __nv_bfloat16* x, const __nv_bfloat16* w,
                                         __nv_bfloat16* y, long long M, long long N, float eps) {
  long long row = blockIdx.x;
  if (row >= M || threadIdx.x != 0) return;
  float sum = 0.f;
  for (long long i = 0; i < N; ++i) { float v = __bfloat162float(x[row * N + i]); sum += v * v; }
  float r = rsqrtf(sum / N + eps);
  for (long long i = 0; i < N; ++i) y[row * N + i] = __float2bfloat16(__bfloat162float(x[row * N + i]) * r);
}
```
```json
[{"kernel": "rmsnorm_wrong", "grid": ["M", "1", "1"], "block": ["32", "1", "1"],
  "args": ["x", "w", "y", "M", "N", "eps"]}]
```
)ANS";

inline const std::string kTemplateAnswer = R"ANS(A tunable version: THREADS threads per row,
VEC elements per load.

```cuda
#include <cuda_bf16.h>
extern "C" __global__ void rows_vec(const __nv_bfloat16* x, __nv_bfloat16* y, long long N) {
  long long i = (long long)blockIdx.x * THREADS * VEC + threadIdx.x * VEC;
  for (int k = 0; k < VEC; ++k)
    if (i + k < N) y[i + k] = x[i + k];
}
```

```json
{"name": "copy-vec", "params": {"THREADS": [128, 256], "VEC": [1, 2, 4]},
 "constraints": ["THREADS * VEC <= 1024"], "arch": ["sm_90a"],
 "launch": [{"kernel": "rows_vec", "grid": ["cdiv(N, THREADS*VEC)"], "block": ["THREADS"],
             "args": ["x", "y", "N"]}],
 "scratch": [{"name": "tmp", "dtype": "f32", "size": "N"}]}
```
)ANS";

inline const std::string kGarbageAnswer =
    "I think the best approach would be to use tensor cores. {\"launch\": oops ``` \x01\x02 "
    "<<< not code >>> \u00e9\u2603";

}  // namespace tessera::llm::testing
