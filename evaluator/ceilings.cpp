// evaluator/ceilings.cpp — measuring copy bandwidth and tensor-core rate.
//
// Both use medians of repeated, event-timed operations on random data (a matrix
// product on zeros runs measurably faster than on real data).
#include "evaluator/ceilings.h"

#include <algorithm>
#include <vector>

#include "codegen/compiler.h"
#include "evaluator/builtin_kernels.h"
#include "evaluator/cublas.h"

namespace tessera::evaluator {

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

Ceilings measure_ceilings(Device& dev) {
  Ceilings c;
  Driver& d = dev.drv();
  {
    size_t bytes = size_t(2) << 30;
    Buffer src(&dev, bytes), dst(&dev, bytes);
    TESSERA_CU(d, cuMemsetD8(src.ptr(), 0x3C, bytes));
    std::vector<double> ms;
    for (int i = 0; i < 12; ++i) {
      CUevent a = dev.record();
      TESSERA_CU(d, cuMemcpyDtoDAsync(dst.ptr(), src.ptr(), bytes, dev.stream()));
      CUevent b = dev.record();
      ms.push_back(dev.elapsed_ms(a, b));
      dev.release(a);
      dev.release(b);
    }
    ms.erase(ms.begin(), ms.begin() + 2);  // warm-up
    c.copy_bytes_per_s = 2.0 * static_cast<double>(bytes) / (median(ms) * 1e-3);
  }
  std::string why;
  auto blas = Cublas::load(dev.stream(), &why);
  if (!blas) {
    c.note = "tensor-core rate not measured: " + why;
    return c;
  }
  codegen::Compiler compiler;
  codegen::CompileRequest req;
  req.source = kBuiltinKernelSource;
  req.arch = dev.info().arch();
  auto res = compiler.compile(req);
  if (!res.ok) {
    c.note = "tensor-core rate not measured: generator kernels failed to compile";
    return c;
  }
  Module mod(dev.driver(), res.cubin);
  const long long n = 8192;
  Buffer a(&dev, n * n * 2), b(&dev, n * n * 2), out(&dev, n * n * 2);
  CUfunction fill = mod.function("tessera_fill_bf16");
  unsigned long long seed = 11;
  for (Buffer* buf : {&a, &b}) {
    CUdeviceptr p = buf->ptr();
    long long cnt = n * n;
    int dist = 0;
    double mean = 0, sd = 1;
    ++seed;
    void* args[] = {&p, &cnt, &seed, &dist, &mean, &sd};
    int grid[3] = {dev.info().sm_count * 16, 1, 1}, block[3] = {256, 1, 1};
    dev.launch(fill, grid, block, 0, args);
  }
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    CUevent e0 = dev.record();
    blas->gemm_bf16(a.ptr(), b.ptr(), out.ptr(), n, n, n);
    CUevent e1 = dev.record();
    ms.push_back(dev.elapsed_ms(e0, e1));
    dev.release(e0);
    dev.release(e1);
  }
  ms.erase(ms.begin(), ms.begin() + 2);
  c.bf16_flops_per_s = 2.0 * n * n * n / (median(ms) * 1e-3);
  return c;
}

}  // namespace tessera::evaluator
