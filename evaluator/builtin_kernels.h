// evaluator/builtin_kernels.h — the evaluator's own device code (input
// generators), compiled with NVRTC for the worker's GPU at start-up.
#pragma once

namespace tessera::evaluator {

// CUDA source: extern "C" kernels tessera_fill_<dist>_<dtype>(T* p, long long n,
// unsigned long long seed, double a, double b), dist in {normal, uniform, randint}.
extern const char* const kBuiltinKernelSource;

}  // namespace tessera::evaluator
