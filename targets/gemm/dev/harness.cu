// harness.cu — standalone GPU check for the gemm templates (not part of the CMake build).
//
// Compiles targets/gemm/gemm_mma.cu variants and reference.cu with NVRTC exactly as
// tessera does (one "#define NAME value" line per parameter prepended; include paths:
// targets/gemm, targets/common, CUDA include), loads them through the driver API
// (libcuda.so.1 opened at run time, so the binary starts on machines without a GPU),
// runs them on random normal(0,1) bf16 data, prints rel-L2 error against the float64
// reference and the median time (cold L2: a 256 MiB memset before every timed launch)
// against cuBLAS (cublasGemmEx, bf16 in/out, fp32 compute), same process, same inputs.
//
// Build (here):  nvcc -O2 -std=c++17 -o targets/gemm/dev/bin/harness targets/gemm/dev/harness.cu \
//                  -lnvrtc -lcublas -ldl
// Usage: harness [--compile-only] [--arch sm_90a] [--root DIR] [--reps N]
//                [-s MxNxK]... [-c "BM=128,BN=256,BK=32,WM=64,WN=64,STAGES=4,GROUP_M=8[,SPLITK=4]"]...
//        Without -s / -c, built-in shape and config lists are used.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static decltype(&cuModuleLoadData) pModuleLoadData;
static decltype(&cuModuleGetFunction) pModuleGetFunction;
static decltype(&cuFuncSetAttribute) pFuncSetAttribute;
static decltype(&cuLaunchKernel) pLaunchKernel;

#define CU(x)                                                           \
  do {                                                                  \
    CUresult r_ = (x);                                                  \
    if (r_ != CUDA_SUCCESS) {                                           \
      fprintf(stderr, "%s:%d %s: CUresult %d\n", __FILE__, __LINE__, #x, (int)r_); \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

static std::string read_file(const std::string& p) {
  std::ifstream f(p);
  if (!f) { fprintf(stderr, "cannot read %s\n", p.c_str()); exit(1); }
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

typedef std::map<std::string, long long> Params;

static Params parse_cfg(const std::string& s) {
  Params p;
  std::stringstream ss(s);
  std::string kv;
  while (std::getline(ss, kv, ',')) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    p[kv.substr(0, eq)] = atoll(kv.substr(eq + 1).c_str());
  }
  return p;
}
static std::string cfg_name(const Params& p) {
  char b[128];
  long long sk = p.count("SPLITK") ? p.at("SPLITK") : 1;
  snprintf(b, sizeof b, "%lldx%lldx%lld w%lldx%lld s%lld g%lld k%lld", p.at("BM"), p.at("BN"), p.at("BK"),
           p.at("WM"), p.at("WN"), p.at("STAGES"), p.count("GROUP_M") ? p.at("GROUP_M") : 8, sk);
  return b;
}

struct Compiled {
  std::vector<char> cubin;
  std::string log, err;
};

static Compiled compile(const std::string& src, const std::string& name, const Params& defs, const std::string& arch,
                        const std::vector<std::string>& incs) {
  Compiled out;
  std::string full;
  for (auto& kv : defs) full += "#define " + kv.first + " " + std::to_string(kv.second) + "\n";
  full += src;
  nvrtcProgram prog;
  nvrtcCreateProgram(&prog, full.c_str(), name.c_str(), 0, nullptr, nullptr);
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "--std=c++17", "--ptxas-options=-v",
                                   "-default-device"};
  for (auto& i : incs) opts.push_back("-I" + i);
  std::vector<const char*> o;
  for (auto& s : opts) o.push_back(s.c_str());
  nvrtcResult r = nvrtcCompileProgram(prog, (int)o.size(), o.data());
  size_t ls;
  nvrtcGetProgramLogSize(prog, &ls);
  out.log.resize(ls);
  nvrtcGetProgramLog(prog, &out.log[0]);
  if (r != NVRTC_SUCCESS) {
    out.err = nvrtcGetErrorString(r);
  } else {
    size_t cs;
    nvrtcGetCUBINSize(prog, &cs);
    out.cubin.resize(cs);
    nvrtcGetCUBIN(prog, out.cubin.data());
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

static std::string ptxas_summary(const std::string& log) {
  std::string s;
  std::stringstream ss(log);
  std::string line;
  while (std::getline(ss, line)) {
    if (line.find("registers") != std::string::npos || line.find("spill") != std::string::npos ||
        line.find("error") != std::string::npos || line.find("warning") != std::string::npos) {
      auto p = line.find_first_not_of(' ');
      s += "    " + line.substr(p == std::string::npos ? 0 : p) + "\n";
    }
  }
  return s;
}

static const char* kAux = R"(
#include <cuda_bf16.h>
__device__ unsigned long long mix(unsigned long long x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33; return x;
}
extern "C" __global__ void init_normal(__nv_bfloat16* p, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned long long h = mix(seed * 0x9E3779B97F4A7C15ULL + (unsigned long long)i);
    double u1 = ((h >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (double)(mix(h) >> 11) * (1.0 / 9007199254740992.0);
    p[i] = __float2bfloat16_rn((float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)));
  }
}
// acc[0] += sum (out-ref)^2, acc[1] += sum ref^2, acc[2] = max |out-ref| (as bits), acc[3] += #nonfinite
extern "C" __global__ void err_stats(const __nv_bfloat16* out, const double* ref, long long n, unsigned long long* acc) {
  double d2 = 0, r2 = 0, mx = 0; unsigned long long bad = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float o = __bfloat162float(out[i]);
    if (!isfinite(o)) { ++bad; continue; }
    double d = (double)o - ref[i];
    d2 += d * d; r2 += ref[i] * ref[i]; mx = fmax(mx, fabs(d));
  }
  for (int s = 16; s; s >>= 1) {
    d2 += __shfl_down_sync(0xffffffffu, d2, s); r2 += __shfl_down_sync(0xffffffffu, r2, s);
    mx = fmax(mx, __shfl_down_sync(0xffffffffu, mx, s)); bad += __shfl_down_sync(0xffffffffu, bad, s);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd((double*)&acc[0], d2); atomicAdd((double*)&acc[1], r2);
    atomicMax(&acc[2], (unsigned long long)__double_as_longlong(mx)); atomicAdd(&acc[3], bad);
  }
}
)";

struct Variant {
  Params p;
  std::string name;
  Compiled comp;
  CUmodule mod = nullptr;
  CUfunction main = nullptr, reduce = nullptr;
  long long splitk = 1;
};

static long long cdiv(long long a, long long b) { return (a + b - 1) / b; }

int main(int argc, char** argv) {
  bool compile_only = false;
  std::string arch = "sm_90a", root = ".";
  int reps = 20;
  std::vector<std::string> shape_args, cfg_args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--compile-only") compile_only = true;
    else if (a == "--arch") arch = argv[++i];
    else if (a == "--root") root = argv[++i];
    else if (a == "--reps") reps = atoi(argv[++i]);
    else if (a == "-s") shape_args.push_back(argv[++i]);
    else if (a == "-c") cfg_args.push_back(argv[++i]);
  }
  if (cfg_args.empty())
    cfg_args = {
        "BM=128,BN=256,BK=32,WM=64,WN=64,STAGES=4,GROUP_M=8",
        "BM=128,BN=256,BK=64,WM=64,WN=64,STAGES=3,GROUP_M=8",
        "BM=256,BN=128,BK=32,WM=64,WN=64,STAGES=4,GROUP_M=8",
        "BM=256,BN=128,BK=64,WM=64,WN=64,STAGES=3,GROUP_M=8",
        "BM=128,BN=128,BK=32,WM=64,WN=64,STAGES=4,GROUP_M=8",
        "BM=128,BN=128,BK=64,WM=64,WN=64,STAGES=3,GROUP_M=8",
        "BM=128,BN=128,BK=64,WM=64,WN=32,STAGES=4,GROUP_M=8",
        "BM=128,BN=128,BK=32,WM=32,WN=64,STAGES=5,GROUP_M=8",
        "BM=128,BN=256,BK=32,WM=64,WN=64,STAGES=3,GROUP_M=16",
        "BM=256,BN=128,BK=32,WM=64,WN=64,STAGES=3,GROUP_M=1",
        "BM=64,BN=128,BK=64,WM=32,WN=64,STAGES=4,GROUP_M=8",
        "BM=64,BN=64,BK=64,WM=32,WN=32,STAGES=6,GROUP_M=8",
        "BM=64,BN=128,BK=64,WM=32,WN=32,STAGES=6,GROUP_M=8",
        "BM=64,BN=256,BK=64,WM=32,WN=64,STAGES=4,GROUP_M=8",
        "BM=64,BN=128,BK=64,WM=32,WN=64,STAGES=4,GROUP_M=8,SPLITK=2",
        "BM=64,BN=128,BK=64,WM=32,WN=64,STAGES=4,GROUP_M=8,SPLITK=4",
        "BM=64,BN=64,BK=64,WM=32,WN=32,STAGES=6,GROUP_M=8,SPLITK=2",
        "BM=64,BN=64,BK=64,WM=32,WN=32,STAGES=6,GROUP_M=8,SPLITK=4",
        "BM=128,BN=128,BK=64,WM=64,WN=64,STAGES=4,GROUP_M=8,SPLITK=2",
        "BM=64,BN=256,BK=64,WM=32,WN=64,STAGES=4,GROUP_M=8,SPLITK=2",
    };
  if (shape_args.empty())
    shape_args = {"1x64x64",        "127x129x72",      "257x300x520",    "1000x1000x1000", "33x65x17", "5x7x3",
                  "4096x4096x4096", "8192x8192x8192", "128x6144x4096",  "128x28672x4096", "128x4096x14336",
                  "2048x4096x4096", "2048x28672x4096", "8192x6144x4096", "8192x4096x14336"};
  const char* ch = getenv("CUDA_HOME");
  std::string cuda_inc = std::string(ch ? ch : "/usr/local/cuda") + "/include";
  std::vector<std::string> incs = {root + "/targets/gemm", root + "/targets/common", cuda_inc};
  std::string tsrc = read_file(root + "/targets/gemm/gemm_mma.cu");
  std::string rsrc = read_file(root + "/targets/gemm/reference.cu");

  std::vector<Variant> vs(cfg_args.size());
  {
    std::vector<std::thread> th;
    for (size_t i = 0; i < cfg_args.size(); ++i) {
      vs[i].p = parse_cfg(cfg_args[i]);
      vs[i].name = cfg_name(vs[i].p);
      vs[i].splitk = vs[i].p.count("SPLITK") ? vs[i].p["SPLITK"] : 1;
      th.emplace_back([&, i] { vs[i].comp = compile(tsrc, "gemm_mma.cu", vs[i].p, arch, incs); });
    }
    for (auto& t : th) t.join();
  }
  for (auto& v : vs) {
    printf("%-40s %s\n%s", v.name.c_str(), v.comp.err.empty() ? "ok" : v.comp.err.c_str(),
           ptxas_summary(v.comp.log).c_str());
    if (!v.comp.err.empty()) printf("%s\n", v.comp.log.c_str());
  }
  Compiled ref = compile(rsrc, "reference.cu", {}, arch, incs);
  printf("reference %s\n%s", ref.err.empty() ? "ok" : ref.err.c_str(), ptxas_summary(ref.log).c_str());
  Compiled aux = compile(kAux, "aux.cu", {}, arch, incs);
  if (!aux.err.empty()) printf("aux: %s\n", aux.log.c_str());
  fflush(stdout);
  if (compile_only) return 0;

  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!libcuda) { fprintf(stderr, "no libcuda.so.1\n"); return 1; }
  pModuleLoadData = (decltype(pModuleLoadData))dlsym(libcuda, "cuModuleLoadData");
  pModuleGetFunction = (decltype(pModuleGetFunction))dlsym(libcuda, "cuModuleGetFunction");
  pFuncSetAttribute = (decltype(pFuncSetAttribute))dlsym(libcuda, "cuFuncSetAttribute");
  pLaunchKernel = (decltype(pLaunchKernel))dlsym(libcuda, "cuLaunchKernel");
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);

  CUmodule rmod, amod;
  CUfunction fref, finit, ferr;
  CU(pModuleLoadData(&rmod, ref.cubin.data()));
  CU(pModuleGetFunction(&fref, rmod, "gemm_reference"));
  CU(pModuleLoadData(&amod, aux.cubin.data()));
  CU(pModuleGetFunction(&finit, amod, "init_normal"));
  CU(pModuleGetFunction(&ferr, amod, "err_stats"));
  for (auto& v : vs) {
    if (!v.comp.err.empty()) continue;
    CU(pModuleLoadData(&v.mod, v.comp.cubin.data()));
    CU(pModuleGetFunction(&v.main, v.mod, v.splitk > 1 ? "gemm_mma_splitk" : "gemm_mma"));
    if (v.splitk > 1) CU(pModuleGetFunction(&v.reduce, v.mod, "gemm_splitk_reduce"));
    long long smem = v.p["STAGES"] * (v.p["BM"] + v.p["BN"]) * v.p["BK"] * 2;
    CU(pFuncSetAttribute(v.main, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem));
  }

  cublasHandle_t hb;
  if (cublasCreate(&hb) != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "cublasCreate failed\n"); return 1; }
  const size_t flush_bytes = 256ull << 20;
  void* flush;
  CK(cudaMalloc(&flush, flush_bytes));
  unsigned long long* dacc;
  CK(cudaMalloc(&dacc, 4 * sizeof(unsigned long long)));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));

  struct Row { std::string shape, cfg; double err, ms, tflops, ratio; };
  std::vector<Row> table;

  for (auto& sa : shape_args) {
    long long M, N, K;
    if (sscanf(sa.c_str(), "%lldx%lldx%lld", &M, &N, &K) != 3) continue;
    __nv_bfloat16 *a, *b, *c;
    double* cref;
    CK(cudaMalloc(&a, M * K * 2));
    CK(cudaMalloc(&b, N * K * 2));
    CK(cudaMalloc(&c, M * N * 2));
    CK(cudaMalloc(&cref, M * N * 8));
    float* ws = nullptr;
    long long maxsk = 1;
    for (auto& v : vs) maxsk = std::max(maxsk, v.splitk);
    if (maxsk > 1) CK(cudaMalloc(&ws, maxsk * M * N * 4));
    auto launch = [&](CUfunction f, long long gx, long long gy, long long gz, long long bx, long long smem,
                      std::vector<void*> args) {
      CU(pLaunchKernel(f, (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)bx, 1, 1, (unsigned)smem, 0,
                       args.data(), nullptr));
    };
    unsigned long long seed = 1234 + M * 7 + N * 13 + K;
    long long nA = M * K, nB = N * K, nC = M * N;
    unsigned long long s2 = seed + 1;
    launch(finit, 1024, 1, 1, 256, 0, {&a, &nA, &seed});
    launch(finit, 1024, 1, 1, 256, 0, {&b, &nB, &s2});
    CK(cudaMemset(cref, 0xFF, nC * 8));
    CK(cudaEventRecord(e0));
    launch(fref, cdiv(N, 128), cdiv(M, 128), 1, 256, 0, {&a, &b, &cref, &M, &N, &K});
    CK(cudaEventRecord(e1));
    CK(cudaDeviceSynchronize());
    float refms;
    CK(cudaEventElapsedTime(&refms, e0, e1));
    auto errfn = [&]() {
      CK(cudaMemset(dacc, 0, 32));
      launch(ferr, 1024, 1, 1, 256, 0, {&c, &cref, &nC, &dacc});
      unsigned long long h[4];
      CK(cudaMemcpy(h, dacc, 32, cudaMemcpyDeviceToHost));
      double d2, r2, mx;
      memcpy(&d2, &h[0], 8); memcpy(&r2, &h[1], 8); memcpy(&mx, &h[2], 8);
      if (h[3]) return (double)NAN;
      return std::sqrt(d2 / r2);
    };
    auto timeit = [&](auto&& fn) {
      std::vector<float> t;
      for (int i = 0; i < 3; ++i) fn();
      for (int r = 0; r < reps; ++r) {
        CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes));
        CK(cudaEventRecord(e0));
        fn();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      return (double)t[t.size() / 2];
    };
    const double flops = 2.0 * M * N * K;
    // cuBLAS: column-major view C^T[N,M] = (b as col-major [K,N])^T * (a as col-major [K,M])
    float alpha = 1.f, beta = 0.f;
    auto cublas = [&]() {
      cublasStatus_t st = cublasGemmEx(hb, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &alpha, b,
                                       CUDA_R_16BF, (int)K, a, CUDA_R_16BF, (int)K, &beta, c, CUDA_R_16BF,
                                       (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      if (st != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "cublas %d\n", (int)st); exit(1); }
    };
    CK(cudaMemset(c, 0xFF, nC * 2));
    cublas();
    CK(cudaDeviceSynchronize());
    double cberr = errfn();
    double cbms = timeit(cublas);
    CK(cudaDeviceSynchronize());
    printf("\n== %s  ref %.1f ms  cublas err %.2e  %.4f ms  %.1f TFLOP/s\n", sa.c_str(), refms, cberr, cbms,
           flops / cbms * 1e-9);
    table.push_back({sa, "cublas", cberr, cbms, flops / cbms * 1e-9, 1.0});
    for (auto& v : vs) {
      if (!v.main) continue;
      long long BM = v.p["BM"], BN = v.p["BN"], BK = v.p["BK"], WM = v.p["WM"], WN = v.p["WN"];
      long long thr = (BM / WM) * (BN / WN) * 32, smem = v.p["STAGES"] * (BM + BN) * BK * 2;
      auto run = [&]() {
        if (v.splitk == 1) {
          launch(v.main, cdiv(M, BM) * cdiv(N, BN), 1, 1, thr, smem, {&a, &b, &c, &M, &N, &K});
        } else {
          launch(v.main, cdiv(M, BM) * cdiv(N, BN), 1, v.splitk, thr, smem, {&a, &b, &ws, &M, &N, &K});
          launch(v.reduce, cdiv(M * N, 1024), 1, 1, 256, 0, {&ws, &c, &M, &N});
        }
      };
      CK(cudaMemset(c, 0xFF, nC * 2));
      if (ws) CK(cudaMemset(ws, 0xFF, v.splitk * nC * 4));
      run();
      CK(cudaDeviceSynchronize());
      double e1v = errfn();
      double ms = timeit(run);
      CK(cudaDeviceSynchronize());
      double e2v = errfn();
      // err_stats sums with atomics (order varies): compare with a relative tolerance
      const char* flag = (std::fabs(e1v - e2v) <= 1e-6 * std::fabs(e1v) || (std::isnan(e1v) && std::isnan(e2v)))
                             ? "" : "  ERR CHANGED AFTER TIMING";
      printf("  %-40s err %.2e  %.4f ms  %6.1f TFLOP/s  %.2fx cublas%s%s\n", v.name.c_str(), e1v, ms,
             flops / ms * 1e-9, cbms / ms, flag, (std::isnan(e1v) || e1v > 1e-2) ? "  FAIL" : "");
      table.push_back({sa, v.name, e1v, ms, flops / ms * 1e-9, cbms / ms});
      fflush(stdout);
    }
    cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(cref);
    if (ws) cudaFree(ws);
  }
  // summary: best variant per shape
  printf("\n%-18s %-40s %9s %9s %8s %7s\n", "shape", "best", "err", "ms", "TFLOP/s", "x cuBLAS");
  for (size_t i = 0; i < table.size();) {
    size_t j = i + 1, best = (size_t)-1;
    while (j < table.size() && table[j].shape == table[i].shape) {
      if (table[j].err <= 1e-2 && (best == (size_t)-1 || table[j].ms < table[best].ms)) best = j;
      ++j;
    }
    if (best != (size_t)-1)
      printf("%-18s %-40s %9.2e %9.4f %8.1f %7.2f   (cublas %.4f ms)\n", table[best].shape.c_str(),
             table[best].cfg.c_str(), table[best].err, table[best].ms, table[best].tflops, table[best].ratio,
             table[i].ms);
    i = j;
  }
  return 0;
}
