// export/cpp_runtime.cpp — the fixed part of every generated tessera_<op>.cpp (format
// cpp): the driver loaded with dlopen, per-context modules and side streams, argument
// slots, tensor maps, and errors as codes with a thread-local message. Written as text
// here (one raw string) because it is compiled only inside exported packages; the CPU
// tests compile and link a generated package with it.
#include "export/cpp_runtime.h"

namespace tessera::exporter {

const char* cpp_runtime_source() {
  // The raw string is the runtime as shipped, formatted by hand: clang-format (Google
  // style) formats an R"CPP(...)CPP" string as C++, indenting all of it under the return
  // and wrapping TESSERA_DRIVER differently on every pass (clang-format 14).
  // clang-format off
  return R"CPP(
#include <dlfcn.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace {

constexpr int kTesseraMaxImages = 8;
constexpr int kTesseraMaxKernels = 16;

std::string& tessera_error_text() {
  thread_local std::string text;
  return text;
}

int tessera_fail(int code, const char* format, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  tessera_error_text() = buf;
  return code;
}

// The driver's entry points (a macro of cuda.h may rename one to its _v2: the names are
// taken after expansion).
#define TESSERA_STR2(x) #x
#define TESSERA_STR(x) TESSERA_STR2(x)
#define TESSERA_DRIVER(X) X(cuInit) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuDeviceGetAttribute) \
  X(cuModuleLoadData) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx) \
  X(cuGetErrorName) \
  X(cuGetErrorString) X(cuTensorMapEncodeTiled) X(cuStreamCreateWithPriority) X(cuCtxGetStreamPriorityRange) \
  X(cuEventCreate) X(cuEventRecord) X(cuStreamWaitEvent)

struct TesseraDriver {
  bool loaded = false;
  std::string why;
#define TESSERA_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TESSERA_DRIVER(TESSERA_MEMBER)
#undef TESSERA_MEMBER
};

const TesseraDriver& tessera_driver() {
  static const TesseraDriver d = [] {
    TesseraDriver d;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      d.why = std::string("no GPU driver: libcuda.so.1 could not be loaded (") + dlerror() + ")";
      return d;
    }
#define TESSERA_LOAD(fn)                                                     \
  d.fn = reinterpret_cast<decltype(d.fn)>(dlsym(h, TESSERA_STR(fn)));        \
  if (!d.fn && d.why.empty()) d.why = "libcuda.so.1 lacks " TESSERA_STR(fn) " (driver too old)";
    TESSERA_DRIVER(TESSERA_LOAD)
#undef TESSERA_LOAD
    if (d.why.empty() && d.cuInit(0) != CUDA_SUCCESS) d.why = "no GPU: cuInit failed";
    d.loaded = d.why.empty();
    return d;
  }();
  return d;
}

int tessera_cuda(CUresult r, const char* what) {
  const char *name = "?", *text = "?";
  tessera_driver().cuGetErrorName(r, &name);
  tessera_driver().cuGetErrorString(r, &text);
  bool no_image = r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_PTX ||
                  r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_IMAGE;
  return tessera_fail(no_image ? 4 : 3, "%s: %s (%s)", what, name, text);
}

struct TesseraImage {
  const char* arch;
  const unsigned char* data;
  size_t size;
};

struct TesseraCandidate {
  const char* name;
  TesseraImage images[kTesseraMaxImages];
  int n_images;
  const unsigned char* ptx;  // null when none was packed
  const char* ptx_arch;
  int n_kernels;
  const char* kernels[kTesseraMaxKernels];
};

struct TesseraModule {
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;  // one per launch of the plan
};

// What a CUDA context needs: its device's SM count and architecture, the modules
// loaded in it, the shared-memory limits raised, and the side stream of side launches.
struct TesseraContext {
  int sms = 0;
  std::string arch;
  std::mutex mu;
  std::map<size_t, std::unique_ptr<TesseraModule>> modules;
  std::map<CUfunction, long long> smem_set;
  std::mutex side_mu;  // side launches of concurrent calls take turns
  CUstream side = nullptr;
  CUevent fork = nullptr, join = nullptr;
};

int tessera_context(TesseraContext** out) {
  const TesseraDriver& d = tessera_driver();
  if (!d.loaded) return tessera_fail(1, "%s", d.why.c_str());
  CUcontext ctx = nullptr;
  if (d.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
    return tessera_fail(1, "no current CUDA context in the calling thread (make one current first, e.g. "
                           "cudaSetDevice, or cuDevicePrimaryCtxRetain and cuCtxSetCurrent)");
  static std::mutex mu;
  static std::map<CUcontext, std::unique_ptr<TesseraContext>> all;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = all[ctx];
  if (!slot) {
    auto cx = std::make_unique<TesseraContext>();
    CUdevice dev;
    int major = 0, minor = 0;
    if (CUresult r = d.cuCtxGetDevice(&dev)) return tessera_cuda(r, "cuCtxGetDevice");
    d.cuDeviceGetAttribute(&cx->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    cx->arch = "sm_" + std::to_string(major) + std::to_string(minor) + (major == 9 || major == 10 ? "a" : "");
    slot = std::move(cx);
  }
  *out = slot.get();
  return 0;
}

// The candidate's module in this context, loaded at its first call: the cubin for the
// device's architecture, else the PTX (which the driver compiles for it).
int tessera_module(TesseraContext& cx, const TesseraCandidate& c, size_t index, TesseraModule** out) {
  std::lock_guard<std::mutex> lock(cx.mu);
  auto& slot = cx.modules[index];
  if (!slot) {
    const unsigned char* image = nullptr;
    std::string packed;
    for (int i = 0; i < c.n_images; ++i) {
      packed += std::string(i ? ", " : "") + c.images[i].arch;
      if (cx.arch == c.images[i].arch) image = c.images[i].data;
    }
    if (!image) image = c.ptx;
    if (!image)
      return tessera_fail(4, "candidate %s has no kernel image for %s (packed: %s; no PTX)", c.name, cx.arch.c_str(),
                          packed.c_str());
    auto m = std::make_unique<TesseraModule>();
    std::string what = std::string("loading candidate ") + c.name + " on " + cx.arch +
                       (image == c.ptx ? std::string(" from PTX ") + c.ptx_arch : std::string(""));
    if (CUresult r = tessera_driver().cuModuleLoadData(&m->module, image)) return tessera_cuda(r, what.c_str());
    for (int k = 0; k < c.n_kernels; ++k) {
      CUfunction f = nullptr;
      if (CUresult r = tessera_driver().cuModuleGetFunction(&f, m->module, c.kernels[k]))
        return tessera_cuda(r, c.kernels[k]);
      m->functions.push_back(f);
    }
    slot = std::move(m);
  }
  *out = slot.get();
  return 0;
}

bool tessera_count(double v, long long* out) {
  double r = std::round(v);
  if (!std::isfinite(v) || std::fabs(v - r) > 1e-9) return false;
  *out = static_cast<long long>(r);
  return true;
}

struct TesseraStep {
  CUfunction f = nullptr;
  long long grid[3] = {0, 0, 0}, block[3] = {1, 1, 1}, smem = 0;
  bool live() const { return grid[0] > 0 && grid[1] > 0 && grid[2] > 0; }  // (a grid <= 0: nothing to do here)
};

// A kernel launched twice gets the larger of its two shared-memory needs, set once.
int tessera_raise_smem(TesseraContext& cx, const TesseraStep* steps, int n) {
  std::lock_guard<std::mutex> lock(cx.mu);
  for (int i = 0; i < n; ++i) {
    if (!steps[i].live() || steps[i].smem <= 48 * 1024) continue;
    long long& set = cx.smem_set[steps[i].f];
    if (set >= steps[i].smem) continue;
    if (CUresult r = tessera_driver().cuFuncSetAttribute(steps[i].f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                         static_cast<int>(steps[i].smem)))
      return tessera_cuda(r, "cuFuncSetAttribute (dynamic shared memory)");
    set = steps[i].smem;
  }
  return 0;
}

struct alignas(64) TesseraSlot {
  unsigned char bytes[128];  // a tensor map is passed by value: 128 bytes, 64-aligned
};

template <class T>
void tessera_put(TesseraSlot& s, T v) {
  static_assert(sizeof(T) <= sizeof(TesseraSlot), "argument too large");
  std::memcpy(s.bytes, &v, sizeof v);
}

// dependent: a step with "pdl" in its plan, launched as a programmatic dependent of the
// kernel before it on `stream` (its kernel waits for that one itself).
int tessera_run(const TesseraStep& s, CUstream stream, void** params, bool dependent = false) {
  for (int d = 0; d < 3; ++d)
    if (s.grid[d] > 0x7fffffffLL || s.block[d] <= 0 || s.block[d] > 1024)
      return tessera_fail(2, "grid or block out of range at this shape");
  if (dependent) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = static_cast<unsigned>(s.grid[0]), cfg.gridDimY = static_cast<unsigned>(s.grid[1]);
    cfg.gridDimZ = static_cast<unsigned>(s.grid[2]);
    cfg.blockDimX = static_cast<unsigned>(s.block[0]), cfg.blockDimY = static_cast<unsigned>(s.block[1]);
    cfg.blockDimZ = static_cast<unsigned>(s.block[2]);
    cfg.sharedMemBytes = static_cast<unsigned>(s.smem);
    cfg.hStream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    CUresult r = tessera_driver().cuLaunchKernelEx(&cfg, s.f, params, nullptr);
    return r ? tessera_cuda(r, "cuLaunchKernelEx (programmatic dependent)") : 0;
  }
  CUresult r = tessera_driver().cuLaunchKernel(
      s.f, static_cast<unsigned>(s.grid[0]), static_cast<unsigned>(s.grid[1]), static_cast<unsigned>(s.grid[2]),
      static_cast<unsigned>(s.block[0]), static_cast<unsigned>(s.block[1]), static_cast<unsigned>(s.block[2]),
      static_cast<unsigned>(s.smem), stream, params, nullptr);
  return r ? tessera_cuda(r, "cuLaunchKernel") : 0;
}

// Side launches: the side stream waits for what `stream` holds so far (fork) and
// `stream` waits for the side launches at the end (join); both are events, so they
// are captured into CUDA graphs too.
[[maybe_unused]] int tessera_fork(TesseraContext& cx, CUstream stream) {
  const TesseraDriver& d = tessera_driver();
  if (!cx.side) {
    int least = 0, greatest = 0;
    d.cuCtxGetStreamPriorityRange(&least, &greatest);
    if (CUresult r = d.cuStreamCreateWithPriority(&cx.side, CU_STREAM_NON_BLOCKING, greatest))
      return tessera_cuda(r, "cuStreamCreateWithPriority");
    if (CUresult r = d.cuEventCreate(&cx.fork, CU_EVENT_DISABLE_TIMING)) return tessera_cuda(r, "cuEventCreate");
    if (CUresult r = d.cuEventCreate(&cx.join, CU_EVENT_DISABLE_TIMING)) return tessera_cuda(r, "cuEventCreate");
  }
  if (CUresult r = d.cuEventRecord(cx.fork, stream)) return tessera_cuda(r, "cuEventRecord (fork)");
  if (CUresult r = d.cuStreamWaitEvent(cx.side, cx.fork, 0)) return tessera_cuda(r, "cuStreamWaitEvent (fork)");
  return 0;
}

[[maybe_unused]] int tessera_join(TesseraContext& cx, CUstream stream) {
  const TesseraDriver& d = tessera_driver();
  if (CUresult r = d.cuEventRecord(cx.join, cx.side)) return tessera_cuda(r, "cuEventRecord (join)");
  if (CUresult r = d.cuStreamWaitEvent(stream, cx.join, 0)) return tessera_cuda(r, "cuStreamWaitEvent (join)");
  return 0;
}

// A "tmap:" argument: dimensions innermost first, contiguous, zeros outside the tensor.
[[maybe_unused]] int tessera_encode_tmap(TesseraContext&, CUtensorMap* m, CUtensorMapDataType type, size_t elem_bytes, int rank,
                        const double* dims_in, const unsigned* box_in, int swizzle, CUdeviceptr ptr) {
  cuuint64_t dims[5], strides[5];
  cuuint32_t box[5], estr[5];
  cuuint64_t stride = elem_bytes;
  for (int i = 0; i < rank; ++i) {
    long long v = 0;
    if (!tessera_count(dims_in[i], &v)) return tessera_fail(2, "tensor map: a dimension is not a count");
    dims[i] = static_cast<cuuint64_t>(v < 1 ? 1 : v);
    if (i > 0) strides[i - 1] = stride;
    stride *= dims[i];
    box[i] = box_in[i];
    estr[i] = 1;
  }
  CUtensorMapSwizzle sw = swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                          : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                          : swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                          : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUresult r = tessera_driver().cuTensorMapEncodeTiled(
      m, type, static_cast<cuuint32_t>(rank), reinterpret_cast<void*>(ptr), dims, strides, box, estr,
      CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r ? tessera_cuda(r, "cuTensorMapEncodeTiled") : 0;
}

}  // namespace
)CPP";
  // clang-format on
}

}  // namespace tessera::exporter
