// evaluator/ceilings.h — the device's measured ceilings for the roofline:
// device-to-device copy bandwidth and the bf16 tensor-core rate (cuBLAS).
#pragma once

#include <string>

#include "evaluator/device.h"

namespace tessera::evaluator {

struct Ceilings {
  double copy_bytes_per_s = 0;  // read + write bytes per second
  double bf16_flops_per_s = 0;  // dense bf16 matrix product, fp32 accumulation
  std::string note;             // what could not be measured, if anything
};

// Takes a few seconds: a 2 GiB copy repeated, and an 8192³ bf16 GEMM repeated.
Ceilings measure_ceilings(Device& dev);

}  // namespace tessera::evaluator
