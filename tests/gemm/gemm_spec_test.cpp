// tests/gemm/gemm_spec_test.cpp — CPU tests of gemm's Hopper template `wgmma`
// (targets/gemm/gemm_wgmma.cu, issue 33):
//   * its launch plan: at every validation and benchmark shape and on 114, 132 and 148 SMs,
//     K % 8 == 0 runs gemm_wgmma (TMA needs 16-byte row strides) and anything else the
//     SIMT fallback, never both; a second step runs exactly where the kernel splits k
//     (the spec's let SPLITS against the kernel's splits_of, written out again here): with
//     FOLD 0 the reduce step after the kernel, its programmatic dependent, with FOLD 1 the
//     counters' reset before it, the kernel its programmatic dependent; the grid is
//     min(OCC x SMS, tiles x splits) and the scratch holds every split's partials (and with
//     FOLD 1 a counter per tile, consumer part and warp after them); with STREAMK 1, where the
//     kernel streams the last round's tiles (the spec's let SKON against the kernel's
//     stream_k, written out again here), the counters' reset runs first, the kernel its
//     programmatic dependent, and the scratch holds every stream tile's parts and counters;
//   * the stream's shares: they cover the stream's k-tiles once, every block's is at least a
//     third of a tile's k-tiles, and no tile has more parts than the scratch has slots
//     (SKP) or the kernel's sums take (4);
//   * the template space: the constraints keep exactly the 18 tile shapes (12 with the
//     consumers sharing a tile, 6 ping-pong) whose accumulators fit (at most 128 registers a
//     thread) and the stages that fit in shared memory, and two blocks a SM (OCC 2) only with
//     one consumer, at most 64 accumulators a thread and half the shared memory;
//   * NVRTC compiles each tile shape (at its deepest ring, and at OCC 2 where allowed, with
//     SPLITK 8, FOLD 0 and 1) for sm_90a with the three kernels, nothing spilled, no wgmma
//     serialized by ptxas and, where a disassembler is found (tests/support/sass.h), no
//     kernel moving its products' descriptors to uniform registers (R2UR) before each; with
//     FOLD 1 the kernel waits for the step before it and counts with an acquire-release
//     atomic (no sequentially consistent fence), with FOLD 0 it does neither.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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

const spec::Program& wgmma(const spec::Operator& op) {
  const spec::Program* t = op.find_template("wgmma");
  if (!t) throw std::runtime_error("targets/gemm/spec.json has no template 'wgmma'");
  return *t;
}

// gemm_wgmma.cu's splits_of: every tile split SPLITK ways at decode widths (32 M SPLITK <= K),
// otherwise only where the tiles are fewer than the block slots (OCC x SMS); never more than
// the k-tiles of 64.
long long kernel_splits(long long M, long long N, long long K, long long bm, long long bn, long long splitk,
                        long long slots) {
  const long long tiles = ((M + bm - 1) / bm) * ((N + bn - 1) / bn);
  const long long s = std::min({32 * M * splitk <= K ? splitk : slots / tiles, splitk, (K + 63) / 64});
  return std::max(1LL, s);
}

// gemm_wgmma.cu's stream_k: where (and over how many tiles and slots of parts) the last round's
// tiles, or all of them where they are fewer than the blocks, are streamed. {0, 0} where the
// kernel does not stream.
struct Stream {
  long long tiles = 0, parts = 0;
};
Stream kernel_stream(long long M, long long N, long long K, long long bm, long long bn, long long splits,
                     long long slots) {
  const long long tiles = ((M + bm - 1) / bm) * ((N + bn - 1) / bn), kt = (K + 63) / 64;
  const long long full = tiles / slots, tail = tiles - full * slots;
  const long long skt = tail + (2 * tail < slots && full >= 2 ? slots : 0), share = skt * kt / slots;
  if (!(splits == 1 && tail > 0 && (full == 0 || 2 * skt >= slots) && 3 * share >= kt &&
        skt * kt * slots < (1LL << 32)))
    return {};
  return {skt, (kt - 1) / share + 2};
}

long long rows(const std::map<std::string, long long>& p) {
  return p.at("PINGPONG") == 1 ? p.at("BM") : p.at("BM") / p.at("CONSUMERS");
}

// The steps that launch at bindings b: (kernel, pdl) in plan order.
std::vector<std::pair<std::string, bool>> launched_steps(const spec::Program& t, const spec::Bindings& b) {
  std::vector<std::pair<std::string, bool>> steps;
  for (const auto& k : t.launch)
    if (spec::launched(k, b)) steps.emplace_back(k.kernel, k.pdl);
  return steps;
}

// The PTX of gemm_wgmma's entry (the main kernel) in the template built with params; empty,
// with the failure reported, where it does not compile.
std::string main_kernel_ptx(const spec::Operator& op, const std::string& source,
                            const std::map<std::string, long long>& params) {
  auto r = codegen::compile_ptx(
      {codegen::render(source, params), "gemm_wgmma.cu", "compute_90a", {op.dir, targets() / "common"}, {}});
  if (!r.ok) {
    ADD_FAILURE() << r.log;
    return {};
  }
  const std::string& ptx = r.cubin;
  const size_t main = ptx.find(".entry gemm_wgmma(");
  if (main == std::string::npos) {
    ADD_FAILURE() << "no gemm_wgmma entry";
    return {};
  }
  const size_t next = ptx.find(".entry", main + 1);
  return ptx.substr(main, next == std::string::npos ? std::string::npos : next - main);
}

}  // namespace

TEST(GemmWgmma, PlanRoutesEveryShapeAndSplitsAsTheKernelDoes) {
  auto op = spec::load_operator(targets() / "gemm");
  const spec::Program& t = wgmma(op);
  ASSERT_EQ(t.scratch.size(), 1u);
  using Steps = std::vector<std::pair<std::string, bool>>;
  const Steps unsplit = {{"gemm_wgmma", false}}, fallback = {{"gemm_wgmma_unaligned", false}};
  // FOLD 0: the reduce step after the kernel, its programmatic dependent; FOLD 1: the
  // counters' reset first, the kernel its programmatic dependent
  const Steps reduce = {{"gemm_wgmma", false}, {"gemm_wgmma_reduce", true}};
  const Steps fold = {{"gemm_wgmma_reduce", false}, {"gemm_wgmma", true}};
  std::vector<spec::Shape> shapes = op.validation_shapes;
  shapes.insert(shapes.end(), op.benchmark_shapes.begin(), op.benchmark_shapes.end());
  for (long long k : {8LL, 4104LL, 4095LL, 100LL, 320LL}) shapes.push_back({"extra", {{"M", 3}, {"N", 77}, {"K", k}}});
  // a K so long that the stream's walk would leave 32 bits (no stream-K there)
  shapes.push_back({"long_k", {{"M", 4096}, {"N", 4096}, {"K", 1LL << 25}}});
  auto space = agent::template_space(t);
  std::map<std::string, int> cases;
  for (const auto& c : space.valid_configs()) {
    auto params = agent::config_params(t, c);
    if (params.at("GROUP_M") != 1) continue;  // (GROUP_M is in no launch expression)
    for (const auto& s : shapes)
      for (double sms : {114.0, 132.0, 148.0}) {
        spec::Bindings b = op.bindings(s);
        for (auto& [name, v] : params) b[name] = static_cast<double>(v);
        b[spec::kSmCountSymbol] = sms;
        const long long M = s.symbols.at("M"), N = s.symbols.at("N"), K = s.symbols.at("K");
        SCOPED_TRACE(s.label() + " SMS " + std::to_string(sms) + " " + space.key(c));
        const Steps steps = launched_steps(t, b);
        if (K % 8 != 0) {
          EXPECT_EQ(steps, fallback);
          ++cases["fallback"];
          continue;
        }
        const long long bm = params.at("BM"), bn = params.at("BN");
        const long long slots = params.at("OCC") * static_cast<long long>(sms);
        const long long splits = kernel_splits(M, N, K, bm, bn, params.at("SPLITK"), slots);
        const long long tiles = ((M + bm - 1) / bm) * ((N + bn - 1) / bn);
        const bool folded = params.at("FOLD") == 1;
        const Stream sk = params.at("STREAMK") == 1 ? kernel_stream(M, N, K, bm, bn, splits, slots) : Stream{};
        if (sk.tiles > 0) {
          EXPECT_EQ(steps, fold);  // (the counters' reset, then the kernel)
          EXPECT_EQ(spec::eval_int(t.scratch[0].size, b),
                    sk.tiles * sk.parts * bm * bn + sk.tiles * (bm / rows(params)) * 4);
          EXPECT_GE(spec::eval_int(t.launch[0].grid[0], b) * 256, sk.tiles * (bm / rows(params)) * 4);
          EXPECT_EQ(spec::eval_int(t.launch[2].grid[0], b), slots) << "the stream's shares are of OCC x SMS blocks";
          ++cases["streamk"];
          continue;
        }
        EXPECT_EQ(steps, splits == 1 ? unsplit : folded ? fold : reduce);
        ++cases[splits == 1 ? "unsplit" : folded ? "fold" : "reduce"];
        // the counters: one a tile, consumer part (two consumers sharing a tile) and warp
        const long long counters = tiles * (params.at("PINGPONG") == 1 ? 1 : params.at("CONSUMERS")) * 4;
        for (const auto& k : t.launch) {
          if (!spec::launched(k, b)) continue;
          const long long grid = spec::eval_int(k.grid[0], b);
          if (k.kernel == "gemm_wgmma") {
            EXPECT_EQ(grid, std::min(slots, tiles * splits));
            // B's boxes: 64 rows, or 16 for the tiles of 48 and 96 columns (kBBox)
            EXPECT_EQ(spec::parse_tensor_map_arg(k.args.back())->box, (std::vector<int>{64, bn % 64 == 0 ? 64 : 16}));
          } else {
            EXPECT_GE(grid * (folded ? 256 : 1024), folded ? counters : M * N);
          }
        }
        if (splits > 1) {
          EXPECT_EQ(spec::eval_int(t.scratch[0].size, b), splits * M * N + (folded ? counters : 0));
        }
      }
  }
  EXPECT_GT(cases["reduce"], 500);  // the split path is exercised by the validation shapes too
  EXPECT_GT(cases["fold"], 500);
  EXPECT_GT(cases["unsplit"], 500);
  EXPECT_GT(cases["streamk"], 500);  // the benchmark shapes of more tiles than blocks
  EXPECT_GT(cases["fallback"], 0);
}

// The kernel's stream (cursor_of, next_unit, block_of, stream_part; written out again here) at
// every tile shape, benchmark shape and SM count where it runs: the blocks' shares cover the
// stream's k-tiles once and in order, each at least a third of a tile's k-tiles; each tile's
// parts are those of blocks b0 .. b0 + parts - 1 (block_of), at most SKP (the slots the scratch
// holds) and at most 4 (the sums' registers); a tile whole in one share takes no slot.
TEST(GemmWgmma, TheStreamsSharesCoverItsTilesOnceInAtMostFourParts) {
  auto op = spec::load_operator(targets() / "gemm");
  std::vector<spec::Shape> shapes = op.benchmark_shapes;
  shapes.insert(shapes.end(), op.validation_shapes.begin(), op.validation_shapes.end());
  shapes.push_back({"odd", {{"M", 4000}, {"N", 4100}, {"K", 4104}}});
  shapes.push_back({"short_k", {{"M", 8192}, {"N", 8192}, {"K", 192}}});
  int streams = 0, split_tiles = 0;
  for (const auto& s : shapes)
    for (long long bm : {64LL, 128LL, 256LL})
      for (long long bn : {64LL, 128LL, 192LL, 256LL})
        for (long long slots : {114LL, 132LL, 148LL, 264LL}) {
          const long long M = s.symbols.at("M"), N = s.symbols.at("N"), K = s.symbols.at("K");
          const Stream sk = kernel_stream(M, N, K, bm, bn, 1, slots);
          if (sk.tiles == 0) continue;
          SCOPED_TRACE(s.label() + " " + std::to_string(bm) + "x" + std::to_string(bn) + " slots " +
                       std::to_string(slots));
          ++streams;
          const long long kt = (K + 63) / 64, w = sk.tiles * kt;
          auto block_of = [&](long long x) { return ((x + 1) * slots - 1) / w; };
          std::vector<int> parts(sk.tiles, 0);
          long long covered = 0;
          for (long long b = 0; b < slots; ++b) {
            const long long lo = b * w / slots, hi = (b + 1) * w / slots;
            EXPECT_EQ(lo, covered);
            EXPECT_GE(3 * (hi - lo), kt);
            covered = hi;
            for (long long it = lo; it < hi;) {  // next_unit's cuts
              const long long t = it / kt, stop = std::min(hi, (t + 1) * kt);
              ++parts[t];
              const long long b0 = block_of(t * kt);
              EXPECT_LE(b0, b);
              EXPECT_LT(b - b0, sk.parts) << "the block's slot is in the scratch";
              it = stop;
            }
          }
          EXPECT_EQ(covered, w);
          for (long long t = 0; t < sk.tiles; ++t) {
            EXPECT_EQ(parts[t], block_of(t * kt + kt - 1) - block_of(t * kt) + 1);
            EXPECT_LE(parts[t], 4);
            EXPECT_LE(parts[t], sk.parts);
            split_tiles += parts[t] > 1;
          }
        }
  EXPECT_GT(streams, 50);
  EXPECT_GT(split_tiles, 1000);
}

TEST(GemmWgmma, SpaceKeepsTheTileShapesWhoseAccumulatorsFit) {
  auto op = spec::load_operator(targets() / "gemm");
  const spec::Program& t = wgmma(op);
  ASSERT_EQ(t.arch, std::vector<std::string>{"sm_90a"});
  auto space = agent::template_space(t);
  std::set<std::tuple<long long, long long, long long, long long>> tiles;
  std::set<std::pair<long long, long long>> occ2;
  for (const auto& c : space.valid_configs()) {
    auto p = agent::config_params(t, c);
    const bool ping = p.at("PINGPONG") == 1;
    EXPECT_TRUE(!ping || p.at("CONSUMERS") == 2) << space.key(c);
    const long long rows = ping ? p.at("BM") : p.at("BM") / p.at("CONSUMERS");
    EXPECT_TRUE(rows == 64 || rows == 128) << space.key(c);
    EXPECT_LE(rows * p.at("BN"), 16384) << space.key(c);
    EXPECT_LE(p.at("STAGES") * (p.at("BM") + p.at("BN")) * 128 + 256, 232448) << space.key(c);
    if (p.at("OCC") == 2) {  // two blocks a SM: registers (65536 / 512) and shared memory (228 KB)
      EXPECT_EQ(p.at("CONSUMERS"), 1) << space.key(c);
      EXPECT_LE(rows * p.at("BN"), 8192) << space.key(c);
      EXPECT_LE(2 * (p.at("STAGES") * (p.at("BM") + p.at("BN")) * 128 + 256 + 1024), 233472) << space.key(c);
      occ2.insert({p.at("BM"), p.at("BN")});
    }
    tiles.insert({p.at("BM"), p.at("BN"), p.at("CONSUMERS"), p.at("PINGPONG")});
    // the tiles of 48 and 96 columns are for shapes they fill in one round: no split sums
    // in the kernel, no stream (both lose where measured, README "Known problems")
    if (p.at("BN") % 64 != 0) EXPECT_TRUE(p.at("FOLD") == 0 && p.at("STREAMK") == 0) << space.key(c);
  }
  EXPECT_EQ(occ2,
            (std::set<std::pair<long long, long long>>{{64, 48}, {64, 64}, {64, 96}, {64, 128}, {128, 48}, {128, 64}}));
  // BN 48, 64, 96, 128, 192, 256 where a consumer owns 64 rows, up to 128 where it owns 128.
  // One consumer: 64 x 6 widths, 128 x 4; two sharing a tile: 128 x 6, 256 x 4; two in
  // ping-pong: 64 x 6, 128 x 4
  EXPECT_EQ(tiles.size(), 30u);
  EXPECT_TRUE(tiles.count({64, 96, 1, 0}));  // M 128, N 6144: 128 tiles for 132 SMs
  EXPECT_TRUE(tiles.count({128, 48, 2, 0}));
  EXPECT_TRUE(tiles.count({128, 256, 2, 0}));
  EXPECT_TRUE(tiles.count({256, 128, 2, 0}));
  EXPECT_TRUE(tiles.count({128, 128, 2, 1}));
  EXPECT_FALSE(tiles.count({256, 256, 2, 0}));  // 128 rows x 256 columns: 256 accumulators a thread
  EXPECT_FALSE(tiles.count({128, 256, 2, 1}));  // the same, a ping-pong consumer owning the tile
}

TEST(GemmWgmma, EveryTileShapeCompilesWithoutSpillsOrSerializedProducts) {
  auto op = spec::load_operator(targets() / "gemm");
  const spec::Program& t = wgmma(op);
  auto space = agent::template_space(t);
  // the deepest ring of each tile shape (the most shared memory, the longest unrolled code)
  // and the most splits, their sums added by the reduce step (FOLD 0) and in the kernel (FOLD 1)
  using Key = std::tuple<long long, long long, long long, long long, long long, long long, long long>;
  std::map<Key, std::map<std::string, long long>> deepest;
  for (const auto& c : space.valid_configs()) {
    auto p = agent::config_params(t, c);
    auto& d = deepest[{p.at("BM"), p.at("BN"), p.at("CONSUMERS"), p.at("PINGPONG"), p.at("OCC"), p.at("FOLD"),
                       p.at("STREAMK")}];
    if (d.empty() || p.at("STAGES") > d.at("STAGES") ||
        (p.at("STAGES") == d.at("STAGES") && p.at("SPLITK") > d.at("SPLITK")))
      d = p;
  }
  // the 30 tile shapes, and 6 of them also at two blocks a SM, each with FOLD 0, and those
  // of 64-multiple widths (18 and 3) with FOLD 1 and STREAMK 1 (with FOLD 0) too: 21 x 3 + 15
  ASSERT_EQ(deepest.size(), 78u);
  static codegen::Compiler compiler;
  const std::string source = codegen::read_file(t.source.string());
  std::string no_sass;
  const bool sass = !tessera::testing::cuobjdump(&no_sass).empty();
  if (!sass) std::cerr << "gemm_wgmma's SASS not checked: " << no_sass << "\n";
  for (const auto& [tile, params] : deepest) {
    std::string label;
    for (auto& [n, v] : params) label += n + "=" + std::to_string(v) + " ";
    SCOPED_TRACE(label);
    auto r = compiler.compile(
        {codegen::render(source, params), "gemm_wgmma.cu", "sm_90a", {op.dir, targets() / "common"}, {}});
    ASSERT_TRUE(r.ok) << r.log;
    for (const char* k : {"gemm_wgmma", "gemm_wgmma_reduce", "gemm_wgmma_unaligned"})
      EXPECT_TRUE(r.kernels.count(k)) << k;
    EXPECT_FALSE(r.spills()) << r.log;
    EXPECT_EQ(r.log.find("C7518"), std::string::npos) << r.log;
    EXPECT_EQ(r.log.find("serialized"), std::string::npos) << r.log;
    if (sass) EXPECT_EQ(tessera::testing::descriptors_moved(r.cubin), "");
  }
}

// With FOLD 1 the kernel (the split sums added by each tile's last split) waits for the
// counters' reset before it (a programmatic dependent) and counts itself in with an atomic
// that is acquire-release at GPU scope, with no membar.gl (fence.sc, which cost 4-400 % on the
// H200: journal 2026-12-04); with FOLD 0 it does none of that (its reduce step waits).
TEST(GemmWgmma, FoldedReduceCountsArrivalsWithAnAcquireReleaseAtomic) {
  auto op = spec::load_operator(targets() / "gemm");
  const spec::Program& t = wgmma(op);
  const std::string source = codegen::read_file(t.source.string());
  std::map<std::string, long long> params = {{"BM", 128}, {"BN", 128},   {"CONSUMERS", 2}, {"PINGPONG", 1},
                                             {"OCC", 1},  {"STAGES", 6}, {"GROUP_M", 8},   {"SPLITK", 4}};
  for (long long fold : {0LL, 1LL}) {
    params["FOLD"] = fold;
    SCOPED_TRACE("FOLD " + std::to_string(fold));
    const std::string body = main_kernel_ptx(op, source, params);
    ASSERT_FALSE(body.empty());
    const size_t wait = body.find("griddepcontrol.wait"), atom = body.find("atom.acq_rel.gpu.global.add.u32");
    if (fold == 0) {
      EXPECT_EQ(wait, std::string::npos);
      EXPECT_EQ(atom, std::string::npos);
      EXPECT_EQ(body.find("st.global.v4."), std::string::npos) << "8-byte partial stores, as before";
      continue;
    }
    ASSERT_NE(atom, std::string::npos);
    EXPECT_LT(wait, atom) << "the counters are read only after their reset";
    EXPECT_EQ(body.find("membar.gl"), std::string::npos) << "no sequentially consistent fence";
    EXPECT_EQ(body.find("fence.sc"), std::string::npos) << "no sequentially consistent fence";
    EXPECT_NE(body.find("ld.global.cg.v4.f32", atom), std::string::npos) << "16-byte loads past L1";
    EXPECT_NE(body.find("st.global.v4."), std::string::npos) << "16-byte partial stores";
  }
}

// The builds whose unit loop ends in the sums of a tile's parts (FOLD 1, STREAMK 1) broadcast
// each ring stage's address from lane 0 before its products (stage_of): without it ptxas keeps
// the products' descriptors in ordinary registers and moves them to uniform ones before every
// wgmma (24 R2UR a k-slice at 128x128 ping-pong, every STREAMK 1 configuration's geomean 10-17 %
// lower on the H200: journal 2026-12-05). The other builds have no broadcast there: their code is as before.
TEST(GemmWgmma, SummingBuildsBroadcastTheStageAddressBeforeTheProducts) {
  auto op = spec::load_operator(targets() / "gemm");
  const spec::Program& t = wgmma(op);
  const std::string source = codegen::read_file(t.source.string());
  std::map<std::string, long long> params = {{"BM", 128}, {"BN", 128},   {"CONSUMERS", 2}, {"PINGPONG", 1},
                                             {"OCC", 1},  {"STAGES", 6}, {"GROUP_M", 8},   {"SPLITK", 4},
                                             {"FOLD", 0}, {"STREAMK", 0}};
  for (auto [fold, streamk] : {std::pair{0LL, 0LL}, {1LL, 0LL}, {0LL, 1LL}}) {
    params["FOLD"] = fold;
    params["STREAMK"] = streamk;
    SCOPED_TRACE("FOLD " + std::to_string(fold) + " STREAMK " + std::to_string(streamk));
    const std::string body = main_kernel_ptx(op, source, params);
    ASSERT_FALSE(body.empty());
    // the consumer's first wait on the ring before its first product, and what lies between
    const size_t product = body.find("wgmma.mma_async");
    ASSERT_NE(product, std::string::npos);
    const size_t wait = body.rfind("mbarrier.try_wait", product);
    ASSERT_NE(wait, std::string::npos);
    const bool broadcast = body.substr(wait, product - wait).find("shfl.sync.idx") != std::string::npos;
    EXPECT_EQ(broadcast, fold == 1 || streamk == 1);
  }
}
