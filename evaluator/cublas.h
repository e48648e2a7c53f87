// evaluator/cublas.h — cuBLAS loaded at run time, for the gemm baseline and the
// tensor-core ceiling. Like the driver, it is opened with dlopen so that the
// binary starts where cuBLAS is absent.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

namespace tessera::evaluator {

class Cublas {
 public:
  // Null (with why) when libcublas cannot be loaded or initialised.
  static std::unique_ptr<Cublas> load(CUstream stream, std::string* why);
  ~Cublas();
  // Row-major C[M,N] (bf16) = A[M,K] (bf16, row-major) · B, where B is given as
  // b[N,K] row-major (column-major K×N); fp32 accumulation. Asynchronous on the stream.
  void gemm_bf16(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, long long M, long long N, long long K);
  std::string version() const { return version_; }

 private:
  Cublas() = default;
  void* lib_ = nullptr;
  void* handle_ = nullptr;
  void* gemm_ex_ = nullptr;
  void* destroy_ = nullptr;
  std::string version_;
};

}  // namespace tessera::evaluator
