// benchmarks/timing/read_floor.cu — how fast any kernel can read N bytes from DRAM, timed as
// tessera's judge times (docs/statuses.md, "Timing method"): L2 evicted before every timed
// launch (the write flush, a memset of twice the L2, or the read flush, a kernel reading that
// buffer), events around the launch alone, batches enqueued behind a gate, the median kept. The
// figure is set against the copy ceiling as `tessera doctor` measures it (a 2 GiB
// device-to-device copy, read + write bytes per second), the ceiling of tessera's roofline.
//
// Why: issue 33 asks gemm's decode widths for 85 % of the read-bandwidth ceiling. The weights
// are 50-235 MB; read once, at that size the launch, the first misses and the last wave are a
// part of the time that no steady-state ceiling counts. This program gives the fraction a kernel
// that does nothing but read reaches at each size (the best of a few grid sizes and loads in
// flight), i.e. what 100 % of the achievable is for a kernel of that size.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o read_floor benchmarks/timing/read_floor.cu
//   ./read_floor [MB ...]      (default: the gemm suite's weights, 50.3 117.4 234.9 MB)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// Streams `n16` 16-byte words, UNROLL loads of each thread in flight (no L1 allocation, as the
// decode template loads its weights); one word a block is written so that nothing is elided.
template <int UNROLL>
__global__ void read_words(const uint4* __restrict__ p, long long n16, unsigned* sink) {
  unsigned acc = 0;
  long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n16; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w)
                   : "l"(p + i + u * stride));
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += stride) acc ^= p[i].x;
  if (acc == 0x9e3779b9u) sink[blockIdx.x] = acc;  // almost never: the loads must not be elided
}

// Holds the stream until the host has queued a batch (the judge's gate does the same by a flag).
__global__ void gate(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

struct Flush {
  void* buf;
  size_t bytes;
  bool read;
  unsigned* sink;
  void operator()(int i) const {
    if (!read) {
      CHECK(cudaMemsetAsync(buf, i & 0xff, bytes));
      return;
    }
    read_words<8><<<1056, 512>>>(static_cast<const uint4*>(buf), bytes / 16, sink);
  }
};

using Kernel = void (*)(const uint4*, long long, unsigned*);

// Median of `samples` event-timed launches, each after a flush; the first of the batch dropped.
double time_read(Kernel k, int grid, int block, const uint4* p, long long n16, unsigned* sink,
                 const Flush& flush, int samples) {
  std::vector<cudaEvent_t> ev(2 * (samples + 1));
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  gate<<<1, 32>>>(4000000);
  for (int s = 0; s <= samples; ++s) {
    flush(s);
    CHECK(cudaEventRecord(ev[2 * s]));
    k<<<grid, block>>>(p, n16, sink);
    CHECK(cudaEventRecord(ev[2 * s + 1]));
  }
  CHECK(cudaDeviceSynchronize());
  std::vector<double> ms;
  for (int s = 1; s <= samples; ++s) {
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, ev[2 * s], ev[2 * s + 1]));
    ms.push_back(t);
  }
  for (auto& e : ev) CHECK(cudaEventDestroy(e));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double copy_ceiling() {  // as evaluator/ceilings.cpp: 2 GiB copied 12 times, 2 dropped, median
  size_t bytes = size_t(2) << 30;
  void *src = nullptr, *dst = nullptr;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  CHECK(cudaMemset(src, 0x3C, bytes));
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaEventRecord(a));
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    if (i >= 2) ms.push_back(t);
  }
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));
  std::sort(ms.begin(), ms.end());
  return 2.0 * static_cast<double>(bytes) / (ms[ms.size() / 2] * 1e-3);
}

int main(int argc, char** argv) {
  std::vector<double> mbs;
  for (int i = 1; i < argc; ++i) mbs.push_back(std::atof(argv[i]));
  if (mbs.empty()) mbs = {50.331648, 117.440512, 234.881024};
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  double ceiling = copy_ceiling();
  std::printf("%s, %d SMs, L2 %d MB; copy ceiling %.0f GB/s\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20, ceiling / 1e9);
  size_t flush_bytes = 2 * static_cast<size_t>(prop.l2CacheSize), most = 0;
  for (double mb : mbs) most = std::max(most, static_cast<size_t>(mb * 1e6) / 16 * 16);
  void *flush_buf = nullptr, *data = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&flush_buf, flush_bytes));
  CHECK(cudaMalloc(&data, most));
  CHECK(cudaMalloc(&sink, 1 << 20));
  CHECK(cudaMemset(data, 0x5A, most));
  struct Variant {
    Kernel k;
    int unroll;
  } variants[] = {{read_words<2>, 2}, {read_words<4>, 4}, {read_words<8>, 8}};
  int sms = prop.multiProcessorCount;
  for (int read_flush = 0; read_flush < 2; ++read_flush) {
    Flush flush{flush_buf, flush_bytes, read_flush == 1, sink};
    for (double mb : mbs) {
      long long n16 = static_cast<long long>(mb * 1e6) / 16;
      double best = 1e30;
      int bg = 0, bb = 0, bu = 0;
      for (const auto& v : variants)
        for (int per_sm : {1, 2, 4, 8})
          for (int block : {256, 512, 1024}) {
            if (per_sm * block > 2048) continue;
            double ms = time_read(v.k, per_sm * sms, block, static_cast<const uint4*>(data), n16, sink,
                                  flush, 60);
            if (ms < best) best = ms, bg = per_sm * sms, bb = block, bu = v.unroll;
          }
      double bytes = 16.0 * n16;
      std::printf("%s flush  %7.1f MB  best %6.2f us  %6.0f GB/s  %5.1f %% of the copy ceiling"
                  "  (grid %d x %d, %d loads in flight a thread)\n",
                  read_flush ? "read " : "write", bytes / 1e6, best * 1e3, bytes / (best * 1e-3) / 1e9,
                  100.0 * bytes / (best * 1e-3) / ceiling, bg, bb, bu);
    }
  }
  return 0;
}
