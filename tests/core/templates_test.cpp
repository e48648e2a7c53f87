// tests/core/templates_test.cpp — every shipped template, reference and
// baseline compiles with NVRTC for sm_90a and sm_103a (sampled configurations; every
// configuration of a space of at most 24), without spilling, and with at least the
// shared memory its kernels declare (TESSERA_SMEM_<kernel>); templates that do not
// support an architecture say so. Also: every tile-library header compiles on its own
// for each architecture, and the wgmma / bulk-copy helpers compile together; kda's launch
// expressions follow its chunk length CH.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <regex>
#include <set>

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

codegen::CompileResult compile(const spec::Operator& op, const std::string& src, const std::string& arch) {
  static codegen::Compiler compiler;  // the user cache: repeated test runs are fast
  return compiler.compile({src, "t.cu", arch, {op.dir, targets() / "common"}, {}});
}

constexpr int kSamples = 3;
constexpr int kAllUpTo =
    24;  // spaces this small are compiled whole (kda: 18 + 20 + 16 + 2; spills depend on the configuration)
}  // namespace

class Templates : public ::testing::TestWithParam<std::string> {};

TEST_P(Templates, ReferenceAndBaselineCompile) {
  auto op = spec::load_operator(targets() / GetParam());
  for (const char* arch : {"sm_90a", "sm_103a"}) {
    for (auto* p : {&op.reference, &op.baseline}) {
      if (!p->builtin.empty()) continue;
      auto r = compile(op, codegen::read_file(p->source.string()), arch);
      EXPECT_TRUE(r.ok) << p->source << " for " << arch << ":\n" << r.log;
    }
  }
}

TEST_P(Templates, SampledVariantsCompileWithoutSpills) {
  auto op = spec::load_operator(targets() / GetParam());
  for (auto& tpl : op.templates) {
    auto space = agent::template_space(tpl);
    auto configs = space.valid_configs();
    ASSERT_FALSE(configs.empty()) << tpl.name << ": no valid configuration";
    std::mt19937 rng(42);
    std::shuffle(configs.begin(), configs.end(), rng);
    std::string source = codegen::read_file(tpl.source.string());
    for (const char* arch : {"sm_90a", "sm_103a"}) {
      bool applicable = tpl.arch.empty() || std::count(tpl.arch.begin(), tpl.arch.end(), arch);
      if (!applicable) continue;  // recorded as not_applicable by optimize, never compiled
      const int n = static_cast<int>(configs.size()) <= kAllUpTo ? static_cast<int>(configs.size()) : kSamples;
      for (int i = 0; i < n && i < static_cast<int>(configs.size()); ++i) {
        auto params = agent::config_params(tpl, configs[i]);
        // A kernel may state the dynamic shared memory its layout needs as
        // TESSERA_SMEM_<kernel>: then the spec's launch must give at least that much
        // (checked by the compiler, at the first benchmark shape).
        std::string contract;
        if (!op.benchmark_shapes.empty()) {
          spec::Bindings b = op.bindings(op.benchmark_shapes.front());
          for (auto& [k, v] : params) b[k] = static_cast<double>(v);
          for (auto& k : tpl.launch)
            contract += fmt::format(
                "\n#ifdef TESSERA_SMEM_{0}\nstatic_assert(TESSERA_SMEM_{0} <= {1}LL, \"spec.json gives {0} {1} bytes "
                "of "
                "shared memory, less than its layout needs\");\n#endif\n",
                k.kernel, spec::eval_int(k.smem, b));
        }
        auto r = compile(op, codegen::render(source, params) + contract, arch);
        SCOPED_TRACE(tpl.name + " " + arch + " " + space.key(configs[i]));
        ASSERT_TRUE(r.ok) << r.log;
        // Every kernel the plan launches at some shape and SM count must be in the module (a
        // launch whose grid is empty or whose `when` is 0 everywhere for this configuration,
        // e.g. PIPE 0's beside kernels, may name a kernel the configuration leaves out).
        for (auto& k : tpl.launch) {
          bool launched = false;
          std::vector<spec::Shape> shapes = op.validation_shapes;
          shapes.insert(shapes.end(), op.benchmark_shapes.begin(), op.benchmark_shapes.end());
          for (auto& shape : shapes)
            for (double sms : {114.0, 132.0, 148.0}) {
              spec::Bindings b = op.bindings(shape);
              for (auto& [name, v] : params) b[name] = static_cast<double>(v);
              b[spec::kSmCountSymbol] = sms;
              launched = launched || spec::launched(k, b);
            }
          if (launched) {
            EXPECT_TRUE(r.kernels.count(k.kernel)) << "kernel " << k.kernel << " missing";
          }
        }
        EXPECT_FALSE(r.spills()) << r.log;
      }
    }
  }
}

// Operators with templates of their own: a suite (`extends`, e.g. kda_long) compiles its
// base's templates, which the base's instance compiles already.
static std::vector<std::string> operators_with_own_templates() {
  std::vector<std::string> out;
  for (auto& name : spec::list_operators(targets())) {
    bool suite = false;
    try {
      suite = !spec::load_operator(targets() / name).extends.empty();
    } catch (const std::exception&) {
      // (kept: its tests then fail on the spec's error, where discovery would abort)
    }
    if (!suite) out.push_back(name);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shipped, Templates, ::testing::ValuesIn(operators_with_own_templates()),
                         [](const auto& info) { return info.param; });

// The tile library's headers (what templates and LLM proposals include) compile on
// their own, for every architecture the templates target: each includes what it
// uses, and the sm_90a-only instructions (wgmma) fall back to a trap elsewhere. The same
// for kda's own helpers (targets/kda/ops), which build on the tile library.
TEST(TileLibrary, EveryHeaderCompilesOnItsOwnForEachArch) {
  static codegen::Compiler compiler;
  const std::pair<fs::path, const char*> folders[] = {{targets() / "common" / "tile", "tile"},
                                                      {targets() / "kda" / "ops", "ops"}};
  for (auto& [dir, prefix] : folders) {
    std::vector<fs::path> headers;
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".cuh") headers.push_back(e.path());
    ASSERT_GE(headers.size(), 4u) << dir;
    std::sort(headers.begin(), headers.end());
    for (auto& h : headers)
      for (const char* arch : {"sm_90a", "sm_100a", "sm_103a"}) {
        std::string src = fmt::format("#include \"{}/{}\"\nextern \"C\" __global__ void tessera_probe() {{}}\n", prefix,
                                      h.filename().string());
        auto r = compiler.compile({src, "probe.cu", arch, {targets() / "common", targets() / "kda"}, {}});
        EXPECT_TRUE(r.ok) << h.filename() << " for " << arch << ":\n" << r.log;
      }
  }
}

// The generic tile library holds nothing of an operator's: no header declares an
// operator's namespace or includes anything outside the library (kda's helpers live in
// targets/kda/ops; issue 32).
TEST(TileLibrary, HoldsNothingOperatorSpecific) {
  std::set<std::string> operators;
  for (auto& name : spec::list_operators(targets())) operators.insert(name);
  ASSERT_TRUE(operators.count("kda"));
  const std::regex include(R"re(#include\s+"([^"]+)")re");
  for (auto& e : fs::directory_iterator(targets() / "common" / "tile")) {
    const std::string text = codegen::read_file(e.path().string());
    for (auto& op : operators)
      EXPECT_EQ(text.find("namespace " + op + " "), std::string::npos) << e.path().filename() << " declares " << op;
    for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it) {
      const fs::path inc = (*it)[1].str();
      EXPECT_TRUE(fs::exists(e.path().parent_path() / inc) ||
                  (inc.begin() != inc.end() && *inc.begin() == "tile" && fs::exists(targets() / "common" / inc)))
          << e.path().filename() << " includes " << inc;
    }
  }
}

// The register-A wgmma forms (what tests/gpu checks against the CPU on an sm_90a GPU)
// compile for sm_90a without spills, and (trapping) for Blackwell.
TEST(TileLibrary, RegisterAWgmmaFixtureCompiles) {
  static codegen::Compiler compiler;
  const std::string src =
      codegen::read_file((fs::path(TESSERA_SOURCE_DIR) / "tests/gpu/fixtures/tile_wgmma_rs.cu").string());
  for (const char* arch : {"sm_90a", "sm_103a"}) {
    auto r = compiler.compile({src, "tile_wgmma_rs.cu", arch, {targets() / "common", targets() / "kda"}, {}});
    ASSERT_TRUE(r.ok) << arch << ":\n" << r.log;
    EXPECT_TRUE(r.kernels.count("tile_wgmma_rs")) << arch;
    EXPECT_FALSE(r.spills()) << r.log;
  }
}

// The wide shared-memory products' fixture (tile/warpgroup.cuh's m64n256k16 and m64n192k16,
// tests/gpu/tile_wgmma_test.cpp) compiles for sm_90a without spills (224 accumulators a
// thread), and traps but compiles for Blackwell.
TEST(TileLibrary, WideWgmmaFixtureCompiles) {
  static codegen::Compiler compiler;
  const std::string src =
      codegen::read_file((fs::path(TESSERA_SOURCE_DIR) / "tests/gpu/fixtures/tile_wgmma_wide.cu").string());
  for (const char* arch : {"sm_90a", "sm_103a"}) {
    auto r = compiler.compile({src, "tile_wgmma_wide.cu", arch, {targets() / "common"}, {}});
    ASSERT_TRUE(r.ok) << arch << ":\n" << r.log;
    EXPECT_TRUE(r.kernels.count("tile_wgmma_wide")) << arch;
    EXPECT_FALSE(r.spills()) << r.log;
  }
}

// A warpgroup product, a bulk copy on an mbarrier and a bulk store, as the kda kernels
// use them, compile for sm_90a without spills; for Blackwell the same source compiles too.
TEST(TileLibrary, WgmmaAndBulkCopyCompile) {
  static codegen::Compiler compiler;
  const std::string src = R"(#include "ops/wgmma.cuh"
#include "tile/bulk_copy.cuh"
extern "C" __global__ void __launch_bounds__(128) probe(const __half* g, float* out) {
  extern __shared__ __align__(1024) unsigned char sm[];
  const tile::u32 s = (tile::smem_addr(sm) + 1023u) & ~1023u, mb = s + 16384;
  if (threadIdx.x == 0) {
    tile::mbar_init(mb, 1);
    tile::mbar_expect_tx(mb, 16384);
    tile::bulk_g2s(s, g, 16384, mb);
  }
  __syncthreads();
  tile::mbar_wait(mb, 0);
  kda::frag_c d[8];
  kda::wgmma_fence();
  kda::wgmma_m64n64k16<0, 1, 0>(d, kda::desc_kmajor(s), kda::desc_mnmajor(s + 8192, 8192));
  kda::wgmma_m64n64k16<1, 1>(d, kda::desc_mnmajor(s, 8192), kda::desc_mnmajor(s + 8192, 8192));
  kda::wgmma_commit();
  kda::wgmma_wait<0>();
  for (int j = 0; j < 8; ++j) out[threadIdx.x * 8 + j] = d[j].x[0] + d[j].x[3] + (float)kda::sw128_off<64>(j, 8 * j);
  __syncthreads();
  kda::fence_async_shared();
  if (threadIdx.x == 0) {  // and back out: a bulk store of the tile
    tile::bulk_s2g(out + 1024, s, 16384);
    tile::bulk_commit();
    tile::bulk_wait_read<0>();
  }
}
)";
  for (const char* arch : {"sm_90a", "sm_103a"}) {
    auto r = compiler.compile({src, "probe.cu", arch, {targets() / "common", targets() / "kda"}, {}});
    ASSERT_TRUE(r.ok) << arch << ":\n" << r.log;
    EXPECT_TRUE(r.kernels.count("probe")) << arch;
    EXPECT_FALSE(r.spills()) << r.log;
  }
}

// kda's chunk length is a searched parameter: chunk_wgmma and chunk_wgmma_seg offer CH 64
// and 32 (32 only on GM 2, whose state chain handles 32-row chunks), and every launch
// expression follows CH: one intra block of 128 threads per 32-token chunk slot with the CH
// 32 kernel's 51,072 bytes, 256 threads per 64-token slot; the state buffers and the
// per-slot scratch shrink with CH. UA (u formed by the state kernel, which then also
// buffers v's rows) is offered with CH 32 only (chunk_wgmma_seg's goes with its RC 1); RC only with UA: RC 1 (qg, kd,
// w formed by the state kernel's third and fourth warpgroups from q, k, g; a state block of
// 512 threads with the producer's raw slots and G in shared memory) and RC 2 (a ninth warp
// that only copies; 288 threads). PIPE 1 (RC 1 only) moves the state kernel beside the intra
// kernel where the chains leave SMs free, after a head start over the chunk slots counted from
// LEAD: the main launches' grids are then empty and the beside ones cover every slot once.
TEST(KdaChunkLength, SpacesAndLaunchesFollowCH) {
  auto op = spec::load_operator(targets() / "kda");
  const spec::Shape* one_long = nullptr;  // h96_1x8192: NSEQ 1, T 8192, H 96
  const spec::Shape* h64 = nullptr;       // h64_1x8192: 64 chains, beside with every LEAD
  for (auto& s : op.benchmark_shapes) {
    if (s.name == "h96_1x8192") one_long = &s;
    if (s.name == "h64_1x8192") h64 = &s;
  }
  ASSERT_NE(one_long, nullptr);
  ASSERT_NE(h64, nullptr);
  for (const char* name : {"chunk_wgmma", "chunk_wgmma_seg"}) {
    SCOPED_TRACE(name);
    const spec::Program* tpl = op.find_template(name);
    ASSERT_NE(tpl, nullptr);
    ASSERT_TRUE(tpl->params.count("CH"));
    EXPECT_EQ(tpl->params.at("CH"), (std::vector<long long>{64, 32}));
    auto launch = [&](const std::string& kernel, bool side) -> const spec::KernelLaunch* {
      const spec::KernelLaunch* found = nullptr;  // (the last of that name and stream)
      for (auto& k : tpl->launch)
        if (k.kernel == kernel && (k.stream == "side") == side) found = &k;
      return found;
    };
    const spec::KernelLaunch* intra = launch("kda_chunk_intra", false);
    const spec::KernelLaunch* state = launch("kda_chunk_state", false);
    ASSERT_NE(intra, nullptr);
    ASSERT_NE(state, nullptr);
    auto space = agent::template_space(*tpl);
    int ch32 = 0, n_ua = 0, n_rc = 0, n_pipe = 0;
    for (auto& c : space.valid_configs()) {
      auto params = agent::config_params(*tpl, c);
      const long long ch = params.at("CH");
      const long long rc = params.count("RC") ? params.at("RC") : 0;
      const long long ua = params.count("UA") ? params.at("UA") : rc;  // (chunk_wgmma_seg: UA = RC)
      const long long pipe = params.count("PIPE") ? params.at("PIPE") : 0;
      const long long lead = params.count("LEAD") ? params.at("LEAD") : 0;
      if (rc >= 1) {
        ++n_rc;
        EXPECT_EQ(ua, 1) << space.key(c);
      }
      if (ua == 1) {
        ++n_ua;
        EXPECT_EQ(ch, 32) << space.key(c);
      }
      if (ch == 32) {
        ++ch32;
        EXPECT_EQ(params.at("GM"), 2) << space.key(c);
      }
      if (pipe) {
        ++n_pipe;
        EXPECT_EQ(rc, 1) << space.key(c);
      }
      EXPECT_TRUE(pipe || lead == 0) << space.key(c);
      spec::Bindings b = op.bindings(*one_long);
      for (auto& [k, v] : params) b[k] = static_cast<double>(v);
      b[spec::kSmCountSymbol] = 132;
      const long long slots = 1 + 8192 / ch;
      // h96_1x8192 (96 chains of 132 SMs): beside the intra kernel only with a head start
      const bool beside = pipe && lead > 0;
      EXPECT_EQ(spec::launched(*intra, b), !beside) << space.key(c);
      if (!beside) {
        EXPECT_EQ(spec::eval_int(intra->grid[0], b), slots) << space.key(c);
      }
      if (std::string(name) == "chunk_wgmma") {  // (chunk_wgmma_seg: a block per segment)
        EXPECT_EQ(spec::launched(*state, b), !beside) << space.key(c);
        if (!beside) {
          EXPECT_EQ(spec::eval_int(state->grid[0], b), 96) << space.key(c);
        }
      }
      EXPECT_EQ(spec::eval_int(intra->block[0], b), ch == 32 ? 128 : 256) << space.key(c);
      if (ch == 32) {
        // UA 1: five blocks per SM (5 x (44,416 + 1,024 reserved) <= 233,472); UA 0: v's tile
        EXPECT_EQ(spec::eval_int(intra->smem, b), ua ? 44416 : 50560) << space.key(c);
        if (ua) {
          EXPECT_LE(5 * (spec::eval_int(intra->smem, b) + 1024), 233472) << space.key(c);
        }
      }
      EXPECT_EQ(spec::eval_int(state->smem, b),
                (params.at("GM") == 2 ? 0 : 49152) +
                    (ua ? 3 * 29696 + 4 * 8192 + 8192 : 2 * (ch == 32 ? 35840 : 75776)) +
                    (rc == 1   ? 2 * 29696 + 64
                     : rc == 2 ? 64
                               : 0) +
                    1024)
          << space.key(c);
      EXPECT_EQ(spec::eval_int(state->block[0], b), rc == 1 ? 512 : rc == 2 ? 288 : 256) << space.key(c);
      if (const spec::KernelLaunch* seg = launch("kda_chunk_seg", false)) {  // (the split's other chain kernel)
        EXPECT_EQ(spec::eval_int(seg->block[0], b), spec::eval_int(state->block[0], b)) << space.key(c);
        EXPECT_EQ(spec::eval_int(seg->smem, b), spec::eval_int(state->smem, b)) << space.key(c);
      }
      if (pipe) {
        // the head start's slots and the rest cover every chunk slot once, beside 96 state blocks
        const spec::KernelLaunch* first = launch("kda_chunk_intra_lead", false);
        const spec::KernelLaunch* rest = launch("kda_chunk_intra_beside", false);
        const spec::KernelLaunch* side = launch("kda_chunk_state_beside", true);
        ASSERT_TRUE(first && rest && side);
        for (const spec::Shape* shape : {one_long, h64}) {
          spec::Bindings bs = op.bindings(*shape);
          for (auto& [k, v] : params) bs[k] = static_cast<double>(v);
          bs[spec::kSmCountSymbol] = 132;
          const long long H = shape == h64 ? 64 : 96;
          const bool on = shape == h64 || lead > 0;
          const long long ks =
              shape == h64 ? 0 : static_cast<long long>(std::floor(slots * (1.0 - lead / 100.0 * 36 / 96)));
          EXPECT_EQ(spec::launched(*side, bs), on) << space.key(c);
          EXPECT_EQ(spec::launched(*first, bs), on && ks > 0) << space.key(c);  // (no head start: none)
          EXPECT_EQ(spec::launched(*rest, bs), on) << space.key(c);
          if (!on) continue;
          EXPECT_EQ(spec::eval_int(side->grid[0], bs), H) << space.key(c);
          EXPECT_EQ(spec::eval_int(first->grid[0], bs), H) << space.key(c);
          EXPECT_EQ(spec::eval_int(rest->grid[0], bs), H) << space.key(c);
          EXPECT_EQ(spec::eval_int(first->grid[1], bs), ks) << space.key(c);
          EXPECT_EQ(spec::eval_int(first->grid[1], bs) + spec::eval_int(rest->grid[1], bs), slots) << space.key(c);
        }
      }
      for (auto& s : tpl->scratch) {
        if (s.name == "P") {
          EXPECT_EQ(spec::eval_int(s.size, b), (1 + 8192 / ch) * 96 * ch * ch) << space.key(c);
        }
      }
    }
    EXPECT_GT(ch32, 0);
    const bool wgmma = std::string(name) == "chunk_wgmma";
    // chunk_wgmma: CH 32 x TRN 0, 1 x (RC 0, RC 1 PIPE 0, RC 1 PIPE 1 x LEAD 0, 85, 100, 115,
    // RC 2); chunk_wgmma_seg: CH 32 x TRN 0, 1 x RC 1 x (SEG 8 .. 256, or NSEG 3 .. 16 at SEG 8)
    EXPECT_EQ(n_ua, wgmma ? 14 : 22);
    EXPECT_EQ(n_rc, wgmma ? 12 : 22);
    EXPECT_EQ(n_pipe, wgmma ? 8 : 0);
  }
}
