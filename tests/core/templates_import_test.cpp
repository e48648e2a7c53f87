// tests/core/templates_import_test.cpp — the templates grown for imported FlashInfer Trace
// definitions (issue 30) compile with NVRTC for sm_90a, sm_100a and sm_103a: rmsnorm_rows.cu
// with RESIDUAL 1 (fused add + rmsnorm: rmsnorm_rows_residual) and gemm_mma.cu with F16 1
// (gemm_mma_f16, gemm_mma_splitk_f16, gemm_splitk_reduce_f16) and gemm_wgmma.cu with F16 1
// (sm_90a: gemm_wgmma_f16, gemm_wgmma_reduce_f16, gemm_wgmma_unaligned_f16) and gemm_decode.cu
// with F16 1 (gemm_decode_f16, every architecture), sampled from the shipped
// templates' own spaces: the residual kernel without spills, the fp16 gemm with the
// registers and spills of the bf16 kernels of the same configuration. Each module holds exactly the entry points of its
// element type (the image's section names say so), the fp16 gemm's PTX issues the .f16 form
// of mma.sync and never the .bf16 one, and the float64 references for the new kernels are
// in their reference modules.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "agent/template_space.h"
#include "codegen/compiler.h"
#include "codegen/render.h"
#include "spec/spec.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

fs::path targets() {
  return fs::path(TESSERA_SOURCE_DIR) / "targets";
}

const char* const kArchs[] = {"sm_90a", "sm_100a", "sm_103a"};

codegen::CompileResult compile(const fs::path& dir, const std::string& src, const std::string& arch) {
  static codegen::Compiler compiler;  // the user cache: repeated test runs are fast
  return compiler.compile({src, "t.cu", arch, {dir, targets() / "common"}, {}});
}

// Whether the cubin has a code section for kernel `name` (".text.<name>" in its section names).
bool image_has_kernel(const std::string& cubin, const std::string& name) {
  const std::string section = ".text." + name;
  return cubin.find(std::string(section.c_str(), section.size() + 1)) != std::string::npos;
}

// `n` configurations of template `tpl` of operator `op`, shuffled with `seed`, each with
// `extra` set (the parameter that picks the new entry points).
std::vector<std::map<std::string, long long>> sample(const spec::Operator& op, const std::string& tpl_name, int n,
                                                     unsigned seed, const std::string& extra) {
  const spec::Program* tpl = op.find_template(tpl_name);
  EXPECT_NE(tpl, nullptr) << tpl_name;
  if (!tpl) return {};
  auto space = agent::template_space(*tpl);
  auto configs = space.valid_configs();
  std::mt19937 rng(seed);
  std::shuffle(configs.begin(), configs.end(), rng);
  std::vector<std::map<std::string, long long>> out;
  for (int i = 0; i < n && i < static_cast<int>(configs.size()); ++i) {
    auto params = agent::config_params(*tpl, configs[i]);
    params[extra] = 1;
    out.push_back(params);
  }
  return out;
}

std::string key(const std::map<std::string, long long>& params) {
  std::string k;
  for (auto& [name, v] : params) k += name + "=" + std::to_string(v) + " ";
  return k;
}

// The PTX of `source` at params, with F16 1 where `half`, for virtual architecture arch:
// its products are of that element type only (`.f32.f16.f16` or `.f32.bf16.bf16`), its entry
// point is `kernel` (with `_f16` where half), and with fp16 C is rounded to nearest fp16.
// Returned for the caller's own checks.
std::string element_type_ptx(const fs::path& dir, const std::string& source, std::map<std::string, long long> params,
                             bool half, const std::string& arch, const std::string& kernel) {
  if (half) params["F16"] = 1;
  auto r = codegen::compile_ptx({codegen::render(source, params), "t.cu", arch, {dir, targets() / "common"}, {}});
  EXPECT_TRUE(r.ok) << r.log;
  const std::string& ptx = r.cubin;
  EXPECT_NE(ptx.find(half ? ".f32.f16.f16" : ".f32.bf16.bf16"), std::string::npos) << "the products' type";
  EXPECT_EQ(ptx.find(half ? ".f32.bf16.bf16" : ".f32.f16.f16"), std::string::npos);
  EXPECT_NE(ptx.find(".entry " + kernel + (half ? "_f16(" : "(")), std::string::npos);
  if (half) EXPECT_NE(ptx.find("cvt.rn.f16x2.f32"), std::string::npos) << "C rounded to nearest fp16";
  return ptx;
}

}  // namespace

TEST(ImportTemplates, FusedAddRmsnormCompilesForEveryArch) {
  auto op = spec::load_operator(targets() / "rmsnorm");
  const std::string source = codegen::read_file((targets() / "rmsnorm" / "rmsnorm_rows.cu").string());
  unsigned seed = 30;
  for (const char* arch : kArchs) {
    for (auto& params : sample(op, "rows", 4, seed++, "RESIDUAL")) {
      SCOPED_TRACE(std::string(arch) + " " + key(params));
      auto r = compile(op.dir, codegen::render(source, params), arch);
      ASSERT_TRUE(r.ok) << r.log;
      EXPECT_TRUE(r.kernels.count("rmsnorm_rows_residual")) << r.log;
      EXPECT_TRUE(image_has_kernel(r.cubin, "rmsnorm_rows_residual"));
      EXPECT_FALSE(image_has_kernel(r.cubin, "rmsnorm_rows")) << "one entry point per module";
      EXPECT_FALSE(r.spills()) << r.log;
    }
  }
  // The default (no RESIDUAL) is the shipped operator's module: rmsnorm_rows alone.
  auto params = sample(op, "rows", 1, 1, "RESIDUAL").front();
  params.erase("RESIDUAL");
  auto r = compile(op.dir, codegen::render(source, params), "sm_90a");
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_TRUE(image_has_kernel(r.cubin, "rmsnorm_rows"));
  EXPECT_FALSE(image_has_kernel(r.cubin, "rmsnorm_rows_residual"));
}

TEST(ImportTemplates, Fp16GemmCompilesForEveryArch) {
  auto op = spec::load_operator(targets() / "gemm");
  const std::string source = codegen::read_file((targets() / "gemm" / "gemm_mma.cu").string());
  unsigned seed = 4096;
  for (const char* arch : kArchs) {
    for (const char* tpl : {"mma", "mma_splitk"}) {
      const bool splitk = std::string(tpl) == "mma_splitk";
      for (auto& params : sample(op, tpl, 2, seed++, "F16")) {
        SCOPED_TRACE(std::string(arch) + " " + tpl + " " + key(params));
        auto r = compile(op.dir, codegen::render(source, params), arch);
        ASSERT_TRUE(r.ok) << r.log;
        const std::vector<std::string> want =
            splitk ? std::vector<std::string>{"gemm_mma_splitk_f16", "gemm_splitk_reduce_f16"}
                   : std::vector<std::string>{"gemm_mma_f16"};
        for (auto& k : want) {
          EXPECT_TRUE(r.kernels.count(k)) << k << "\n" << r.log;
          EXPECT_TRUE(image_has_kernel(r.cubin, k)) << k;
        }
        for (const char* bf16 : {"gemm_mma", "gemm_mma_splitk", "gemm_splitk_reduce"})
          EXPECT_FALSE(image_has_kernel(r.cubin, bf16)) << bf16 << ": one element type per module";
        EXPECT_EQ(r.kernels.size(), want.size()) << r.log;
        // The same resources as the bf16 kernels of that configuration (registers, spills:
        // a few corners of the shipped space spill in both), so the bf16 constraints hold.
        auto bf16_params = params;
        bf16_params.erase("F16");
        auto rb = compile(op.dir, codegen::render(source, bf16_params), arch);
        ASSERT_TRUE(rb.ok) << rb.log;
        for (auto& k : want) {
          const auto& h = r.kernels[k];
          const auto& b = rb.kernels[k.substr(0, k.size() - 4)];
          EXPECT_EQ(h.registers, b.registers) << k;
          EXPECT_EQ(h.spill_stores + h.spill_loads, b.spill_stores + b.spill_loads) << k;
          EXPECT_EQ(h.static_smem, b.static_smem) << k;
        }
      }
    }
  }
}

// The fp16 module multiplies fp16 (a bf16 mma on fp16 bits would pass every compile check);
// the default module is the bf16 one, as before.
TEST(ImportTemplates, Fp16GemmIssuesTheFp16Mma) {
  auto op = spec::load_operator(targets() / "gemm");
  const std::string source = codegen::read_file((targets() / "gemm" / "gemm_mma.cu").string());
  std::map<std::string, long long> params = {{"BM", 128}, {"BN", 128},   {"BK", 32},    {"WM", 64},
                                             {"WN", 64},  {"STAGES", 4}, {"GROUP_M", 8}};
  const std::string f16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
  const std::string bf16 = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
  for (int half : {1, 0}) {
    auto p = params;
    if (half) p["F16"] = 1;
    auto r =
        codegen::compile_ptx({codegen::render(source, p), "t.cu", "compute_90", {op.dir, targets() / "common"}, {}});
    ASSERT_TRUE(r.ok) << r.log;
    const std::string& ptx = r.cubin;
    SCOPED_TRACE(half ? "F16 1" : "default");
    EXPECT_EQ(ptx.find(half ? bf16 : f16), std::string::npos);
    EXPECT_NE(ptx.find(half ? f16 : bf16), std::string::npos);
    EXPECT_NE(ptx.find(half ? ".entry gemm_mma_f16(" : ".entry gemm_mma("), std::string::npos);
    if (half) {
      EXPECT_NE(ptx.find("cvt.rn.f16.f32"), std::string::npos) << "C rounded to nearest";
    }
  }
}

// The Hopper template's fp16 build (F16 1, for imported fp16 gemm definitions): sampled
// configurations compile for sm_90a (its only architecture) with its three `_f16` kernels and
// no bf16 one, with the bf16 build's registers and no spill; its products are fp16 wgmmas
// and C is rounded to fp16, while the default build keeps bf16.
TEST(ImportTemplates, Fp16HopperGemmCompilesAndIssuesFp16Wgmma) {
  auto op = spec::load_operator(targets() / "gemm");
  const std::string source = codegen::read_file((targets() / "gemm" / "gemm_wgmma.cu").string());
  const std::vector<std::string> want = {"gemm_wgmma_f16", "gemm_wgmma_reduce_f16", "gemm_wgmma_unaligned_f16"};
  for (auto& params : sample(op, "wgmma", 3, 9090, "F16")) {
    SCOPED_TRACE(key(params));
    auto r = compile(op.dir, codegen::render(source, params), "sm_90a");
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_EQ(r.kernels.size(), want.size()) << r.log;
    for (auto& k : want) EXPECT_TRUE(image_has_kernel(r.cubin, k)) << k;
    for (const char* bf16 : {"gemm_wgmma", "gemm_wgmma_reduce", "gemm_wgmma_unaligned"})
      EXPECT_FALSE(image_has_kernel(r.cubin, bf16)) << bf16 << ": one element type per module";
    EXPECT_FALSE(r.spills()) << r.log;
    auto bf16_params = params;
    bf16_params.erase("F16");
    auto rb = compile(op.dir, codegen::render(source, bf16_params), "sm_90a");
    ASSERT_TRUE(rb.ok) << rb.log;
    EXPECT_EQ(r.kernels["gemm_wgmma_f16"].registers, rb.kernels["gemm_wgmma"].registers);
  }
  std::map<std::string, long long> params = {{"BM", 128},     {"BN", 128},   {"CONSUMERS", 2},
                                             {"PINGPONG", 1}, {"OCC", 1},    {"STAGES", 4},
                                             {"GROUP_M", 8},  {"SPLITK", 4}, {"FOLD", 0}};
  for (int half : {1, 0}) {
    SCOPED_TRACE(half ? "F16 1" : "default");
    const std::string ptx = element_type_ptx(op.dir, source, params, half, "compute_90a", "gemm_wgmma");
    // the reduce step waits for the main kernel (a programmatic dependent), which lets it start
    const size_t red = ptx.find(half ? ".entry gemm_wgmma_reduce_f16(" : ".entry gemm_wgmma_reduce(");
    ASSERT_NE(red, std::string::npos);
    EXPECT_NE(ptx.find("griddepcontrol.wait", red), std::string::npos);
    EXPECT_LT(ptx.find("griddepcontrol.launch_dependents"), red) << "in the main kernel";
  }
}

// The decode template's fp16 build: sampled configurations compile for every architecture
// with gemm_decode_f16 alone, the bf16 build's registers and no spill; its products are the
// fp16 mma.sync and C is rounded to fp16, while the default build keeps bf16.
TEST(ImportTemplates, Fp16DecodeGemmCompilesForEveryArchAndIssuesTheFp16Mma) {
  auto op = spec::load_operator(targets() / "gemm");
  const std::string source = codegen::read_file((targets() / "gemm" / "gemm_decode.cu").string());
  unsigned seed = 1616;
  for (const char* arch : kArchs) {
    for (auto& params : sample(op, "decode", 2, seed++, "F16")) {
      SCOPED_TRACE(std::string(arch) + " " + key(params));
      auto r = compile(op.dir, codegen::render(source, params), arch);
      ASSERT_TRUE(r.ok) << r.log;
      EXPECT_EQ(r.kernels.size(), 1u) << r.log;
      EXPECT_TRUE(image_has_kernel(r.cubin, "gemm_decode_f16"));
      EXPECT_FALSE(image_has_kernel(r.cubin, "gemm_decode")) << "one element type per module";
      EXPECT_FALSE(r.spills()) << r.log;
      auto bf16_params = params;
      bf16_params.erase("F16");
      auto rb = compile(op.dir, codegen::render(source, bf16_params), arch);
      ASSERT_TRUE(rb.ok) << rb.log;
      EXPECT_EQ(r.kernels["gemm_decode_f16"].registers, rb.kernels["gemm_decode"].registers);
    }
  }
  std::map<std::string, long long> params = {{"NJ", 2}, {"WARPS", 8}, {"MT", 1}, {"UNROLL", 4}, {"PF", 1}, {"OCC", 1}};
  for (int half : {1, 0}) {
    SCOPED_TRACE(half ? "F16 1" : "default");
    const std::string ptx = element_type_ptx(op.dir, source, params, half, "compute_90", "gemm_decode");
    if (!half) EXPECT_NE(ptx.find("cvt.rn.bf16x2.f32"), std::string::npos) << "C rounded to nearest bf16";
    // the weights are read once, past L1, with the 256-byte L2 prefetch hint (PF 1)
    EXPECT_NE(ptx.find("ld.global.nc.L1::no_allocate.L2::256B.v4.u32"), std::string::npos);
  }
}

TEST(ImportTemplates, ReferencesOfTheNewKernelsCompile) {
  struct Case {
    const char* op;
    std::vector<std::string> kernels;
  };
  for (const Case& c : {Case{"rmsnorm", {"rmsnorm_reference", "rmsnorm_residual_reference"}},
                        Case{"gemm", {"gemm_reference", "gemm_reference_f16"}}}) {
    const fs::path dir = targets() / c.op;
    const std::string src = codegen::read_file((dir / "reference.cu").string());
    for (const char* arch : kArchs) {
      auto r = compile(dir, src, arch);
      ASSERT_TRUE(r.ok) << c.op << " " << arch << ":\n" << r.log;
      for (auto& k : c.kernels) EXPECT_TRUE(image_has_kernel(r.cubin, k)) << k << " for " << arch;
    }
  }
}
