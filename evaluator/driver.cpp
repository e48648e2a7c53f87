// evaluator/driver.cpp — dlopen of libcuda.so.1 and error reporting.
#include "evaluator/driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace tessera::evaluator {

#define TESSERA_STR2(x) #x
#define TESSERA_STR(x) TESSERA_STR2(x)

std::shared_ptr<Driver> Driver::load(std::string* why) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    if (why) *why = fmt::format("no CUDA driver: libcuda.so.1 could not be loaded ({})", dlerror());
    return nullptr;
  }
  auto d = std::make_shared<Driver>();
  d->handle = h;
  bool ok = true;
  std::string missing;
#define TESSERA_LOAD(name)                                                    \
  d->name = reinterpret_cast<decltype(d->name)>(dlsym(h, TESSERA_STR(name))); \
  if (!d->name) {                                                             \
    ok = false;                                                               \
    missing += std::string(missing.empty() ? "" : ", ") + TESSERA_STR(name);  \
  }
  TESSERA_DRIVER_FUNCTIONS(TESSERA_LOAD)
#undef TESSERA_LOAD
  if (!ok) {
    if (why) *why = "the CUDA driver is too old: missing " + missing;
    return nullptr;
  }
  CUresult r = d->cuInit(0);
  if (r != CUDA_SUCCESS) {
    if (why) *why = "cuInit failed: " + d->error_text(r) + " (is a GPU visible to this process?)";
    return nullptr;
  }
  d->cuDriverGetVersion(&d->version);
  return d;
}

Driver::~Driver() {
  // The library stays loaded: the driver does not support being unloaded while
  // contexts may still be torn down at exit.
}

std::string Driver::error_text(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  return fmt::format("{} ({})", name ? name : "CUDA_ERROR", text ? text : "unknown");
}

void check(const Driver& d, CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw DriverError(fmt::format("{} failed: {}", what, d.error_text(r)), r);
}

bool is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

}  // namespace tessera::evaluator
