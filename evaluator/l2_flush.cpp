// evaluator/l2_flush.cpp — the two L2 flushes (evaluator/l2_flush.h).
#include "evaluator/l2_flush.h"

#include <stdexcept>

namespace tessera::evaluator {

namespace {

class WriteFlush : public L2Evictor {
 public:
  explicit WriteFlush(Device& dev) : dev_(dev) {}
  void evict() override { dev_.flush_l2(); }

 private:
  Device& dev_;
};

class ReadFlush : public L2Evictor {
 public:
  ReadFlush(Device& dev, Module& builtins) : dev_(dev), builtins_(builtins) {}
  void evict() override {
    const int blocks = dev_.info().sm_count * 8;
    if (sink_.bytes() < static_cast<size_t>(blocks) * sizeof(unsigned))
      sink_ = Buffer(&dev_, blocks * sizeof(unsigned));
    CUfunction f = builtins_.function("tessera_read_flush");
    CUdeviceptr p = dev_.flush_buffer(), sink = sink_.ptr();
    long long n16 = static_cast<long long>(dev_.flush_bytes() / 16);
    void* args[] = {&p, &n16, &sink};
    int grid[3] = {blocks, 1, 1};
    int block[3] = {512, 1, 1};
    dev_.launch(f, grid, block, 0, args);
  }

 private:
  Device& dev_;
  Module& builtins_;
  Buffer sink_;  // one word per block (the reads must go somewhere)
};

}  // namespace

const char* l2_flush_name(L2Flush f) {
  return f == L2Flush::read ? "read" : "write";
}

L2Flush parse_l2_flush(const std::string& s) {
  if (s == "write") return L2Flush::write;
  if (s == "read") return L2Flush::read;
  throw std::invalid_argument("L2 flush '" + s + "': expected write or read");
}

std::unique_ptr<L2Evictor> make_l2_evictor(L2Flush f, Device& dev, Module& builtins) {
  if (f == L2Flush::read) return std::make_unique<ReadFlush>(dev, builtins);
  return std::make_unique<WriteFlush>(dev);
}

}  // namespace tessera::evaluator
