// tests/flash_attention/fa_spec_test.cpp — CPU tests of the flash_attention operator:
// the spec loads and says what issue 31 asks (ragged GQA layout, bottom-right causal,
// the validation cases, the benchmark shapes with FLOPs from the pairs their masks keep);
// the CPU float64 reference gets known answers right; fa3_wgmma's launch plan and space.
// NVRTC's compilation of the kernels is in fa_compile_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "agent/template_space.h"
#include "fa_reference_cpu.h"
#include "spec/spec.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

fs::path targets() {
  return fs::path(TESSERA_SOURCE_DIR) / "targets";
}
spec::Operator load() {
  return spec::load_operator(targets() / "flash_attention");
}

std::vector<int> offsets_of(const spec::Shape& s, const std::string& name) {
  if (auto it = s.init_overrides.find(name); it != s.init_overrides.end())
    return std::vector<int>(it->second.values.begin(), it->second.values.end());
  EXPECT_EQ(s.symbols.at("B"), 1) << s.label() << ": a batch of several needs fixed offsets";
  return {0, static_cast<int>(s.symbols.at(name == "cu_seqlens_q" ? "TQ" : "TK"))};
}

}  // namespace

TEST(FlashAttentionSpec, LayoutAndOutputs) {
  auto op = load();
  EXPECT_EQ(op.name, "flash_attention");
  std::map<std::string, const spec::Tensor*> t;
  for (auto& x : op.tensors) t[x.name] = &x;
  ASSERT_EQ(t.size(), 7u);
  EXPECT_EQ(t["q"]->shape, (std::vector<std::string>{"TQ", "HQ", "D"}));
  EXPECT_EQ(t["k"]->shape, (std::vector<std::string>{"TK", "HKV", "D"}));
  EXPECT_EQ(t["o"]->dtype, spec::DType::bf16);
  EXPECT_TRUE(t["lse"]->output);
  EXPECT_EQ(t["lse"]->dtype, spec::DType::f32);
  EXPECT_LE(t["lse"]->tol.rel_l2, 1e-4);
  EXPECT_EQ(t["cu_seqlens_q"]->init.dist, "offsets");
  EXPECT_EQ(t["cu_seqlens_k"]->init.not_below, "cu_seqlens_q");  // every row keeps a key
  EXPECT_NE(op.description.find("bottom-right"), std::string::npos);
  EXPECT_NE(op.description.find("BASE-2"), std::string::npos);
}

TEST(FlashAttentionSpec, ValidationShapesCoverTheAwkwardCases) {
  auto op = load();
  bool len1 = false, qk_differ = false, gqa4 = false, odd = false;
  std::set<long long> dims, causal;
  for (auto& s : op.validation_shapes) {
    auto y = s.symbols;
    len1 |= y["TQ"] == y["B"];
    qk_differ |= y["TQ"] != y["TK"];
    gqa4 |= y["HQ"] == 4 * y["HKV"];
    odd |= y["TQ"] % 16 != 0;
    dims.insert(y["D"]);
    causal.insert(y["CAUSAL"]);
    EXPECT_EQ(y["HQ"] % y["HKV"], 0) << s.label();
    EXPECT_LE(y["TQ"], y["TK"]) << s.label() << ": key ranges must cover query ranges";
  }
  EXPECT_TRUE(len1 && qk_differ && gqa4 && odd);
  EXPECT_EQ(dims, (std::set<long long>{64, 128}));
  EXPECT_EQ(causal, (std::set<long long>{0, 1}));
}

// FLOPs per benchmark shape: 4 HQ D times the pairs the (bottom-right) mask keeps, from
// the shape's own offsets; the shapes are all there.
TEST(FlashAttentionSpec, BenchmarkShapesAndFlops) {
  auto op = load();
  std::set<std::string> names;
  for (auto& s : op.benchmark_shapes) {
    names.insert(s.name);
    const auto cq = offsets_of(s, "cu_seqlens_q"), ck = offsets_of(s, "cu_seqlens_k");
    ASSERT_EQ(static_cast<long long>(cq.size()), s.symbols.at("B") + 1) << s.name;
    EXPECT_EQ(cq.back(), s.symbols.at("TQ")) << s.name;
    EXPECT_EQ(ck.back(), s.symbols.at("TK")) << s.name;
    const double want = 4.0 * s.symbols.at("HQ") * s.symbols.at("D") *
                        static_cast<double>(fa_test::kept_pairs(cq, ck, s.symbols.at("CAUSAL") != 0));
    ASSERT_TRUE(s.flops.has_value()) << s.name;
    EXPECT_EQ(op.flops_at(s), want) << s.name;
  }
  for (const char* n : {"b1_h32_n8192_d128", "b1_h32_n8192_d128_causal", "b4_h32_n4096_d128",
                        "b4_h32_n4096_d128_causal", "b8_h16_n2048_d64", "b8_h16_n2048_d64_causal",
                        "gqa_ragged_h32_kv8_d128_16k_causal", "b1_h32_n32768_d128_causal"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(fa_test::kept_pairs({0, 3}, {0, 5}, true), 3 + 4 + 5);  // bottom-right: row 0 sees 3 keys
  EXPECT_EQ(fa_test::kept_pairs({0, 3}, {0, 5}, false), 15);
}

// With q = 0 every kept key scores 0: O is the mean of the kept values and LSE is log2 of
// their count; the bottom-right causal mask decides which keys those are.
TEST(FlashAttentionCpuReference, KnownAnswers) {
  fa_test::Problem p;
  p.cu_q = {0, 3, 4};
  p.cu_k = {0, 5, 6};
  p.hq = 2;
  p.hkv = 1;
  p.d = 64;
  p.causal = true;
  std::vector<double> q(4 * 2 * 64, 0.0), k(6 * 64), v(6 * 64);
  std::mt19937 rng(7);
  std::normal_distribution<double> n01;
  for (auto& x : k) x = n01(rng);
  for (auto& x : v) x = n01(rng);
  auto r = fa_test::attention_cpu(p, q, k, v);
  const int keep[4] = {3, 4, 5, 1};  // rows 0..2 of sequence 0 (3 of 5 keys..), row 0 of sequence 1
  const int first[4] = {0, 0, 0, 5};
  for (int i = 0; i < 4; ++i)
    for (int h = 0; h < 2; ++h) {
      EXPECT_NEAR(r.lse[i * 2 + h], std::log2(keep[i]), 1e-14) << i;
      for (int c = 0; c < 64; c += 9) {
        double mean = 0;
        for (int j = 0; j < keep[i]; ++j) mean += v[(first[i] + j) * 64 + c] / keep[i];
        EXPECT_NEAR(r.o[(i * 2 + h) * 64 + c], mean, 1e-14) << i << " " << c;
      }
    }
  // One key far above the others takes all the weight: O is its value row.
  std::fill(q.begin(), q.end(), 1.0);
  std::fill(k.begin(), k.end(), 0.0);
  for (int c = 0; c < 64; ++c) k[1 * 64 + c] = 10.0;  // key 1 of sequence 0: score 10*64/8 = 80
  r = fa_test::attention_cpu(p, q, k, v);
  EXPECT_NEAR(r.o[(2 * 2) * 64 + 5], v[1 * 64 + 5], 1e-12);
  EXPECT_NEAR(r.lse[2 * 2], 80.0 / std::log(2.0), 1e-9);
  // Causal with fewer keys than queries: the first rows keep none (O 0, LSE -inf).
  p.cu_q = {0, 3};
  p.cu_k = {0, 1};
  q.assign(3 * 2 * 64, 0.5);
  r = fa_test::attention_cpu(p, q, std::vector<double>(k.begin(), k.begin() + 64),
                             std::vector<double>(v.begin(), v.begin() + 64));
  EXPECT_TRUE(std::isinf(r.lse[0]) && r.lse[0] < 0);
  EXPECT_TRUE(std::isinf(r.lse[2 * 1 + 1]));
  EXPECT_NEAR(r.lse[2 * 2], 0.0, 1e-14);  // the last row keeps the one key
  EXPECT_EQ(r.o[0], 0.0);
}

// fa3_wgmma (sm_90a only) launches the entry point of its head dim (D 128 or D 64, each where
// its `when` holds) and, with PERSIST 2, the counter's reset first, the attention kernel its
// programmatic dependent; it offers 910 configurations (fa_compile_test.cpp compiles them).
TEST(FlashAttentionSpec, HopperTemplateLaunchPlan) {
  auto op = load();
  const spec::Program* tpl = op.find_template("fa3_wgmma");
  ASSERT_NE(tpl, nullptr);
  ASSERT_EQ(tpl->arch, std::vector<std::string>{"sm_90a"});
  ASSERT_EQ(tpl->launch.size(), 5u);
  for (long long d : {64LL, 128LL})
    for (long long persist : {0LL, 1LL, 2LL}) {
      spec::Bindings b{{"D", static_cast<double>(d)}, {"HQ", 8}, {"TQ", 1000}, {"B", 2}, {spec::kSmCountSymbol, 132}};
      for (auto& [name, values] : tpl->params) b[name] = static_cast<double>(values.front());
      b["PERSIST"] = static_cast<double>(persist);
      std::vector<std::string> steps;  // what runs, in order ("+" marks a programmatic dependent)
      for (const auto& k : tpl->launch)
        if (spec::launched(k, b)) steps.push_back((k.pdl ? "+" : "") + k.kernel);
      const std::string attention = d == 64 ? "fa3_wgmma_d64" : "fa3_wgmma";
      if (persist == 2)
        EXPECT_EQ(steps, (std::vector<std::string>{"fa3_sched_reset", "+" + attention})) << d;
      else
        EXPECT_EQ(steps, std::vector<std::string>{attention}) << d << " " << persist;
    }
  ASSERT_EQ(tpl->scratch.size(), 1u);
  EXPECT_EQ(tpl->scratch[0].name, "sched");
  auto configs = agent::template_space(*tpl).valid_configs();
  // Per key-tile size and (STAGES, CONSUMERS64, PERSIST 0 or 1): CONSUMERS 1 with INTRA 0 or
  // 1, two consumers serial, or overlapped with PINGPONG 0/1 x POLY 0/4/2 x LAZY 0/1 = 15.
  // BLOCK_N 64 and 128: 2 x 2 x 2 x 15 = 120 each. BLOCK_N 192: two stages only, and three
  // consumers at D 64 only serial (overlapped they spill): 2 x 15 + 2 x 2 = 34. 274 (the
  // persistent three-consumer ones spilled while the warpgroup index came from threadIdx,
  // and are offered since 2026-12-03). ORDER 1 doubles them and ORDER 2 and 3 (PERSIST 1
  // only) add the 137 persistent ones twice: 822. PERSIST 2 (a consumer thread holds the
  // next tile's number; others spilled): key tiles of 64 or 128, POLY 0, and three consumers
  // at D 64 only serial or taking turns: 11 per (BLOCK_N, STAGES), 44 in each of ORDER 0 and
  // 1, 910 in all.
  EXPECT_EQ(configs.size(), 910u);
}
