// tests/flash_attention/fa_compile_test.cpp — NVRTC compiles the flash_attention kernels
// (CPU, label `sweep`: the Release tests run them, the sanitizer run, `-L cpu`, leaves them
// out, since they spend their minutes in NVRTC, not in tessera's code). The reference,
// the baseline and every fa2_mma configuration for sm_90a and sm_103a (a sample for
// sm_100a) with the kernel present and nothing spilled; fa3_wgmma's configurations for
// sm_90a, in eight shards that ctest runs side by side, with both entry points, nothing
// spilled, no wgmma serialized by ptxas and, where a disassembler is found
// (tests/support/sass.h), no kernel moving its products' descriptors to uniform registers
// before each.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>

#include "agent/template_space.h"
#include "codegen/compiler.h"
#include "codegen/render.h"
#include "spec/spec.h"
#include "tests/support/sass.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

fs::path targets() {
  return fs::path(TESSERA_SOURCE_DIR) / "targets";
}
spec::Operator load() {
  return spec::load_operator(targets() / "flash_attention");
}

codegen::Compiler& compiler() {
  static codegen::Compiler c;
  return c;
}

}  // namespace

// The reference and baseline for every architecture, fa2_mma's configurations (all of
// them for sm_90a and sm_103a, as tests/core/templates_test does; three for sm_100a),
// without spills.
TEST(FlashAttentionKernels, CompileWithoutSpills) {
  auto op = load();
  auto compile = [&](const std::string& src, const std::string& arch) {
    return compiler().compile({src, "fa.cu", arch, {op.dir, targets() / "common"}, {}});
  };
  const std::pair<const spec::Program*, const char*> fixed[] = {{&op.reference, "flash_attention_reference"},
                                                                {&op.baseline, "flash_attention_baseline"}};
  for (const char* arch : {"sm_90a", "sm_100a", "sm_103a"})
    for (auto [prog, kernel] : fixed) {
      auto r = compile(codegen::read_file(prog->source.string()), arch);
      ASSERT_TRUE(r.ok) << prog->source << " " << arch << ":\n" << r.log;
      EXPECT_TRUE(r.kernels.count(kernel)) << arch;
      EXPECT_FALSE(r.spills()) << prog->source << " " << arch << ":\n" << r.log;
    }
  const spec::Program* tpl = op.find_template("fa2_mma");
  ASSERT_NE(tpl, nullptr);
  auto space = agent::template_space(*tpl);
  auto configs = space.valid_configs();
  // BLOCK_M/WARPS 64/4, 128/8 (16 rows a warp) x BLOCK_N 32, 64 x STAGES 2, 3, 4, and 128/4 (32 rows a
  // warp, Q read from shared memory) with BLOCK_N 32 and STAGES 2 only: the others spill at D 128
  ASSERT_EQ(configs.size(), 13u);
  std::mt19937 rng(31);
  std::shuffle(configs.begin(), configs.end(), rng);
  const std::string source = codegen::read_file(tpl->source.string());
  for (const char* arch : {"sm_90a", "sm_100a", "sm_103a"}) {
    const size_t n = std::string(arch) == "sm_100a" ? 3 : configs.size();
    for (size_t i = 0; i < n; ++i) {
      auto params = agent::config_params(*tpl, configs[i]);
      SCOPED_TRACE(std::string(arch) + " " + space.key(configs[i]));
      auto r = compile(codegen::render(source, params), arch);
      ASSERT_TRUE(r.ok) << r.log;
      EXPECT_TRUE(r.kernels.count("fa2_mma"));
      EXPECT_FALSE(r.spills()) << r.log;
    }
  }
}

// fa3_wgmma (sm_90a only): its configurations compile with both entry points, nothing
// spilled and no ptxas warning that it serialized the wgmma products (C7518: a product under
// a condition costs every product of the kernel its overlap; the consumer loops are peeled to
// avoid it). ORDER changes only the tile lookup and the schedule, outside the products: every
// ORDER 0 configuration compiles here and one other in 8, 392 in all at about 2 s each,
// dealt round-robin to eight shards. With a disassembler, at most one HGMMA a kernel has an
// R2UR among the three instructions before it (210 of the 910 configurations had 8-18, all
// ORDER 1 and 3, until per_head was counted once a block: JOURNAL.md, 2026-12-05).
constexpr int kHopperShards = 8;

class HopperTemplate : public ::testing::TestWithParam<int> {};

TEST_P(HopperTemplate, CompilesItsShardOfTheConfigurations) {
  auto op = load();
  const spec::Program* tpl = op.find_template("fa3_wgmma");
  ASSERT_NE(tpl, nullptr);
  auto space = agent::template_space(*tpl);
  auto configs = space.valid_configs();
  ASSERT_EQ(configs.size(), 910u);  // fa_spec_test.cpp says what they are
  const std::string source = codegen::read_file(tpl->source.string());
  std::string no_sass;
  const bool sass = !tessera::testing::cuobjdump(&no_sass).empty();
  if (!sass) std::cerr << "fa3_wgmma's SASS not checked: " << no_sass << "\n";
  int others = 0, picked = 0, compiled = 0;
  for (const auto& c : configs) {
    auto params = agent::config_params(*tpl, c);
    if (params.at("ORDER") != 0 && others++ % 8 != 0) continue;
    if (picked++ % kHopperShards != GetParam()) continue;
    SCOPED_TRACE(space.key(c));
    auto r =
        compiler().compile({codegen::render(source, params), "fa3.cu", "sm_90a", {op.dir, targets() / "common"}, {}});
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_TRUE(r.kernels.count("fa3_wgmma"));
    EXPECT_TRUE(r.kernels.count("fa3_wgmma_d64"));
    EXPECT_FALSE(r.spills()) << r.log;
    EXPECT_EQ(r.log.find("C7518"), std::string::npos) << r.log;
    EXPECT_EQ(r.log.find("serialized"), std::string::npos) << r.log;
    ++compiled;
    if (sass) EXPECT_EQ(tessera::testing::descriptors_moved(r.cubin), "");
  }
  EXPECT_EQ(picked, 392);
  EXPECT_EQ(compiled, (picked - GetParam() + kHopperShards - 1) / kHopperShards);
}

INSTANTIATE_TEST_SUITE_P(Shards, HopperTemplate, ::testing::Range(0, kHopperShards));
