// evaluator/cublas.cpp — the handful of cuBLAS entry points tessera uses.
#include "evaluator/cublas.h"

#include <cublas_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <stdexcept>

namespace tessera::evaluator {

namespace {
using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using GetVersionFn = cublasStatus_t (*)(cublasHandle_t, int*);
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
}  // namespace

std::unique_ptr<Cublas> Cublas::load(CUstream stream, std::string* why) {
  void* lib = nullptr;
  for (const char* n : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
    if ((lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib) {
    if (why) *why = "cuBLAS not found (libcublas.so.13/.12)";
    return nullptr;
  }
  auto create = reinterpret_cast<CreateFn>(dlsym(lib, "cublasCreate_v2"));
  auto set_stream = reinterpret_cast<SetStreamFn>(dlsym(lib, "cublasSetStream_v2"));
  auto get_version = reinterpret_cast<GetVersionFn>(dlsym(lib, "cublasGetVersion_v2"));
  std::unique_ptr<Cublas> c(new Cublas());
  c->lib_ = lib;
  c->gemm_ex_ = dlsym(lib, "cublasGemmEx");
  c->destroy_ = dlsym(lib, "cublasDestroy_v2");
  if (!create || !set_stream || !c->gemm_ex_ || !c->destroy_) {
    if (why) *why = "cuBLAS lacks cublasCreate_v2/cublasGemmEx";
    return nullptr;
  }
  cublasHandle_t h = nullptr;
  if (create(&h) != CUBLAS_STATUS_SUCCESS) {
    if (why) *why = "cublasCreate failed";
    return nullptr;
  }
  c->handle_ = h;
  set_stream(h, reinterpret_cast<cudaStream_t>(stream));
  int v = 0;
  if (get_version && get_version(h, &v) == CUBLAS_STATUS_SUCCESS) c->version_ = std::to_string(v);
  return c;
}

Cublas::~Cublas() {
  if (handle_ && destroy_) reinterpret_cast<DestroyFn>(destroy_)(static_cast<cublasHandle_t>(handle_));
}

void Cublas::gemm_bf16(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, long long M, long long N, long long K) {
  // Column-major view: C^T[N,M] = op(B)^T... with b[N,K] row-major = col-major K×N, transposed;
  // a[M,K] row-major = col-major K×M, not transposed. The "TN" case cuBLAS is fastest at.
  float alpha = 1.0f, beta = 0.0f;
  auto gemm = reinterpret_cast<GemmExFn>(gemm_ex_);
  cublasStatus_t s =
      gemm(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
           static_cast<int>(K), &alpha, reinterpret_cast<const void*>(b), CUDA_R_16BF, static_cast<int>(K),
           reinterpret_cast<const void*>(a), CUDA_R_16BF, static_cast<int>(K), &beta, reinterpret_cast<void*>(c),
           CUDA_R_16BF, static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("cublasGemmEx failed (status {})", static_cast<int>(s)));
}

}  // namespace tessera::evaluator
