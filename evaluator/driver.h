// evaluator/driver.h — the CUDA driver API, loaded at run time.
//
// libcuda.so.1 exists only where there is a GPU driver. tessera opens it with
// dlopen so that the same binary starts on a machine without a GPU, says so
// plainly, and still compiles and checks variants there. Only the types come
// from cuda.h; every entry point is a pointer filled from dlsym.
#pragma once

#include <cuda.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace tessera::evaluator {

#define TESSERA_DRIVER_FUNCTIONS(X) \
  X(cuInit)                         \
  X(cuDriverGetVersion)             \
  X(cuGetErrorString)               \
  X(cuGetErrorName)                 \
  X(cuDeviceGetCount)               \
  X(cuDeviceGet)                    \
  X(cuDeviceGetName)                \
  X(cuDeviceGetAttribute)           \
  X(cuDeviceTotalMem)               \
  X(cuDevicePrimaryCtxRetain)       \
  X(cuDevicePrimaryCtxRelease)      \
  X(cuCtxSetCurrent)                \
  X(cuCtxSynchronize)               \
  X(cuCtxSetLimit)                  \
  X(cuCtxResetPersistingL2Cache)    \
  X(cuModuleLoadData)               \
  X(cuModuleUnload)                 \
  X(cuModuleGetFunction)            \
  X(cuFuncSetAttribute)             \
  X(cuFuncGetAttribute)             \
  X(cuLaunchKernel)                 \
  X(cuLaunchKernelEx)               \
  X(cuMemAlloc)                     \
  X(cuMemFree)                      \
  X(cuMemGetInfo)                   \
  X(cuMemcpyHtoD)                   \
  X(cuMemcpyDtoH)                   \
  X(cuMemcpyDtoDAsync)              \
  X(cuMemsetD8)                     \
  X(cuMemsetD8Async)                \
  X(cuMemsetD16)                    \
  X(cuMemsetD32)                    \
  X(cuMemsetD32Async)               \
  X(cuStreamCreate)                 \
  X(cuStreamCreateWithPriority)     \
  X(cuCtxGetStreamPriorityRange)    \
  X(cuStreamDestroy)                \
  X(cuStreamSynchronize)            \
  X(cuEventCreate)                  \
  X(cuEventDestroy)                 \
  X(cuEventRecord)                  \
  X(cuEventSynchronize)             \
  X(cuEventElapsedTime)             \
  X(cuEventRecordWithFlags)         \
  X(cuStreamWaitEvent)              \
  X(cuStreamBeginCapture)           \
  X(cuStreamEndCapture)             \
  X(cuGraphInstantiateWithFlags)    \
  X(cuGraphLaunch)                  \
  X(cuGraphExecDestroy)             \
  X(cuGraphDestroy)                 \
  X(cuTensorMapEncodeTiled)

struct Driver {
#define TESSERA_DECLARE(name) decltype(&::name) name = nullptr;
  TESSERA_DRIVER_FUNCTIONS(TESSERA_DECLARE)
#undef TESSERA_DECLARE
  void* handle = nullptr;
  int version = 0;  // e.g. 13000

  // Loads libcuda.so.1 and cuInit(0). On failure returns null and sets why.
  static std::shared_ptr<Driver> load(std::string* why);
  ~Driver();
  std::string error_text(CUresult r) const;
};

// Thrown by check(); carries the failing call and the driver's words.
struct DriverError : std::runtime_error {
  CUresult code;
  DriverError(const std::string& what, CUresult c) : std::runtime_error(what), code(c) {}
};

void check(const Driver& d, CUresult r, const char* what);
#define TESSERA_CU(drv, call) ::tessera::evaluator::check((drv), (drv).call, #call)

// Errors after which the context is unusable and the worker must restart.
bool is_sticky(CUresult r);

}  // namespace tessera::evaluator
