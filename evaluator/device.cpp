// evaluator/device.cpp — context, buffers with guard zones, modules, timing.
#include "evaluator/device.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::evaluator {

std::string DeviceInfo::arch() const {
  std::string a = fmt::format("sm_{}{}", cc_major, cc_minor);
  if (cc_major == 9 || cc_major == 10) a += "a";  // Hopper/Blackwell datacenter features
  return a;
}

int device_count(Driver& d) {
  int n = 0;
  TESSERA_CU(d, cuDeviceGetCount(&n));
  return n;
}

DeviceInfo query_device(Driver& d, int ordinal) {
  DeviceInfo info;
  CUdevice dev;
  TESSERA_CU(d, cuDeviceGet(&dev, ordinal));
  char name[256] = {};
  TESSERA_CU(d, cuDeviceGetName(name, sizeof name, dev));
  info.ordinal = ordinal;
  info.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    TESSERA_CU(d, cuDeviceGetAttribute(&v, a, dev));
    return v;
  };
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.max_smem_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  size_t total = 0;
  TESSERA_CU(d, cuDeviceTotalMem(&total, dev));
  info.total_mem = static_cast<long long>(total);
  info.driver_version = d.version;
  return info;
}

// ---- Buffer ---------------------------------------------------------------

Buffer::Buffer(Device* dev, size_t bytes) : dev_(dev), bytes_(bytes) {
  size_t total = bytes + 2 * kGuard;
  TESSERA_CU(dev_->drv(), cuMemAlloc(&base_, total));
  reset_guards();
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (base_ && dev_) dev_->drv().cuMemFree(base_);
    dev_ = o.dev_;
    base_ = o.base_;
    bytes_ = o.bytes_;
    o.base_ = 0;
    o.dev_ = nullptr;
  }
  return *this;
}

Buffer::~Buffer() {
  if (base_ && dev_) dev_->drv().cuMemFree(base_);
}

void Buffer::reset_guards() {
  TESSERA_CU(dev_->drv(), cuMemsetD8(base_, kGuardByte, kGuard));
  TESSERA_CU(dev_->drv(), cuMemsetD8(base_ + kGuard + bytes_, kGuardByte, kGuard));
}

bool Buffer::guards_intact() const {
  std::vector<unsigned char> g(kGuard);
  for (CUdeviceptr at : {base_, base_ + kGuard + bytes_}) {
    TESSERA_CU(dev_->drv(), cuMemcpyDtoH(g.data(), at, kGuard));
    if (std::any_of(g.begin(), g.end(), [](unsigned char c) { return c != kGuardByte; })) return false;
  }
  return true;
}

std::vector<unsigned char> Buffer::download() const {
  std::vector<unsigned char> out(bytes_);
  if (bytes_) TESSERA_CU(dev_->drv(), cuMemcpyDtoH(out.data(), ptr(), bytes_));
  return out;
}

void Buffer::upload(const void* data, size_t n) {
  if (n > bytes_) throw std::runtime_error("upload larger than the buffer");
  if (n) TESSERA_CU(dev_->drv(), cuMemcpyHtoD(ptr(), data, n));
}

// ---- Module ---------------------------------------------------------------

Module::Module(std::shared_ptr<Driver> drv, const std::string& cubin) : drv_(std::move(drv)) {
  TESSERA_CU(*drv_, cuModuleLoadData(&mod_, cubin.data()));
}

Module::~Module() {
  if (mod_) drv_->cuModuleUnload(mod_);
}

CUfunction Module::function(const std::string& name) {
  if (auto it = fns_.find(name); it != fns_.end()) return it->second;
  CUfunction f = nullptr;
  CUresult r = drv_->cuModuleGetFunction(&f, mod_, name.c_str());
  if (r != CUDA_SUCCESS)
    throw DriverError(
        fmt::format("kernel '{}' not found in the compiled module (is it extern \"C\" __global__?)", name), r);
  fns_[name] = f;
  return f;
}

// ---- Device ---------------------------------------------------------------

Device::Device(std::shared_ptr<Driver> drv, int ordinal) : drv_(std::move(drv)) {
  info_ = query_device(*drv_, ordinal);
  TESSERA_CU(*drv_, cuDeviceGet(&dev_, ordinal));
  TESSERA_CU(*drv_, cuDevicePrimaryCtxRetain(&ctx_, dev_));
  TESSERA_CU(*drv_, cuCtxSetCurrent(ctx_));
  // Device printf's buffer, before any module is loaded: small, so that a kernel that
  // prints from every thread loses lines on the device (the buffer drops what does not
  // fit) instead of handing the host megabytes to write at every synchronization.
  TESSERA_CU(*drv_, cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, kPrintfFifoBytes));
  TESSERA_CU(*drv_, cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  TESSERA_CU(*drv_, cuStreamCreate(&aux_, CU_STREAM_NON_BLOCKING));
  // (the side stream at the greatest priority: a side kernel that the main stream's kernels
  // feed is usually launched first so that it gets its SMs before they fill up)
  int least = 0, greatest = 0;
  TESSERA_CU(*drv_, cuCtxGetStreamPriorityRange(&least, &greatest));
  TESSERA_CU(*drv_, cuStreamCreateWithPriority(&side_, CU_STREAM_NON_BLOCKING, greatest));
  flush_bytes_ = static_cast<size_t>(std::max<long long>(info_.l2_bytes, 1 << 20)) * 2;
  TESSERA_CU(*drv_, cuMemAlloc(&flush_, flush_bytes_));
}

Device::~Device() {
  for (auto e : event_pool_) drv_->cuEventDestroy(e);
  if (flush_) drv_->cuMemFree(flush_);
  if (stream_) drv_->cuStreamDestroy(stream_);
  if (aux_) drv_->cuStreamDestroy(aux_);
  if (side_) drv_->cuStreamDestroy(side_);
  if (ctx_) drv_->cuDevicePrimaryCtxRelease(dev_);
}

void Device::sync() {
  TESSERA_CU(*drv_, cuStreamSynchronize(stream_));
}

void Device::reset_persisting_l2() {
  drv_->cuCtxResetPersistingL2Cache();  // harmless where no carve-out is set
}

void Device::flush_l2() {
  static unsigned value = 0;
  TESSERA_CU(*drv_, cuMemsetD32Async(flush_, ++value, flush_bytes_ / 4, stream_));
}

void Device::launch(CUfunction f, const int grid[3], const int block[3], unsigned smem, void** args) {
  launch(f, grid, block, smem, args, stream_);
}

void Device::launch(CUfunction f, const int grid[3], const int block[3], unsigned smem, void** args, CUstream on) {
  TESSERA_CU(*drv_,
             cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem, on, args, nullptr));
}

void Device::launch_dependent(CUfunction f, const int grid[3], const int block[3], unsigned smem, void** args) {
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg{};
  cfg.gridDimX = grid[0], cfg.gridDimY = grid[1], cfg.gridDimZ = grid[2];
  cfg.blockDimX = block[0], cfg.blockDimY = block[1], cfg.blockDimZ = block[2];
  cfg.sharedMemBytes = smem;
  cfg.hStream = stream_;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  TESSERA_CU(*drv_, cuLaunchKernelEx(&cfg, f, args, nullptr));
}

CUevent Device::record() {
  CUevent e;
  if (!event_pool_.empty()) {
    e = event_pool_.back();
    event_pool_.pop_back();
  } else {
    TESSERA_CU(*drv_, cuEventCreate(&e, CU_EVENT_DEFAULT));
  }
  TESSERA_CU(*drv_, cuEventRecord(e, stream_));
  return e;
}

float Device::elapsed_ms(CUevent a, CUevent b) {
  TESSERA_CU(*drv_, cuEventSynchronize(b));
  float ms = 0;
  TESSERA_CU(*drv_, cuEventElapsedTime(&ms, a, b));
  return ms;
}

void Device::release(CUevent e) {
  event_pool_.push_back(e);
}

}  // namespace tessera::evaluator
