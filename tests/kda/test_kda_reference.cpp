// tests/kda/test_kda_reference.cpp — the float64 CPU reference of KDA
// (kda_reference_cpu.h) against the four test vectors in tests/data/kda-vectors
// (copied from the project's shared datasets), which come from an independent float64
// implementation. Agreement to ~1e-12 says the math and the layouts were read right;
// the GPU reference (targets/kda/reference.cu) is checked against the same vectors
// on the GPU by tests/kda/kda_gpu_reference_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>

#include "evaluator/npy.h"
#include "tests/kda/kda_reference_cpu.h"

namespace npy = tessera::npy;
namespace fs = std::filesystem;
using tessera::kda_test::KdaShape;

namespace {

fs::path dataset_dir() {
  return fs::path(TESSERA_KDA_VECTORS);
}

double rel_l2(const std::vector<double>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

struct Case {
  KdaShape shape;
  std::vector<double> q, k, v, g, beta, A_log, dt_bias, h0, o, ht;
};

Case load(const std::string& name) {
  fs::path d = dataset_dir() / name;
  auto f64 = [&](const char* n, std::vector<std::int64_t>* shape = nullptr) {
    auto a = npy::read(d / (std::string(n) + ".npy"));
    if (shape) *shape = a.shape;
    return npy::to_f64(a);
  };
  Case c;
  std::vector<std::int64_t> qs, vs;
  c.q = f64("q", &qs);
  c.k = f64("k");
  c.v = f64("v", &vs);
  c.g = f64("g");
  c.beta = f64("beta");
  c.A_log = f64("A_log");
  c.dt_bias = f64("dt_bias");
  c.h0 = f64("initial_state");
  c.o = f64("o");
  c.ht = f64("final_state");
  auto cu = npy::read(d / "cu_seqlens.npy");
  for (double x : npy::to_f64(cu)) c.shape.cu_seqlens.push_back(static_cast<std::int64_t>(x));
  c.shape.H = static_cast<int>(qs.at(1));
  c.shape.K = static_cast<int>(qs.at(2));
  c.shape.V = static_cast<int>(vs.at(2));
  c.shape.scale = 1.0 / std::sqrt(static_cast<double>(c.shape.K));
  c.shape.lower_bound = -5.0;
  return c;
}

class KdaVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(KdaVectors, CpuReferenceMatchesFloat64Vectors) {
  ASSERT_TRUE(fs::exists(dataset_dir())) << "KDA test vectors missing at " << dataset_dir()
                                         << " (tests/data/kda-vectors)";
  Case c = load(GetParam());
  ASSERT_EQ(c.shape.cu_seqlens.back() * c.shape.H * c.shape.K, static_cast<std::int64_t>(c.q.size()));
  // The vectors were made with torch's normalize (max(||x||, eps)): with that form
  // the float64 recurrence must agree to rounding.
  std::vector<double> o, ht;
  c.shape.l2norm = tessera::kda_test::L2Norm::kMaxNormEps;
  tessera::kda_test::kda_reference_cpu(c.shape, c.q, c.k, c.v, c.g, c.beta, c.A_log, c.dt_bias, c.h0, o, ht);
  ASSERT_EQ(o.size(), c.o.size());
  ASSERT_EQ(ht.size(), c.ht.size());
  EXPECT_LT(rel_l2(o, c.o), 1e-10) << "o";
  EXPECT_LT(rel_l2(ht, c.ht), 1e-10) << "final state";
  // The vectors are not trivial: the state moved.
  EXPECT_GT(rel_l2(ht, c.h0), 1e-3);
  // With OPERATORS.md's form (the one tessera's kernels and GPU reference use) only
  // the eps term differs: within 1e-6, and not equal (so the test above has teeth).
  c.shape.l2norm = tessera::kda_test::L2Norm::kSqrtSumPlusEps;
  tessera::kda_test::kda_reference_cpu(c.shape, c.q, c.k, c.v, c.g, c.beta, c.A_log, c.dt_bias, c.h0, o, ht);
  EXPECT_LT(rel_l2(o, c.o), 1e-6) << "o";
  EXPECT_LT(rel_l2(ht, c.ht), 1e-6) << "final state";
  EXPECT_GT(rel_l2(o, c.o), 1e-10) << "o";
}

INSTANTIATE_TEST_SUITE_P(Dataset, KdaVectors,
                         ::testing::Values("t7_h2", "t65_h3_h0", "varlen_30_1_64_h2", "t130_h1_bigstate"));

// Sequences are independent: running each sequence of a varlen batch alone gives
// the same rows of o and the same state as running the batch.
TEST(KdaReference, VarlenSequencesAreIndependent) {
  ASSERT_TRUE(fs::exists(dataset_dir())) << "KDA test vectors missing at " << dataset_dir();
  Case c = load("varlen_30_1_64_h2");
  std::vector<double> o, ht;
  tessera::kda_test::kda_reference_cpu(c.shape, c.q, c.k, c.v, c.g, c.beta, c.A_log, c.dt_bias, c.h0, o, ht);
  const int H = c.shape.H, K = c.shape.K, V = c.shape.V;
  const auto& cu = c.shape.cu_seqlens;
  for (size_t n = 0; n + 1 < cu.size(); ++n) {
    KdaShape s1 = c.shape;
    s1.cu_seqlens = {0, cu[n + 1] - cu[n]};
    auto slice = [&](const std::vector<double>& x, std::int64_t per_token) {
      return std::vector<double>(x.begin() + cu[n] * per_token, x.begin() + cu[n + 1] * per_token);
    };
    std::vector<double> h0(c.h0.begin() + n * H * V * K, c.h0.begin() + (n + 1) * H * V * K);
    std::vector<double> o1, ht1;
    tessera::kda_test::kda_reference_cpu(s1, slice(c.q, H * K), slice(c.k, H * K), slice(c.v, H * V), slice(c.g, H * K),
                                         slice(c.beta, H), c.A_log, c.dt_bias, h0, o1, ht1);
    for (size_t i = 0; i < o1.size(); ++i) ASSERT_EQ(o1[i], o[cu[n] * H * V + i]);
    for (size_t i = 0; i < ht1.size(); ++i) ASSERT_EQ(ht1[i], ht[n * H * V * K + i]);
  }
}

// A long sequence split across blocks with a state hand-off (kda_reference_cpu_split:
// segments run from a zero state, then the initial state is carried through each
// segment's transition) gives the token-by-token result, for segment lengths that
// do and do not divide the sequences, one segment longer than a sequence, gates from
// near 0 to the lower bound, and a large initial state.
TEST(KdaReference, SequenceSplitWithStateHandOffIsExact) {
  KdaShape s;
  s.H = 2, s.K = 16, s.V = 12;
  s.cu_seqlens = {0, 37, 137, 138};
  s.scale = 1.0 / std::sqrt(16.0);
  const std::int64_t T = s.cu_seqlens.back();
  const int nseq = static_cast<int>(s.cu_seqlens.size()) - 1;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n01(0.0, 1.0);
  auto draw = [&](size_t count, double sd) {
    std::vector<double> x(count);
    for (auto& e : x) e = sd * n01(rng);
    return x;
  };
  auto q = draw(T * s.H * s.K, 0.5), k = draw(T * s.H * s.K, 0.5), v = draw(T * s.H * s.V, 0.5);
  auto g = draw(T * s.H * s.K, 2.0), beta = draw(T * s.H, 1.0), dt_bias = draw(s.H * s.K, 1.0);
  std::vector<double> A_log = {0.0, 1.5};  // head 1's gates reach close to the bound
  auto h0 = draw(static_cast<size_t>(nseq) * s.H * s.V * s.K, 8.0);
  std::vector<double> o_ref, ht_ref;
  tessera::kda_test::kda_reference_cpu(s, q, k, v, g, beta, A_log, dt_bias, h0, o_ref, ht_ref);
  auto max_rel = [](const std::vector<double>& a, const std::vector<double>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i)
      num = std::max(num, std::abs(a[i] - b[i])), den = std::max(den, std::abs(b[i]));
    return num / den;
  };
  for (int segment : {1, 5, 16, 64, 200}) {
    std::vector<double> o, ht;
    tessera::kda_test::kda_reference_cpu_split(s, segment, q, k, v, g, beta, A_log, dt_bias, h0, o, ht);
    ASSERT_EQ(o.size(), o_ref.size());
    EXPECT_LT(max_rel(o, o_ref), 1e-12) << "segment " << segment;
    EXPECT_LT(max_rel(ht, ht_ref), 1e-12) << "segment " << segment;
  }
}

}  // namespace
