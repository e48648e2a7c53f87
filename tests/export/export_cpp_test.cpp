// tests/export/export_cpp_test.cpp — `tessera export` without a GPU: spec expressions
// translated to C++ agree with spec::eval; the champions of recorded H200 databases
// export for sm_90a and sm_103a with a manifest that says what they are; the generated
// C ABI library and its consumer example build (CMake, add_subdirectory and an installed
// package found with find_package); and the library loads without a driver and says so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "export/expr_to_c.h"
#include "spec/spec.h"
#include "tests/support/shell.h"

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::testing::shell;

namespace {

fs::path temp_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("tessera-export-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A recorded database, unpacked when gzipped.
fs::path recorded(const std::string& name, const fs::path& dir) {
  fs::path src = fs::path(TESSERA_SOURCE_DIR) / "runs/recorded" / name;
  fs::path dst = dir / fs::path(name).stem();
  if (src.extension() == ".gz") {
    auto r = shell("gzip -dc '" + src.string() + "' > '" + (dir / fs::path(name).stem()).string() + "'");
    EXPECT_EQ(r.code, 0) << r.out;
  } else {
    dst = dir / name;
    fs::copy_file(src, dst);
  }
  return dst;
}

std::string run_tessera(const std::string& args, int* code = nullptr) {
  auto r = shell("TESSERA_TARGETS=" + std::string(TESSERA_SOURCE_DIR) + "/targets " + TESSERA_BINARY + " " + args);
  if (code) *code = r.code;
  return r.out;
}

std::string cuda_include() {
  return TESSERA_CUDA_INCLUDE;
}

// The C++ package's gemm source at DIR/pkg compiled as a consumer would (warnings are errors).
auto compile_gemm_package(const fs::path& dir) {
  return shell("c++ -std=c++17 -Wall -Werror -I '" + (dir / "pkg/cpp/include").string() + "' -I '" + cuda_include() +
               "' -c '" + (dir / "pkg/cpp/src/tessera_gemm.cpp").string() + "' -o '" + (dir / "gemm.o").string() + "'");
}

}  // namespace

// Every launch, scratch and scalar expression of the three operators' specs, with
// random symbol values, evaluated by the translated C++ and by spec::eval.
TEST(ExportExpressions, TranslatedExpressionsAgreeWithTheSpecEvaluator) {
  std::vector<std::string> exprs = {"cdiv(M, 64) * (N > 4 ? 2 : 3)",
                                    "-2^2",
                                    "max(M, N, 7) - min(M, 3)",
                                    "M % 5 + mod(N, 4)",
                                    "(M <= N) && (N != 3) || 0",
                                    "floor(N / 3) + ceil(M / 7)",
                                    "sqrt(N) * 2.5e-1",
                                    "1 - (M == N)",
                                    "M > 4 ? N > 4 ? 1 : 2 : 3"};
  for (const char* op : {"rmsnorm", "gemm", "kda"}) {
    auto o = tessera::spec::load_operator(fs::path(TESSERA_SOURCE_DIR) / "targets" / op);
    for (auto& t : o.templates) {
      for (auto& k : t.launch) {
        for (auto& e : k.grid) exprs.push_back(e);
        for (auto& e : k.block) exprs.push_back(e);
        exprs.push_back(k.smem);
      }
      for (auto& s : t.scratch) exprs.push_back(s.size);
    }
    for (auto& sc : o.scalars) exprs.push_back(sc.expr);
  }
  // Every name any of them uses, bound to random values (parameters from 1 to 128).
  std::set<std::string> names = {"M", "N", "K", "T", "H", "V", "NSEQ", "SMS"};
  for (const char* op : {"rmsnorm", "gemm", "kda"})
    for (auto& t : tessera::spec::load_operator(fs::path(TESSERA_SOURCE_DIR) / "targets" / op).templates)
      for (auto& [p, v] : t.params) names.insert(p);
  names.insert("eps");
  names.insert("scale");
  names.insert("lower_bound");
  std::mt19937 rng(5);
  fs::path dir = temp_dir("expr");
  std::string prog = "#include <cmath>\n#include <cstdio>\n";
  prog += tessera::exporter::expr_helpers_source();
  prog += "int main() {\n";
  std::vector<tessera::spec::Bindings> trials(4);
  for (size_t t = 0; t < trials.size(); ++t)
    for (auto& n : names) trials[t][n] = static_cast<double>(1 + rng() % 128);
  std::vector<double> expected;
  for (size_t t = 0; t < trials.size(); ++t) {
    prog += "{\n";
    for (auto& [n, v] : trials[t]) prog += "const double v_" + n + " = " + std::to_string(v) + ";\n";
    for (auto& e : exprs) {
      std::string c = tessera::exporter::expr_to_c(e, [](const std::string& id) { return "v_" + id; });
      prog += "std::printf(\"%.17g\\n\", static_cast<double>(" + c + "));\n";
      expected.push_back(tessera::spec::eval(e, trials[t]));
    }
    prog += "}\n";
  }
  prog += "}\n";
  std::ofstream(dir / "expr.cpp") << prog;
  auto build = shell("c++ -std=c++17 -w -o '" + (dir / "expr").string() + "' '" + (dir / "expr.cpp").string() + "'");
  ASSERT_EQ(build.code, 0) << build.out;
  auto run = shell("'" + (dir / "expr").string() + "'");
  ASSERT_EQ(run.code, 0);
  std::istringstream got(run.out);
  for (size_t i = 0; i < expected.size(); ++i) {
    double v = 0;
    ASSERT_TRUE(got >> v) << "output ends at " << i;
    EXPECT_NEAR(v, expected[i], 1e-9 * std::max(1.0, std::fabs(expected[i]))) << exprs[i % exprs.size()];
  }
  EXPECT_THROW(tessera::exporter::expr_to_c("foo(M)", [](const std::string& s) { return s; }), std::runtime_error);
  EXPECT_THROW(tessera::exporter::expr_to_c("M +", [](const std::string& s) { return s; }), std::runtime_error);
  EXPECT_THROW(tessera::exporter::expr_to_c("(M", [](const std::string& s) { return s; }), std::runtime_error);
  fs::remove_all(dir);
}

// rmsnorm's champion of the first H200 run, for Hopper and Blackwell: manifest, images,
// PTX, and a consumer built against the package both ways.
TEST(ExportCpp, TheRmsnormChampionExportsForHopperAndBlackwellAndItsConsumerBuilds) {
  fs::path dir = temp_dir("rmsnorm");
  fs::path db = recorded("h200-2026-11-30.db", dir);
  // The champion, as the leaderboard has it.
  auto board = json::parse(run_tessera("leaderboard rmsnorm --json --limit 1 --db " + db.string()));
  ASSERT_FALSE(board.empty());
  long long champion = board[0]["candidate"];
  int code = 0;
  std::string out = run_tessera("export rmsnorm --best --arch sm_90a,sm_103a --format cpp --out " +
                                    (dir / "pkg").string() + " --db " + db.string(),
                                &code);
  ASSERT_EQ(code, 0) << out;
  auto m = json::parse(read(dir / "pkg/manifest.json"));
  EXPECT_EQ(m["operator"], "rmsnorm");
  EXPECT_EQ(m["archs"], json::array({"sm_90a", "sm_103a"}));
  ASSERT_EQ(m["candidates"].size(), 1u);
  auto& c = m["candidates"][0];
  EXPECT_EQ(c["id"], champion);
  EXPECT_EQ(c["name"], "c" + std::to_string(champion));
  EXPECT_EQ(c["template"], "rows");
  EXPECT_EQ(c["archs"], json::array({"sm_90a", "sm_103a"}));
  EXPECT_EQ(c["ptx"], "compute_90") << "PTX for the lowest architecture's portable virtual one";
  EXPECT_EQ(c["figures"]["device"], "NVIDIA H200");
  EXPECT_NEAR(c["figures"]["geomean_speedup"].get<double>(), board[0]["geomean_speedup"].get<double>(), 1e-12);
  EXPECT_EQ(c["figures"]["shapes"].size(), 4u);
  {  // how many times it was judged ok on that GPU model, as `show` lists its evaluations
    std::string show = "show ";
    show.append(std::to_string(champion)).append(" --json --db ").append(db.string());
    auto shown = json::parse(run_tessera(show));
    long long ok_here = 0;
    for (auto& e : shown["evaluations"]) ok_here += e["status"] == "ok" && e["device"] == "NVIDIA H200";
    EXPECT_EQ(c["figures"]["judged"], ok_here);
    EXPECT_GE(ok_here, 1);
  }
  EXPECT_FALSE(m["spec_hash"].get<std::string>().empty());
  EXPECT_EQ(m["dispatch"]["fallback"], c["name"]);
  for (const char* arch : {"sm_90a", "sm_103a"}) {
    std::string cubin = read(dir / "pkg/kernels" / (c["name"].get<std::string>() + "." + arch + ".cubin"));
    ASSERT_GT(cubin.size(), 1000u) << arch;
    EXPECT_EQ(cubin.substr(0, 4),
              "\x7f"
              "ELF")
        << arch;
  }
  EXPECT_NE(read(dir / "pkg/kernels" / (c["name"].get<std::string>() + ".ptx")).find(".target sm_90"),
            std::string::npos);
  EXPECT_NE(read(dir / "pkg/src" / (c["name"].get<std::string>() + ".cu")).find("rmsnorm_rows"), std::string::npos);
  // The header declares the struct in spec order.
  std::string h = read(dir / "pkg/cpp/include/tessera_rmsnorm.h");
  EXPECT_LT(h.find("CUdeviceptr x;"), h.find("CUdeviceptr w;"));
  EXPECT_LT(h.find("CUdeviceptr y;"), h.find("long long M;"));
  EXPECT_LT(h.find("long long N;"), h.find("CUdeviceptr scratch;"));
  // The consumer example builds by add_subdirectory...
  std::string cmake = "cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -S '" + (dir / "pkg/cpp/example").string() + "' -B '";
  auto b1 = shell(cmake + (dir / "b1").string() + "' && cmake --build '" + (dir / "b1").string() + "'");
  ASSERT_EQ(b1.code, 0) << b1.out;
  EXPECT_TRUE(fs::exists(dir / "b1/rmsnorm_example"));
  // ... and against the installed package, found by find_package.
  auto inst = shell("cmake -G Ninja -S '" + (dir / "pkg/cpp").string() + "' -B '" + (dir / "bl").string() +
                    "' && cmake --build '" + (dir / "bl").string() + "' && cmake --install '" + (dir / "bl").string() +
                    "' --prefix '" + (dir / "prefix").string() + "'");
  ASSERT_EQ(inst.code, 0) << inst.out;
  auto b2 = shell(cmake + (dir / "b2").string() + "' -DTESSERA_PACKAGE_FIND=ON -DCMAKE_PREFIX_PATH='" +
                  (dir / "prefix").string() + "' && cmake --build '" + (dir / "b2").string() + "'");
  ASSERT_EQ(b2.code, 0) << b2.out;
  // Linked without the driver, the library says there is no GPU instead of failing to load.
  std::ofstream(dir / "nogpu.cpp") << R"(#include "tessera_rmsnorm.h"
#include <cstdio>
int main() {
  tessera_rmsnorm_args a{};
  a.x = a.w = a.y = 256; a.M = 4; a.N = 8;
  int e = tessera_rmsnorm_launch(&a, nullptr);
  std::printf("%d %s\n", e, tessera_rmsnorm_error());
  return e == 1 ? 0 : 1;
}
)";
  auto ng = shell("c++ -std=c++17 -I '" + (dir / "pkg/cpp/include").string() + "' -I '" + cuda_include() + "' '" +
                  (dir / "nogpu.cpp").string() + "' '" + (dir / "pkg/cpp/src/tessera_rmsnorm.cpp").string() +
                  "' -ldl -lpthread -o '" + (dir / "nogpu").string() + "' && '" + (dir / "nogpu").string() + "'");
  if (fs::exists("/dev/nvidia0")) GTEST_SKIP() << "a GPU is present: the no-driver path is not what runs here";
  EXPECT_EQ(ng.code, 0) << ng.out;
  EXPECT_NE(ng.out.find("1 no GPU driver: libcuda.so.1"), std::string::npos) << ng.out;
  fs::remove_all(dir);
}

// kda's champion (chunk_wgmma, side launches, tensor maps, scratch), per shape: every
// benchmark shape's champion packed with an exact dispatch rule; its template exists
// for sm_90a only, so sm_103a is reported as unavailable rather than failing.
TEST(ExportCpp, KdaPerShapeChampionsExportWithDispatchRulesAndBuild) {
  fs::path dir = temp_dir("kda");
  fs::path db = recorded("h200-kda-2026-12-01u.db.gz", dir);
  int code = 0;
  std::string out = run_tessera("export kda --per-shape --arch sm_90a,sm_103a --format cpp --out " +
                                    (dir / "pkg").string() + " --db " + db.string(),
                                &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("has no image for sm_103a"), std::string::npos) << out;
  auto m = json::parse(read(dir / "pkg/manifest.json"));
  auto board = json::parse(run_tessera("leaderboard kda --json --limit 1 --db " + db.string()));
  EXPECT_EQ(m["candidates"][0]["id"], board[0]["candidate"]);
  EXPECT_EQ(m["candidates"][0]["archs"], json::array({"sm_90a"}));
  EXPECT_TRUE(m["candidates"][0]["figures"]["unavailable"].contains("sm_103a"));
  // One rule per benchmark shape, each naming a packed candidate, with kda's symbols.
  auto per_shape = json::parse(run_tessera("leaderboard kda --per-shape --json --db " + db.string()));
  ASSERT_EQ(m["dispatch"]["rules"].size(), per_shape.size());
  std::set<std::string> packed;
  for (auto& c : m["candidates"]) packed.insert(c["name"]);
  for (auto& r : m["dispatch"]["rules"]) {
    EXPECT_TRUE(packed.count(r["candidate"])) << r;
    for (const char* s : {"T", "H", "K", "V", "NSEQ"}) EXPECT_TRUE(r["symbols"].contains(s)) << r;
    bool found = false;
    for (auto& ps : per_shape)
      if (ps["shape"] == r["shape"]) {
        found = true;
        EXPECT_EQ("c" + std::to_string(ps["candidate"].get<long long>()), r["candidate"]);
      }
    EXPECT_TRUE(found) << r;
  }
  std::string src = read(dir / "pkg/cpp/src/tessera_kda.cpp");
  EXPECT_NE(src.find("tessera_encode_tmap"), std::string::npos);
  EXPECT_NE(src.find("tessera_fork"), std::string::npos) << "PIPE 1 runs the state kernel on the side stream";
  auto b = shell("cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -S '" + (dir / "pkg/cpp/example").string() + "' -B '" +
                 (dir / "b").string() + "' && cmake --build '" + (dir / "b").string() + "'");
  ASSERT_EQ(b.code, 0) << b.out;
  // Usage errors name what is wrong.
  std::string bad =
      run_tessera("export kda --format wheel --out " + (dir / "x").string() + " --db " + db.string(), &code);
  EXPECT_EQ(code, 2) << bad;
  bad = run_tessera("export kda --candidate 999999 --out " + (dir / "x").string() + " --db " + db.string(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(bad.find("no candidate #999999"), std::string::npos) << bad;
  fs::remove_all(dir);
}

// gemm's champion of the same run (the mma template), for Hopper and Blackwell: the
// third operator, so that every operator's champion is exported here.
TEST(ExportCpp, TheGemmChampionExportsForHopperAndBlackwellAndItsLibraryCompiles) {
  fs::path dir = temp_dir("gemm");
  fs::path db = recorded("h200-2026-11-30.db", dir);
  auto board = json::parse(run_tessera("leaderboard gemm --json --limit 1 --db " + db.string()));
  ASSERT_FALSE(board.empty());
  int code = 0;
  std::string out =
      run_tessera("export gemm --arch sm_90a,sm_103a --out " + (dir / "pkg").string() + " --db " + db.string(), &code);
  ASSERT_EQ(code, 0) << out;
  auto m = json::parse(read(dir / "pkg/manifest.json"));
  auto& c = m["candidates"][0];
  EXPECT_EQ(c["id"], board[0]["candidate"]);
  EXPECT_EQ(c["archs"], json::array({"sm_90a", "sm_103a"}));
  for (const char* arch : {"sm_90a", "sm_103a"})
    EXPECT_EQ(read(dir / "pkg/kernels" / (c["name"].get<std::string>() + "." + arch + ".cubin")).substr(0, 4),
              "\x7f"
              "ELF");
  std::string h = read(dir / "pkg/cpp/include/tessera_gemm.h");
  EXPECT_LT(h.find("long long M;"), h.find("long long K;"));
  auto cc = compile_gemm_package(dir);
  EXPECT_EQ(cc.code, 0) << cc.out;
  fs::remove_all(dir);
}

// gemm's wgmma champion (recorded on the H200, 2026-12-03; stored before candidates kept
// their plans, so it takes the template's plan of today): its split-K reduce step is a
// programmatic dependent launch ("pdl"), which the package's C++ launches through
// cuLaunchKernelEx (the main kernel as before); the library compiles.
TEST(ExportCpp, TheWgmmaGemmChampionLaunchesItsReduceAsAProgrammaticDependent) {
  fs::path dir = temp_dir("gemm-wgmma");
  fs::path db = recorded("h200-gemm-wgmma-2026-12-03.db.gz", dir);
  auto board = json::parse(run_tessera("leaderboard gemm --json --limit 1 --db " + db.string()));
  ASSERT_FALSE(board.empty());
  ASSERT_EQ(board[0]["params"]["SPLITK"], 4) << board[0];
  int code = 0;
  std::string out =
      run_tessera("export gemm --arch sm_90a --out " + (dir / "pkg").string() + " --db " + db.string(), &code);
  ASSERT_EQ(code, 0) << out;
  auto m = json::parse(read(dir / "pkg/manifest.json"));
  const std::string manifest = m.dump();
  EXPECT_NE(manifest.find("gemm_wgmma_reduce"), std::string::npos) << manifest.substr(0, 2000);
  std::string src = read(dir / "pkg/cpp/src/tessera_gemm.cpp");
  EXPECT_NE(src.find("cuLaunchKernelEx"), std::string::npos);
  EXPECT_NE(src.find("stream, params, true)"), std::string::npos) << "the reduce step launched as a dependent";
  EXPECT_NE(src.find("stream, params)"), std::string::npos) << "the main kernel launched as before";
  auto cc = compile_gemm_package(dir);
  EXPECT_EQ(cc.code, 0) << cc.out;
  fs::remove_all(dir);
}

// The per-shape export of gemm's H100 table of 2026-12-05 (runs/recorded/h100-gemm-tiles-...):
// champions of 48 and 96 columns, whose B tensor map has boxes of 16 rows (the plan's entry
// chosen by `when`: BN % 64 != 0), beside 64-multiple tiles (boxes of 64 rows) and the decode
// template; the package builds.
TEST(ExportCpp, PerShapeGemmPacksTheNarrowTilesWithTheirSixteenRowBoxes) {
  fs::path dir = temp_dir("gemm-tiles");
  fs::path db = recorded("h100-gemm-tiles-2026-12-05.db.gz", dir);
  // with the H200 search whose champions this H100 history judged again (for `judged` below)
  const fs::path h200 = recorded("h200-gemm-wgmma-2026-12-04.db.gz", dir);
  ASSERT_NE(run_tessera("merge " + db.string() + " " + h200.string()).find("merged"), std::string::npos);
  auto board = json::parse(
      run_tessera("leaderboard gemm --per-shape --json --device 'NVIDIA H100 80GB HBM3' --db " + db.string()));
  std::set<long long> widths;
  for (auto& r : board)
    if (r["params"].contains("BN")) widths.insert(r["params"]["BN"].get<long long>());  // (wgmma's)
  ASSERT_TRUE(widths.count(48) && widths.count(96) && widths.count(128)) << board.dump();
  int code = 0;
  std::string out =
      run_tessera("export gemm --per-shape --device 'NVIDIA H100 80GB HBM3' --arch sm_90a --format cpp --out " +
                      (dir / "pkg").string() + " --db " + db.string(),
                  &code);
  ASSERT_EQ(code, 0) << out;
  std::string src = read(dir / "pkg/cpp/src/tessera_gemm.cpp");
  EXPECT_NE(src.find("const unsigned box[] = {64u, 16u, }"), std::string::npos) << "B's boxes of 16 rows";
  EXPECT_NE(src.find("const unsigned box[] = {64u, 64u, }"), std::string::npos) << "and of 64";
  EXPECT_NE(src.find("gemm_decode"), std::string::npos) << "the decode template's champions";
  // Each candidate's `judged`: its ok evaluations on the GPU model of its figures, as `show`
  // lists them (the H200's champions were judged here once, on the H100, and on the H200 before:
  // a count over every model would differ); those judged once are named on stdout.
  auto m = json::parse(read(dir / "pkg/manifest.json"));
  std::set<std::string> named_once;  // "  judged once on MODEL: c1, c2 (...)"
  if (auto at = out.find("judged once on "); at != std::string::npos) {
    std::string names = out.substr(out.find(": ", at) + 2);
    names = names.substr(0, names.find(" ("));
    for (size_t b = 0, e; b < names.size(); b = e + 2) {
      e = std::min(names.find(", ", b), names.size());
      named_once.insert(names.substr(b, e - b));
    }
  }
  int other_models = 0, once = 0;
  for (auto& c : m["candidates"]) {
    std::string show = "show ";
    show.append(std::to_string(c["id"].get<long long>())).append(" --json --db ").append(db.string());
    auto shown = json::parse(run_tessera(show));
    long long here = 0, all = 0;
    for (auto& e : shown["evaluations"]) {
      all += e["status"] == "ok";
      here += e["status"] == "ok" && e["device"] == c["figures"]["device"];
    }
    EXPECT_EQ(c["figures"]["judged"], here) << c["name"];
    other_models += all != here;
    once += here == 1;
    EXPECT_EQ(named_once.count(c["name"].get<std::string>()) == 1, here == 1) << c["name"] << out;
  }
  EXPECT_EQ(named_once.size(), static_cast<size_t>(once)) << out;
  EXPECT_GT(other_models, 0) << "the data must tell a count per GPU model from one over all";
  auto cc = compile_gemm_package(dir);
  EXPECT_EQ(cc.code, 0) << cc.out;
  fs::remove_all(dir);
}

// An operator made by `tessera import` exports a Solution for the definition it came from
// (unchanged, with its own workloads), and its C++ package builds: the champion of the
// recorded H200 run of fused_add_rmsnorm_h4096 (docs/import.md).
TEST(ExportImported, TheSolutionIsForTheOriginalDefinitionAndTheConsumerBuilds) {
  fs::path dir = temp_dir("imported");
  fs::path db = recorded("h200-import-2026-12-02.db.gz", dir);
  const fs::path src = TESSERA_SOURCE_DIR;
  fs::create_directories(dir / "targets");
  fs::create_directory_symlink(src / "targets/common", dir / "targets/common");
  const fs::path def = src / "tests/data/flashinfer-trace/definitions/rmsnorm/fused_add_rmsnorm_h4096.json";
  auto im = shell("TESSERA_TARGETS='" + (src / "targets").string() + "' " + TESSERA_BINARY + " import '" +
                  def.string() + "' --out '" + (dir / "targets").string() + "'");
  ASSERT_EQ(im.code, 0) << im.out;
  const std::string env = "TESSERA_TARGETS='" + (dir / "targets").string() + "' ";
  auto ex = shell(env + TESSERA_BINARY +
                  " export fused_add_rmsnorm_h4096 --best --arch sm_90a --format cpp,flashinfer --out '" +
                  (dir / "pkg").string() + "' --db '" + db.string() + "'");
  ASSERT_EQ(ex.code, 0) << ex.out;
  const fs::path fi = dir / "pkg/flashinfer";
  EXPECT_EQ(read(fi / "definitions/rmsnorm/fused_add_rmsnorm_h4096.json"), read(def)) << "the definition, unchanged";
  EXPECT_EQ(read(fi / "workloads/rmsnorm/fused_add_rmsnorm_h4096.jsonl"),
            read(src / "tests/data/flashinfer-trace/workloads/rmsnorm/fused_add_rmsnorm_h4096.jsonl"));
  std::vector<fs::path> sols;
  for (auto& e : fs::directory_iterator(fi / "solutions/rmsnorm")) sols.push_back(e.path());
  ASSERT_EQ(sols.size(), 1u);
  auto sol = json::parse(read(sols[0]));
  EXPECT_EQ(sol["definition"], "fused_add_rmsnorm_h4096");
  EXPECT_EQ(sol["spec"]["binding"], "torch");
  EXPECT_EQ(sol["spec"]["destination_passing_style"], true);
  std::string binding = sol["sources"][0]["content"];
  size_t a = binding.find("torch::Tensor hidden_states"), b = binding.find("torch::Tensor residual"),
         c = binding.find("torch::Tensor weight"), d = binding.find("torch::Tensor output");
  ASSERT_NE(a, std::string::npos) << binding;
  EXPECT_TRUE(a < b && b < c && c < d) << "run's positional order, then the output: " << binding;
  EXPECT_NE(binding.find("4096"), std::string::npos) << "the const axis checked in the binding";
  std::string cmake = "cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -S '" + (dir / "pkg/cpp/example").string() + "' -B '";
  auto b1 = shell(cmake + (dir / "b1").string() + "' && cmake --build '" + (dir / "b1").string() + "'");
  ASSERT_EQ(b1.code, 0) << b1.out;
  fs::remove_all(dir);
}
