// evaluator/tensor_map.h — the TMA tensor map of a "tmap:NAME:BOX:SWIZZLE" launch argument
// (spec/spec.h, docs/spec-format.md), built with the driver's cuTensorMapEncodeTiled.
#pragma once

#include <cuda.h>

#include "evaluator/driver.h"
#include "spec/spec.h"

namespace tessera::evaluator {

// The tensor map of argument tm over the buffer at ptr, which holds tensor t with element
// type dt: dimensions t's shape (evaluated with b) innermost first, contiguous; tm's box
// and swizzle; zeros for box elements outside the tensor. Throws DriverError naming the
// argument when the driver refuses (an unaligned address or stride, a box too large).
CUtensorMap encode_tensor_map(Driver& d, CUdeviceptr ptr, spec::DType dt, const spec::Tensor& t,
                              const spec::TensorMapArg& tm, const spec::Bindings& b);

}  // namespace tessera::evaluator
