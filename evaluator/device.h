// evaluator/device.h — one GPU as the evaluator sees it: its context and
// stream, loaded modules, guarded buffers, L2 flushing and event timing.
//
// Every buffer has guard zones before and after it filled with a known byte;
// a changed guard means an out-of-bounds write by whatever ran last.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "evaluator/driver.h"

namespace tessera::evaluator {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  long long l2_bytes = 0;
  long long total_mem = 0;
  int max_smem_optin = 0;  // bytes per block with opt-in
  int driver_version = 0;
  std::string arch() const;  // e.g. sm_90a
};

class Device;

// A device allocation with guard zones. ptr() is the usable start.
class Buffer {
 public:
  static constexpr size_t kGuard = 4096;
  static constexpr unsigned char kGuardByte = 0xA5;
  Buffer() = default;
  Buffer(Device* dev, size_t bytes);
  ~Buffer();
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  CUdeviceptr ptr() const { return base_ + kGuard; }
  size_t bytes() const { return bytes_; }
  bool guards_intact() const;  // false: something wrote outside [ptr, ptr+bytes)
  void reset_guards();
  std::vector<unsigned char> download() const;
  void upload(const void* data, size_t n);

 private:
  Device* dev_ = nullptr;
  CUdeviceptr base_ = 0;
  size_t bytes_ = 0;
};

class Module {
 public:
  Module(std::shared_ptr<Driver> drv, const std::string& cubin);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  CUfunction function(const std::string& name);  // throws with the name if missing

 private:
  std::shared_ptr<Driver> drv_;
  CUmodule mod_ = nullptr;
  std::map<std::string, CUfunction> fns_;
};

class Device {
 public:
  // Device printf's buffer per context (the driver's default is 1 MiB).
  static constexpr size_t kPrintfFifoBytes = 64 * 1024;
  Device(std::shared_ptr<Driver> drv, int ordinal);
  ~Device();
  const DeviceInfo& info() const { return info_; }
  Driver& drv() { return *drv_; }
  std::shared_ptr<Driver> driver() { return drv_; }
  CUstream stream() const { return stream_; }
  // A second stream, to release work the main stream holds behind a gate.
  CUstream aux_stream() const { return aux_; }
  // A third, for a program's side launches (spec::KernelLaunch::stream): never the gate's;
  // at the greatest stream priority.
  CUstream side_stream() const { return side_; }
  void sync();  // stream synchronize, throws on error

  // Evicts L2: overwrites a buffer twice the L2 size, as a stream operation
  // (so it can be captured into a graph).
  void flush_l2();
  // Resets persisting L2 lines. A context-wide call, not a stream operation (it
  // cannot be captured into a graph): done once before a timing loop.
  void reset_persisting_l2();
  // The buffer flush_l2 overwrites (for a flush by reading it instead).
  CUdeviceptr flush_buffer() const { return flush_; }
  size_t flush_bytes() const { return flush_bytes_; }
  // Launch and event timing on this device's stream (launch: or on `on`).
  void launch(CUfunction f, const int grid[3], const int block[3], unsigned smem, void** args);
  void launch(CUfunction f, const int grid[3], const int block[3], unsigned smem, void** args, CUstream on);
  // On this device's stream as a programmatic dependent of the kernel before it (spec.h's
  // KernelLaunch::pdl): its blocks may start before that kernel ends and must wait for it.
  void launch_dependent(CUfunction f, const int grid[3], const int block[3], unsigned smem, void** args);
  CUevent record();
  float elapsed_ms(CUevent a, CUevent b);
  void release(CUevent e);

 private:
  std::shared_ptr<Driver> drv_;
  DeviceInfo info_;
  CUcontext ctx_ = nullptr;
  CUdevice dev_ = 0;
  CUstream stream_ = nullptr, aux_ = nullptr, side_ = nullptr;
  CUdeviceptr flush_ = 0;
  size_t flush_bytes_ = 0;
  std::vector<CUevent> event_pool_;
};

int device_count(Driver& d);
DeviceInfo query_device(Driver& d, int ordinal);

}  // namespace tessera::evaluator
