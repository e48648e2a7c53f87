// tests/core/codegen_test.cpp — rendering, NVRTC compilation for Hopper and
// Blackwell without a GPU, the cubin cache and the resource report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "codegen/compiler.h"
#include "codegen/render.h"

using namespace tessera::codegen;
namespace fs = std::filesystem;

namespace {
fs::path fresh_cache(const std::string& tag) {
  auto p = fs::temp_directory_path() / ("tessera-cache-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(p);
  return p;
}
const char* kKernel = R"(
extern "C" __global__ void scale(float* y, const float* x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * FACTOR;
})";
}  // namespace

TEST(Render, PrependsDefinesAndHashesContent) {
  std::string a = render(kKernel, {{"FACTOR", 2}});
  std::string b = render(kKernel, {{"FACTOR", 3}});
  EXPECT_NE(a.find("#define FACTOR 2\n"), std::string::npos);
  EXPECT_NE(content_hash(a), content_hash(b));
  EXPECT_EQ(content_hash(a), content_hash(render(kKernel, {{"FACTOR", 2}})));
  EXPECT_EQ(content_hash(a).size(), 16u);
}

TEST(Compiler, CompilesForHopperAndBlackwellAndCaches) {
  Compiler c(fresh_cache("arch"));
  for (const char* arch : {"sm_90a", "sm_100a", "sm_103a"}) {
    SCOPED_TRACE(arch);
    CompileRequest req{render(kKernel, {{"FACTOR", 2}}), "scale.cu", arch, {}, {}};
    auto r = c.compile(req);
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_FALSE(r.cache_hit);
    EXPECT_GT(r.cubin.size(), 100u);
    EXPECT_EQ(r.cubin.substr(1, 3), "ELF");
    ASSERT_TRUE(r.kernels.count("scale")) << r.log;
    EXPECT_GT(r.kernels.at("scale").registers, 0);
    EXPECT_FALSE(r.spills());
    auto again = c.compile(req);
    EXPECT_TRUE(again.cache_hit);
    EXPECT_EQ(again.cubin, r.cubin);
  }
}

TEST(Compiler, ReportsErrorsWithTheLog) {
  Compiler c(fresh_cache("err"));
  auto r = c.compile({"extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", "sm_90a", {}, {}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("undefined_thing"), std::string::npos) << r.log;
  EXPECT_TRUE(
      c.compile({"extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", "sm_90a", {}, {}}).cache_hit);
}

TEST(Compiler, ParsesSpillsFromThePtxasReport) {
  std::string log =
      "ptxas info    : Compiling entry function 'big' for 'sm_90a'\n"
      "ptxas info    : Function properties for big\n"
      "    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]\n";
  auto k = parse_resource_report(log);
  ASSERT_TRUE(k.count("big"));
  EXPECT_EQ(k["big"].registers, 255);
  EXPECT_EQ(k["big"].spill_stores, 40);
  EXPECT_EQ(k["big"].spill_loads, 36);
  EXPECT_EQ(k["big"].static_smem, 4096);
}

TEST(Compiler, CompilesManyInParallelInOrder) {
  Compiler c(fresh_cache("many"));
  std::vector<CompileRequest> reqs;
  for (int f = 1; f <= 4; ++f) reqs.push_back({render(kKernel, {{"FACTOR", f}}), "scale.cu", "sm_90a", {}, {}});
  reqs.push_back({"this is not CUDA", "bad.cu", "sm_90a", {}, {}});
  auto rs = c.compile_many(reqs, 2);
  ASSERT_EQ(rs.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(rs[i].ok);
  EXPECT_FALSE(rs[4].ok);
  EXPECT_NE(rs[0].key, rs[1].key);
}

#include "evaluator/builtin_kernels.h"

TEST(Compiler, TheEvaluatorsOwnKernelsCompileForEveryArchitecture) {
  Compiler c(fresh_cache("builtin"));
  for (const char* arch : {"sm_90a", "sm_100a", "sm_103a"}) {
    auto r = c.compile({tessera::evaluator::kBuiltinKernelSource, "builtins.cu", arch, {}, {}});
    ASSERT_TRUE(r.ok) << arch << ":\n" << r.log;
    for (const char* k : {"tessera_fill_bf16", "tessera_fill_i64", "tessera_compare_bf16", "tessera_compare_f32",
                          "tessera_compare_same_bf16", "tessera_count_diff", "tessera_read_flush", "tessera_gate"})
      EXPECT_TRUE(r.kernels.count(k)) << k << " missing for " << arch;
  }
}
