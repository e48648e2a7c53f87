// tests/kda/kda_reference_cpu.h — KDA forward on the CPU in float64, token by token.
//
// A direct transcription of the recurrence in ../shared/OPERATORS.md (section kda),
// used by the tests to check the dataset vectors and, through them, the GPU
// reference (targets/kda/reference.cu). It shares no code with any kernel.
// Inputs are given as doubles holding the values of the real (bf16/f32) tensors.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::kda_test {

// How q and k are L2-normalized. OPERATORS.md writes x / sqrt(sum(x^2) + 1e-6)
// (FLA's form, used by every tessera kernel); the shared test vectors were made with
// torch's F.normalize, x / max(||x||, 1e-6). The two differ by ~1e-6/(2||x||^2)
// relative (~2e-8 on the vectors), far below any kernel tolerance but above the
// 1e-10 at which the tests compare float64 results.
enum class L2Norm { kSqrtSumPlusEps, kMaxNormEps };

struct KdaShape {
  int H = 0, K = 0, V = 0;
  std::vector<std::int64_t> cu_seqlens;  // NSEQ+1 prefix sums; T = back()
  double scale = 0;                      // usually 1/sqrt(K)
  double lower_bound = -5.0;
  L2Norm l2norm = L2Norm::kSqrtSumPlusEps;
};

// Layouts (C order): q,k,g [T,H,K]; v [T,H,V]; beta [T,H]; A_log [H];
// dt_bias [H,K]; h0 [NSEQ,H,V,K]. Outputs: o [T,H,V], ht [NSEQ,H,V,K].
void kda_reference_cpu(const KdaShape& s, const std::vector<double>& q, const std::vector<double>& k,
                       const std::vector<double>& v, const std::vector<double>& g, const std::vector<double>& beta,
                       const std::vector<double>& A_log, const std::vector<double>& dt_bias,
                       const std::vector<double>& h0, std::vector<double>& o, std::vector<double>& ht);

// The same outputs computed the way a kernel that splits long sequences across blocks
// would (the algebra of a state hand-off, checked here in float64 before any kernel
// relies on it). Per token the state update is affine, S_t = A_t S_{t-1} + B_t with
// A_t = (I - b_t k_t k_t^T) Diag(e^{g_t}) (K x K) and B_t = b_t k_t v_t^T, so each
// segment of `segment` tokens is run independently:
//   pass 1 (parallel): from a zero state, giving S^0_t, o^0_t, the segment's
//          transition M_t = A_t ... A_first and, per token, c_t = M_t^T q_t;
//   pass 2 (sequential, one K x K by K x V product per segment):
//          S_start(next) = M_end S_start + S^0_end, starting from h0;
//   pass 3 (parallel): o_t = o^0_t + scale S_start^T c_t.
void kda_reference_cpu_split(const KdaShape& s, int segment, const std::vector<double>& q, const std::vector<double>& k,
                             const std::vector<double>& v, const std::vector<double>& g,
                             const std::vector<double>& beta, const std::vector<double>& A_log,
                             const std::vector<double>& dt_bias, const std::vector<double>& h0, std::vector<double>& o,
                             std::vector<double>& ht);

}  // namespace tessera::kda_test
