// tests/kda/kda_reference_cpu.cpp — the float64 CPU recurrence declared in
// kda_reference_cpu.h. State kept V-first (St[v][k] = S[k][v]) like h0/ht.
#include "tests/kda/kda_reference_cpu.h"

#include <algorithm>
#include <cmath>

namespace tessera::kda_test {

void kda_reference_cpu(const KdaShape& s, const std::vector<double>& q,
                       const std::vector<double>& k, const std::vector<double>& v,
                       const std::vector<double>& g, const std::vector<double>& beta,
                       const std::vector<double>& A_log, const std::vector<double>& dt_bias,
                       const std::vector<double>& h0, std::vector<double>& o,
                       std::vector<double>& ht) {
  const int H = s.H, K = s.K, V = s.V;
  const int nseq = static_cast<int>(s.cu_seqlens.size()) - 1;
  const std::int64_t T = s.cu_seqlens.back();
  o.assign(static_cast<size_t>(T * H * V), 0.0);
  ht.assign(static_cast<size_t>(nseq) * H * V * K, 0.0);
  std::vector<double> St(static_cast<size_t>(V) * K), qn(K), kn(K), decay(K);
  for (int n = 0; n < nseq; ++n) {
    for (int h = 0; h < H; ++h) {
      const double* s0 = &h0[(static_cast<size_t>(n) * H + h) * V * K];
      for (int i = 0; i < V * K; ++i) St[i] = s0[i];
      const double a = std::exp(A_log[h]);
      for (std::int64_t t = s.cu_seqlens[n]; t < s.cu_seqlens[n + 1]; ++t) {
        const size_t tk = (static_cast<size_t>(t) * H + h) * K;
        double sq = 0, sk = 0;
        for (int d = 0; d < K; ++d) {
          sq += q[tk + d] * q[tk + d];
          sk += k[tk + d] * k[tk + d];
        }
        double rq, rk;
        if (s.l2norm == L2Norm::kSqrtSumPlusEps) {
          rq = 1.0 / std::sqrt(sq + 1e-6);
          rk = 1.0 / std::sqrt(sk + 1e-6);
        } else {
          rq = 1.0 / std::max(std::sqrt(sq), 1e-6);
          rk = 1.0 / std::max(std::sqrt(sk), 1e-6);
        }
        for (int d = 0; d < K; ++d) {
          qn[d] = q[tk + d] * rq;
          kn[d] = k[tk + d] * rk;
          const double x = a * (g[tk + d] + dt_bias[static_cast<size_t>(h) * K + d]);
          const double gd = s.lower_bound / (1.0 + std::exp(-x));
          decay[d] = std::exp(gd);
        }
        const double b = 1.0 / (1.0 + std::exp(-beta[static_cast<size_t>(t) * H + h]));
        const size_t tv = (static_cast<size_t>(t) * H + h) * V;
        for (int e = 0; e < V; ++e) {
          double* row = &St[static_cast<size_t>(e) * K];
          double kv = 0;
          for (int d = 0; d < K; ++d) {
            row[d] *= decay[d];
            kv += row[d] * kn[d];
          }
          const double u = b * (v[tv + e] - kv);
          double acc = 0;
          for (int d = 0; d < K; ++d) {
            row[d] += kn[d] * u;
            acc += row[d] * qn[d];
          }
          o[tv + e] = s.scale * acc;
        }
      }
      double* out = &ht[(static_cast<size_t>(n) * H + h) * V * K];
      for (int i = 0; i < V * K; ++i) out[i] = St[i];
    }
  }
}

}  // namespace tessera::kda_test
