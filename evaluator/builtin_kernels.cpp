// evaluator/builtin_kernels.cpp — source of the counter-based input generators.
//
// Inputs are generated on the device from (seed, element index) with a
// splitmix64 hash, so any seed can be replayed exactly and gigabytes of inputs
// cost milliseconds. Normal values use Box-Muller on two independent hashes.
#include "evaluator/builtin_kernels.h"

namespace tessera::evaluator {

const char* const kBuiltinKernelSource = R"CUDA(
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ unsigned long long tessera_mix(unsigned long long z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ double tessera_unit(unsigned long long h) {  // (0, 1)
  return ((h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
__device__ __forceinline__ double tessera_sample(int dist, unsigned long long seed, long long i, double a, double b) {
  unsigned long long h1 = tessera_mix(seed * 0x2545F4914F6CDD1Dull ^ tessera_mix((unsigned long long)i));
  if (dist == 0) {  // normal(a, b)
    unsigned long long h2 = tessera_mix(h1 ^ 0xD1B54A32D192ED03ull);
    double u1 = tessera_unit(h1), u2 = tessera_unit(h2);
    return a + b * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
  }
  if (dist == 1) return a + (b - a) * tessera_unit(h1);                 // uniform [a, b)
  if (dist == 2) return a + floor((b - a + 1.0) * tessera_unit(h1));    // randint [a, b]
  return a;                                                             // constant (overrides only)
}

template <typename T> __device__ __forceinline__ T tessera_cast(double x) { return (T)x; }
template <> __device__ __forceinline__ __nv_bfloat16 tessera_cast<__nv_bfloat16>(double x) { return __double2bfloat16(x); }
template <> __device__ __forceinline__ __half tessera_cast<__half>(double x) { return __double2half(x); }

template <typename T>
__device__ void tessera_fill(T* p, long long n, unsigned long long seed, int dist, double a, double b) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = tessera_cast<T>(tessera_sample(dist, seed, i, a, b));
}

#define TESSERA_FILL(dname, T)                                                                         \
  extern "C" __global__ void tessera_fill_##dname(T* p, long long n, unsigned long long seed, int dist, \
                                                 double a, double b) {                                 \
    tessera_fill<T>(p, n, seed, dist, a, b);                                                           \
  }
// Error of an output against its float64 reference, reduced on the device:
// acc[0] += sum (got-ref)^2, acc[1] += sum ref^2, acc[2] = max |got-ref| (as
// ordered bits of a non-negative double), bad += non-finite outputs.
__device__ __forceinline__ double tessera_value(const __nv_bfloat16* p, long long i) { return (double)__bfloat162float(p[i]); }
__device__ __forceinline__ double tessera_value(const __half* p, long long i) { return (double)__half2float(p[i]); }
template <typename T> __device__ __forceinline__ double tessera_value(const T* p, long long i) { return (double)p[i]; }

template <typename T, typename R>
__device__ void tessera_compare(const T* got, const R* ref, long long n, double* acc, unsigned long long* bad) {
  double num = 0, den = 0, mx = 0;
  unsigned long long nb = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    double g = tessera_value(got, i), r = tessera_value(ref, i);
    if (!isfinite(g)) { ++nb; continue; }
    double d = g - r;
    num += d * d;
    den += r * r;
    mx = fmax(mx, fabs(d));
  }
  for (int o = 16; o > 0; o >>= 1) {
    num += __shfl_down_sync(0xffffffffu, num, o);
    den += __shfl_down_sync(0xffffffffu, den, o);
    mx = fmax(mx, __shfl_down_sync(0xffffffffu, mx, o));
    nb += __shfl_down_sync(0xffffffffu, nb, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&acc[0], num);
    atomicAdd(&acc[1], den);
    atomicMax(reinterpret_cast<unsigned long long*>(&acc[2]), (unsigned long long)__double_as_longlong(mx));
    atomicAdd(bad, nb);
  }
}

#define TESSERA_COMPARE(dname, T)                                                                      \
  extern "C" __global__ void tessera_compare_##dname(const T* got, const double* ref, long long n,     \
                                                     double* acc, unsigned long long* bad) {           \
    tessera_compare<T, double>(got, ref, n, acc, bad);                                                 \
  }                                                                                                    \
  extern "C" __global__ void tessera_compare_same_##dname(const T* got, const T* ref, long long n,     \
                                                          double* acc, unsigned long long* bad) {      \
    tessera_compare<T, T>(got, ref, n, acc, bad);                                                      \
  }
TESSERA_COMPARE(bf16, __nv_bfloat16)
TESSERA_COMPARE(f16, __half)
TESSERA_COMPARE(f32, float)
TESSERA_COMPARE(f64, double)
TESSERA_COMPARE(i32, int)
TESSERA_COMPARE(i64, long long)

// Bytes of a that differ from b (inputs against their pristine copies): 8-byte
// words, then the tail byte by byte. Both pointers are 256-byte aligned.
extern "C" __global__ void tessera_count_diff(const unsigned char* a, const unsigned char* b, long long n,
                                              unsigned long long* count) {
  unsigned long long c = 0;
  long long words = n / 8;
  const unsigned long long* wa = reinterpret_cast<const unsigned long long*>(a);
  const unsigned long long* wb = reinterpret_cast<const unsigned long long*>(b);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x)
    c += wa[i] != wb[i];
  if (blockIdx.x == 0)
    for (long long i = words * 8 + threadIdx.x; i < n; i += blockDim.x) c += a[i] != b[i];
  for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

// Evicts L2 by reading a buffer (twice its size) instead of writing it: the lines
// it leaves are clean, so no write-back of dirty data overlaps the next launch.
// One word per block is written so the reads cannot be optimized away.
extern "C" __global__ void tessera_read_flush(const uint4* p, long long n16, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n16; i += (long long)gridDim.x * blockDim.x) {
    uint4 v = __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) sink[blockIdx.x] = acc;
}

// Holds the timing stream until the host has enqueued a whole batch: spins until
// *word == want (written by a memset on another stream once the batch is queued) or
// timeout_ns passes. Without it, the GPU ran each short launch as soon as the host
// issued it, so host-side enqueue latency (~50 us per launch in episodes lasting up
// to a second) landed between the events of the 0.05 ms rmsnorm shape (H200,
// 2026-11-30).
extern "C" __global__ void tessera_gate(const volatile unsigned* word, unsigned want, unsigned long long timeout_ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (*word != want) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > timeout_ns) break;
    __nanosleep(500);
  }
}

TESSERA_FILL(bf16, __nv_bfloat16)
TESSERA_FILL(f16, __half)
TESSERA_FILL(f32, float)
TESSERA_FILL(f64, double)
TESSERA_FILL(i32, int)
TESSERA_FILL(i64, long long)
)CUDA";

}  // namespace tessera::evaluator
