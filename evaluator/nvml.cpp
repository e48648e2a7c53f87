// evaluator/nvml.cpp — NVML, loaded at run time (evaluator/nvml.h).
#include "evaluator/nvml.h"

#include <dlfcn.h>

namespace tessera::evaluator {

namespace {
// nvmlDeviceGetHandleByIndex_v2 handle of a GPU, or null when NVML is absent.
void* nvml_device(int ordinal, void** lib_out) {
  static void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  static bool inited = false;
  *lib_out = lib;
  if (!lib) return nullptr;
  if (!inited) {
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    if (!init || init() != 0) return nullptr;
    inited = true;
  }
  auto handle = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  void* h = nullptr;
  if (!handle || handle(static_cast<unsigned>(ordinal), &h) != 0) return nullptr;
  return h;
}
}  // namespace

double sm_clock_mhz(int ordinal) {
  void* lib = nullptr;
  void* h = nvml_device(ordinal, &lib);
  auto clock = lib ? reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo")) : nullptr;
  unsigned mhz = 0;
  if (!h || !clock || clock(h, 1 /* NVML_CLOCK_SM */, &mhz) != 0) return 0;
  return mhz;
}

unsigned long long clock_event_reasons(int ordinal) {
  void* lib = nullptr;
  void* h = nvml_device(ordinal, &lib);
  if (!h || !lib) return 0;
  auto get =
      reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!get)
    get =
        reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  unsigned long long r = 0;
  if (!get || get(h, &r) != 0) return 0;
  return r;
}

double gpu_temperature_c(int ordinal) {
  void* lib = nullptr;
  void* h = nvml_device(ordinal, &lib);
  auto temp = lib ? reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetTemperature")) : nullptr;
  unsigned c = 0;
  if (!h || !temp || temp(h, 0 /* NVML_TEMPERATURE_GPU */, &c) != 0) return 0;
  return c;
}

}  // namespace tessera::evaluator
