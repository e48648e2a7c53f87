// evaluator/tensor_map.cpp — see tensor_map.h.
#include "evaluator/tensor_map.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::evaluator {

// A "tmap:" launch argument's CUtensorMap over the buffer at ptr (tensor t, element type
// dt): dimensions t's shape innermost first, contiguous, box and swizzle as the argument
// says, zeros outside the tensor.
CUtensorMap encode_tensor_map(Driver& d, CUdeviceptr ptr, spec::DType dt, const spec::Tensor& t,
                              const spec::TensorMapArg& tm, const spec::Bindings& b) {
  const int rank = static_cast<int>(t.shape.size());
  cuuint64_t dims[5], strides[5];
  cuuint32_t box[5], estr[5];
  cuuint64_t stride = spec::dtype_size(dt);
  for (int i = 0; i < rank; ++i) {
    dims[i] = static_cast<cuuint64_t>(std::max(1LL, spec::eval_int(t.shape[rank - 1 - i], b)));
    if (i > 0) strides[i - 1] = stride;  // bytes from one index of dimension i to the next
    stride *= dims[i];
    box[i] = static_cast<cuuint32_t>(tm.box[i]);
    estr[i] = 1;
  }
  CUtensorMapDataType ty = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  switch (dt) {
    case spec::DType::bf16:
      ty = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
      break;
    case spec::DType::f16:
      ty = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
      break;
    case spec::DType::f32:
      ty = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
      break;
    case spec::DType::f64:
      ty = CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
      break;
    case spec::DType::i32:
      ty = CU_TENSOR_MAP_DATA_TYPE_INT32;
      break;
    case spec::DType::i64:
      ty = CU_TENSOR_MAP_DATA_TYPE_INT64;
      break;
  }
  const CUtensorMapSwizzle sw = tm.swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                : tm.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                : tm.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                   : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMap m;
  check(d,
        d.cuTensorMapEncodeTiled(&m, ty, static_cast<cuuint32_t>(rank), reinterpret_cast<void*>(ptr), dims, strides,
                                 box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        fmt::format("cuTensorMapEncodeTiled ({}: tmap:{})", spec::dtype_name(dt), tm.tensor).c_str());
  return m;
}

}  // namespace tessera::evaluator
