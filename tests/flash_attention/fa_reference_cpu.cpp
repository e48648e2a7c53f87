// tests/flash_attention/fa_reference_cpu.cpp — see fa_reference_cpu.h.
#include "fa_reference_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::fa_test {

Result attention_cpu(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                     const std::vector<double>& v) {
  const int D = p.d, HQ = p.hq, HKV = p.hkv, group = HQ / HKV;
  Result r;
  r.o.assign(static_cast<size_t>(p.tq()) * HQ * D, 0.0);
  r.lse.assign(static_cast<size_t>(p.tq()) * HQ, -std::numeric_limits<double>::infinity());
  std::vector<double> x;
  for (int s = 0; s < p.batch(); ++s) {
    const int q0 = p.cu_q[s], lq = p.cu_q[s + 1] - q0, k0 = p.cu_k[s], lk = p.cu_k[s + 1] - k0;
    for (int h = 0; h < HQ; ++h) {
      const int hk = h / group;
      for (int i = 0; i < lq; ++i) {
        const int keep = p.causal ? std::clamp(i + lk - lq + 1, 0, lk) : lk;  // keys [0, keep)
        if (keep == 0) continue;
        const double* qi = &q[(static_cast<size_t>(q0 + i) * HQ + h) * D];
        x.assign(keep, 0.0);
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < keep; ++j) {
          const double* kj = &k[(static_cast<size_t>(k0 + j) * HKV + hk) * D];
          double dot = 0;
          for (int c = 0; c < D; ++c) dot += qi[c] * kj[c];
          x[j] = dot * static_cast<double>(p.scale);
          mx = std::max(mx, x[j]);
        }
        double sum = 0;
        for (int j = 0; j < keep; ++j) sum += (x[j] = std::exp(x[j] - mx));
        double* oi = &r.o[(static_cast<size_t>(q0 + i) * HQ + h) * D];
        for (int j = 0; j < keep; ++j) {
          const double* vj = &v[(static_cast<size_t>(k0 + j) * HKV + hk) * D];
          for (int c = 0; c < D; ++c) oi[c] += x[j] / sum * vj[c];
        }
        r.lse[static_cast<size_t>(q0 + i) * HQ + h] = (mx + std::log(sum)) / std::log(2.0);
      }
    }
  }
  return r;
}

long long kept_pairs(const std::vector<int>& cu_q, const std::vector<int>& cu_k, bool causal) {
  long long n = 0;
  for (size_t s = 0; s + 1 < cu_q.size(); ++s) {
    const long long lq = cu_q[s + 1] - cu_q[s], lk = cu_k[s + 1] - cu_k[s];
    for (long long i = 0; i < lq; ++i) n += causal ? std::clamp(i + lk - lq + 1, 0LL, lk) : lk;
  }
  return n;
}

}  // namespace tessera::fa_test
