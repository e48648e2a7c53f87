// tessera_@@CNAME@@_binding.cpp — the entry point of tessera's FlashInfer-Bench Solution for
// @@DEFINITION@@ (binding "torch", destination-passing style):
//
//   run(@@SIGNATURE@@)
//
// checks the tensors (devices, dtypes, shapes from the symbols read off the inputs,
// contiguity), takes the scratch from PyTorch's allocator and launches tessera's kernels
// on the current stream through tessera_@@CNAME@@.cpp, the C ABI library that `tessera
// export` wrote (the kernel images are embedded there, compiled by NVRTC for @@ARCHS@@;
// their CUDA sources are under kernels/, named .cuh so that the builder leaves them).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>

#include <cmath>
#include <vector>

#include "tessera_@@CNAME@@.h"

namespace {

@@HELPERS@@
void expect(const torch::Tensor& t, const char* name, at::ScalarType dtype, const std::vector<int64_t>& shape) {
  TORCH_CHECK(t.is_cuda(), "tessera @@OP@@: ", name, " must be a CUDA tensor, it is on ", t.device());
  TORCH_CHECK(t.scalar_type() == dtype, "tessera @@OP@@: ", name, " must be ", dtype, ", got ", t.scalar_type());
  TORCH_CHECK(t.sizes() == at::IntArrayRef(shape), "tessera @@OP@@: ", name, " has shape ", t.sizes(), ", expected ",
              at::IntArrayRef(shape));
  TORCH_CHECK(t.is_contiguous(), "tessera @@OP@@: ", name, " must be contiguous");
}

CUdeviceptr ptr(const torch::Tensor& t) { return reinterpret_cast<CUdeviceptr>(t.data_ptr()); }

}  // namespace

void run(@@PARAMS@@) {
@@SYMBOLS@@
@@CHECKS@@
  const c10::cuda::CUDAGuard guard(@@FIRST@@.device());
  tessera_@@CNAME@@_args a{};
@@FIELDS@@
  const size_t bytes = tessera_@@CNAME@@_scratch_bytes(&a);
  torch::Tensor scratch;
  if (bytes) {
    scratch = torch::empty({static_cast<int64_t>(bytes)}, @@FIRST@@.options().dtype(torch::kUInt8));
    a.scratch = ptr(scratch);
  }
  const int rc = tessera_@@CNAME@@_launch(&a, reinterpret_cast<CUstream>(at::cuda::getCurrentCUDAStream().stream()));
  TORCH_CHECK(rc == 0, "tessera @@OP@@: ", tessera_@@CNAME@@_error());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("run", &run, "tessera's @@OP@@ (destination-passing: the outputs are the last arguments)");
}
