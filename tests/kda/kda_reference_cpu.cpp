// tests/kda/kda_reference_cpu.cpp — the float64 CPU recurrence declared in
// kda_reference_cpu.h. State kept V-first (St[v][k] = S[k][v]) like h0/ht.
#include "tests/kda/kda_reference_cpu.h"

#include <algorithm>
#include <cmath>

namespace tessera::kda_test {

namespace {

// Per token of one head: normalized q, k, the decay e^{g} and sigmoid(beta), as
// OPERATORS.md defines them (shared by the recurrence and the split form below).
struct Token {
  std::vector<double> qn, kn, decay;
  double b = 0;
};

Token prepare(const KdaShape& s, const std::vector<double>& q, const std::vector<double>& k,
              const std::vector<double>& g, const std::vector<double>& beta, double a,
              const std::vector<double>& dt_bias, std::int64_t t, int h) {
  const int H = s.H, K = s.K;
  const size_t tk = (static_cast<size_t>(t) * H + h) * K;
  double sq = 0, sk = 0;
  for (int d = 0; d < K; ++d) sq += q[tk + d] * q[tk + d], sk += k[tk + d] * k[tk + d];
  const double rq =
      s.l2norm == L2Norm::kSqrtSumPlusEps ? 1.0 / std::sqrt(sq + 1e-6) : 1.0 / std::max(std::sqrt(sq), 1e-6);
  const double rk =
      s.l2norm == L2Norm::kSqrtSumPlusEps ? 1.0 / std::sqrt(sk + 1e-6) : 1.0 / std::max(std::sqrt(sk), 1e-6);
  Token tok{std::vector<double>(K), std::vector<double>(K), std::vector<double>(K), 0};
  for (int d = 0; d < K; ++d) {
    tok.qn[d] = q[tk + d] * rq;
    tok.kn[d] = k[tk + d] * rk;
    const double x = a * (g[tk + d] + dt_bias[static_cast<size_t>(h) * K + d]);
    tok.decay[d] = std::exp(s.lower_bound / (1.0 + std::exp(-x)));
  }
  tok.b = 1.0 / (1.0 + std::exp(-beta[static_cast<size_t>(t) * H + h]));
  return tok;
}

// One token of the recurrence on the V-first state St: decay, delta-rule update, and
// o_t = scale S_t^T q_t.
void step(const KdaShape& s, const Token& tok, const std::vector<double>& v, std::int64_t t, int h,
          std::vector<double>& St, std::vector<double>& o) {
  const int H = s.H, K = s.K, V = s.V;
  const size_t tv = (static_cast<size_t>(t) * H + h) * V;
  for (int e = 0; e < V; ++e) {
    double* row = &St[static_cast<size_t>(e) * K];
    double kv = 0;
    for (int d = 0; d < K; ++d) row[d] *= tok.decay[d], kv += row[d] * tok.kn[d];
    const double u = tok.b * (v[tv + e] - kv);
    double acc = 0;
    for (int d = 0; d < K; ++d) row[d] += tok.kn[d] * u, acc += row[d] * tok.qn[d];
    o[tv + e] = s.scale * acc;
  }
}

}  // namespace

void kda_reference_cpu(const KdaShape& s, const std::vector<double>& q, const std::vector<double>& k,
                       const std::vector<double>& v, const std::vector<double>& g, const std::vector<double>& beta,
                       const std::vector<double>& A_log, const std::vector<double>& dt_bias,
                       const std::vector<double>& h0, std::vector<double>& o, std::vector<double>& ht) {
  const int H = s.H, K = s.K, V = s.V;
  const int nseq = static_cast<int>(s.cu_seqlens.size()) - 1;
  const std::int64_t T = s.cu_seqlens.back();
  o.assign(static_cast<size_t>(T * H * V), 0.0);
  ht.assign(static_cast<size_t>(nseq) * H * V * K, 0.0);
  std::vector<double> St(static_cast<size_t>(V) * K);
  for (int n = 0; n < nseq; ++n) {
    for (int h = 0; h < H; ++h) {
      const double* s0 = &h0[(static_cast<size_t>(n) * H + h) * V * K];
      for (int i = 0; i < V * K; ++i) St[i] = s0[i];
      const double a = std::exp(A_log[h]);
      for (std::int64_t t = s.cu_seqlens[n]; t < s.cu_seqlens[n + 1]; ++t)
        step(s, prepare(s, q, k, g, beta, a, dt_bias, t, h), v, t, h, St, o);
      double* out = &ht[(static_cast<size_t>(n) * H + h) * V * K];
      for (int i = 0; i < V * K; ++i) out[i] = St[i];
    }
  }
}

void kda_reference_cpu_split(const KdaShape& s, int segment, const std::vector<double>& q, const std::vector<double>& k,
                             const std::vector<double>& v, const std::vector<double>& g,
                             const std::vector<double>& beta, const std::vector<double>& A_log,
                             const std::vector<double>& dt_bias, const std::vector<double>& h0, std::vector<double>& o,
                             std::vector<double>& ht) {
  const int H = s.H, K = s.K, V = s.V;
  const int nseq = static_cast<int>(s.cu_seqlens.size()) - 1;
  const std::int64_t T = s.cu_seqlens.back();
  o.assign(static_cast<size_t>(T * H * V), 0.0);
  ht.assign(static_cast<size_t>(nseq) * H * V * K, 0.0);
  std::vector<double> c(static_cast<size_t>(T) * H * K);  // c_t = M_t^T q_t
  for (int n = 0; n < nseq; ++n)
    for (int h = 0; h < H; ++h) {
      const double a = std::exp(A_log[h]);
      // The state entering the current segment (V-first, St = S^T), from h0.
      std::vector<double> start(h0.begin() + (static_cast<std::ptrdiff_t>(n) * H + h) * V * K,
                                h0.begin() + (static_cast<std::ptrdiff_t>(n) * H + h + 1) * V * K);
      for (std::int64_t a0 = s.cu_seqlens[n]; a0 < s.cu_seqlens[n + 1]; a0 += segment) {
        const std::int64_t a1 = std::min<std::int64_t>(a0 + segment, s.cu_seqlens[n + 1]);
        // Pass 1: the segment alone, from a zero state; M (K x K, row-major) from I.
        std::vector<double> St(static_cast<size_t>(V) * K, 0.0), M(static_cast<size_t>(K) * K, 0.0), kM(K);
        for (int d = 0; d < K; ++d) M[static_cast<size_t>(d) * K + d] = 1.0;
        for (std::int64_t t = a0; t < a1; ++t) {
          Token tok = prepare(s, q, k, g, beta, a, dt_bias, t, h);
          step(s, tok, v, t, h, St, o);
          // M <- (I - b k k^T) Diag(decay) M
          for (int d = 0; d < K; ++d)
            for (int j = 0; j < K; ++j) M[static_cast<size_t>(d) * K + j] *= tok.decay[d];
          for (int j = 0; j < K; ++j) {
            kM[j] = 0;
            for (int d = 0; d < K; ++d) kM[j] += tok.kn[d] * M[static_cast<size_t>(d) * K + j];
          }
          for (int d = 0; d < K; ++d)
            for (int j = 0; j < K; ++j) M[static_cast<size_t>(d) * K + j] -= tok.b * tok.kn[d] * kM[j];
          double* ct = &c[(static_cast<size_t>(t) * H + h) * K];
          for (int j = 0; j < K; ++j) {
            ct[j] = 0;
            for (int d = 0; d < K; ++d) ct[j] += M[static_cast<size_t>(d) * K + j] * tok.qn[d];
          }
        }
        // Pass 3 for this segment: o_t += scale St_start c_t.
        for (std::int64_t t = a0; t < a1; ++t) {
          const double* ct = &c[(static_cast<size_t>(t) * H + h) * K];
          const size_t tv = (static_cast<size_t>(t) * H + h) * V;
          for (int e = 0; e < V; ++e) {
            double acc = 0;
            for (int d = 0; d < K; ++d) acc += start[static_cast<size_t>(e) * K + d] * ct[d];
            o[tv + e] += s.scale * acc;
          }
        }
        // Pass 2: St_end = St_start M^T + St^0  (S_end = M S_start + S^0).
        std::vector<double> next(St);
        for (int e = 0; e < V; ++e)
          for (int d = 0; d < K; ++d) {
            double acc = 0;
            for (int j = 0; j < K; ++j)
              acc += start[static_cast<size_t>(e) * K + j] * M[static_cast<size_t>(d) * K + j];
            next[static_cast<size_t>(e) * K + d] += acc;
          }
        start.swap(next);
      }
      std::copy(start.begin(), start.end(), ht.begin() + (static_cast<std::ptrdiff_t>(n) * H + h) * V * K);
    }
}

}  // namespace tessera::kda_test
