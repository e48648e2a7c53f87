// tests/gpu/export_test.cpp — an exported package run by a C++ program of the user's
// (the cpp format's example, built with CMake against the package) or through its torch
// package (pip-installed, torch.ops.tessera.<op>) gives the same
// outputs as `tessera run` with the same candidate, on inputs drawn from the spec's
// distributions: rmsnorm's and kda's champions of recorded H200 runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "evaluator/npy.h"
#include "spec/spec.h"
#include "tests/support/gpu.h"
#include "tests/support/shell.h"

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::testing::shell;

namespace {

std::string binary() {
  const char* e = std::getenv("TESSERA_BIN");
  return e ? e : TESSERA_BINARY;
}

fs::path temp_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("tessera-gpu-export-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Inputs for one shape from the spec's distributions, as `tessera run` reads them.
void write_inputs(const tessera::spec::Operator& op, const tessera::spec::Shape& s, const fs::path& dir) {
  namespace npy = tessera::npy;
  std::mt19937 rng(11);
  auto b = op.bindings(s);
  for (auto& t : op.tensors) {
    if (t.output) continue;
    std::vector<std::int64_t> shape;
    size_t n = 1;
    for (auto& e : t.shape) shape.push_back(tessera::spec::eval_int(e, b)), n *= static_cast<size_t>(shape.back());
    if (t.init.dist == "cu_seqlens") {
      std::vector<std::int64_t> cu(1, 0);
      for (long long l : s.seqlens) cu.push_back(cu.back() + l);
      npy::write_as(dir / (t.name + ".npy"), npy::DType::I64, cu.data(), shape);
      continue;
    }
    std::vector<float> v(n);
    std::normal_distribution<float> normal(static_cast<float>(t.init.a), static_cast<float>(t.init.b));
    std::uniform_real_distribution<float> uniform(static_cast<float>(t.init.a), static_cast<float>(t.init.b));
    for (auto& x : v) {
      x = t.init.dist == "uniform" ? uniform(rng) : normal(rng);
      if (t.dtype == tessera::spec::DType::bf16) x = npy::float_from_bf16(npy::bf16_from_float(x));
    }
    npy::write_as(dir / (t.name + ".npy"), npy::DType::F32, v.data(), shape);
  }
}

void compare_outputs(const tessera::spec::Operator& op, const fs::path& a, const fs::path& b) {
  for (auto& t : op.tensors) {
    if (!t.output) continue;
    auto x = tessera::npy::to_f64(tessera::npy::read(a / (t.name + ".npy")));
    auto y = tessera::npy::to_f64(tessera::npy::read(b / (t.name + ".npy")));
    ASSERT_EQ(x.size(), y.size()) << t.name;
    size_t differ = 0;
    for (size_t i = 0; i < x.size(); ++i) differ += !(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])));
    EXPECT_EQ(differ, 0u) << t.name << ": elements that differ between tessera run and the exported package";
  }
}

// The champion of a recorded database (unpacked into a fresh folder) exported in `format`.
struct Exported {
  fs::path dir, db;  // the folder (package in dir/pkg) and the database
  std::string env;   // TESSERA_TARGETS=... for the commands
  long long id = 0;  // the champion
};

void export_champion(const std::string& op_name, const std::string& recorded, const std::string& format,
                     const std::string& tag, Exported* e) {
  e->dir = temp_dir(tag);
  fs::path src = tessera::testing::source_dir();
  e->db = e->dir / "run.db";
  fs::path rec = src / "runs/recorded" / recorded;
  auto unpack = rec.extension() == ".gz" ? shell("gzip -dc '" + rec.string() + "' > '" + e->db.string() + "'")
                                         : shell("cp '" + rec.string() + "' '" + e->db.string() + "'");
  ASSERT_EQ(unpack.code, 0) << unpack.out;
  e->env = "TESSERA_TARGETS=" + (src / "targets").string() + " ";
  auto board = json::parse(
      shell(e->env + binary() + " leaderboard " + op_name + " --json --limit 1 --db " + e->db.string()).out);
  ASSERT_FALSE(board.empty());
  e->id = board[0]["candidate"];
  auto ex =
      shell(e->env + binary() + " export " + op_name + " --candidate " + std::to_string(e->id) +
            " --arch sm_90a --format " + format + " --out " + (e->dir / "pkg").string() + " --db " + e->db.string());
  ASSERT_EQ(ex.code, 0) << ex.out;
}

// Exports the champion of `db` (a recorded database), builds the example, and runs both
// on `shape`.
void export_and_compare(const std::string& op_name, const std::string& recorded, const tessera::spec::Shape& shape) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  Exported e;
  export_champion(op_name, recorded, "cpp", op_name, &e);
  if (::testing::Test::HasFatalFailure()) return;
  const fs::path& dir = e.dir;
  const fs::path& db = e.db;
  const fs::path src = tessera::testing::source_dir();
  const std::string& env = e.env;
  const long long id = e.id;
  auto build = shell("cmake -S '" + (dir / "pkg/cpp/example").string() + "' -B '" + (dir / "b").string() +
                     "' -DCMAKE_BUILD_TYPE=Release && cmake --build '" + (dir / "b").string() + "' -j 8");
  ASSERT_EQ(build.code, 0) << build.out;
  auto op = tessera::spec::load_operator(src / "targets" / op_name);
  fs::create_directories(dir / "in");
  fs::create_directories(dir / "o1");
  fs::create_directories(dir / "o2");
  write_inputs(op, shape, dir / "in");
  auto r1 = shell(env + binary() + " run " + op_name + " --candidate " + std::to_string(id) + " --inputs " +
                  (dir / "in").string() + " --outputs " + (dir / "o1").string() + " --db " + db.string());
  ASSERT_EQ(r1.code, 0) << r1.out;
  std::string syms;
  for (auto& [k, v] : op.bindings(shape))
    if (std::find(op.symbols.begin(), op.symbols.end(), k) != op.symbols.end())
      syms += " " + k + "=" + std::to_string(static_cast<long long>(v));
  auto r2 = shell("'" + (dir / "b" / (op_name + "_example")).string() + "' '" + (dir / "in").string() + "' '" +
                  (dir / "o2").string() + "'" + syms);
  ASSERT_EQ(r2.code, 0) << r2.out;
  EXPECT_NE(r2.out.find("served by c" + std::to_string(id)), std::string::npos) << r2.out;
  compare_outputs(op, dir / "o1", dir / "o2");
  fs::remove_all(dir);
}

// The same with the torch package (pip-installed into the test's folder): the
// operator torch.ops.tessera.<op> on the same inputs as `tessera run`.
void torch_and_compare(const std::string& op_name, const std::string& recorded, const tessera::spec::Shape& shape) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  if (shell("python3 -c 'import torch, numpy, setuptools'").code != 0)
    GTEST_SKIP() << "python3 with torch, numpy and setuptools is not installed here: the torch package is not checked";
  Exported e;
  export_champion(op_name, recorded, "torch", "torch-" + op_name, &e);
  if (::testing::Test::HasFatalFailure()) return;
  const fs::path& dir = e.dir;
  const fs::path& db = e.db;
  const fs::path src = tessera::testing::source_dir();
  const std::string& env = e.env;
  const long long id = e.id;
  auto pip = shell("python3 -m pip install -q --no-index --no-deps --no-build-isolation --target '" +
                   (dir / "site").string() + "' '" + (dir / "pkg/torch").string() + "'");
  ASSERT_EQ(pip.code, 0) << pip.out;
  auto op = tessera::spec::load_operator(src / "targets" / op_name);
  for (const char* d : {"in", "o1", "o2"}) fs::create_directories(dir / d);
  write_inputs(op, shape, dir / "in");
  auto r1 = shell(env + binary() + " run " + op_name + " --candidate " + std::to_string(id) + " --inputs " +
                  (dir / "in").string() + " --outputs " + (dir / "o1").string() + " --db " + db.string());
  ASSERT_EQ(r1.code, 0) << r1.out;
  json tensors = json::array();
  for (auto& t : op.tensors) tensors.push_back({t.name, tessera::spec::dtype_name(t.dtype), t.output});
  std::ofstream(dir / "call.py") << R"PY(import importlib, json, sys
import numpy as np, torch
pkg, indir, outdir, tensors = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
importlib.import_module("tessera_" + pkg)
dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64,
      "i32": torch.int32, "i64": torch.int64}
args = [torch.from_numpy(np.load("%s/%s.npy" % (indir, n))).to(dt[d]).cuda() for n, d, out in tensors if not out]
with torch.inference_mode():
    res = getattr(torch.ops.tessera, pkg)(*args)
torch.cuda.synchronize()
res = res if isinstance(res, (tuple, list)) else (res,)
for (n, d, out), t in zip([x for x in tensors if x[2]], res):
    np.save("%s/%s.npy" % (outdir, n), (t.float() if d in ("bf16", "f16") else t).cpu().numpy())
)PY";
  auto r2 =
      shell("PYTHONPATH='" + (dir / "site").string() + "' python3 '" + (dir / "call.py").string() + "' " + op_name +
            " '" + (dir / "in").string() + "' '" + (dir / "o2").string() + "' '" + tensors.dump() + "'");
  ASSERT_EQ(r2.code, 0) << r2.out;
  compare_outputs(op, dir / "o1", dir / "o2");
  fs::remove_all(dir);
}

}  // namespace

TEST(Export, RmsnormFromTorchMatchesTesseraRun) {
  tessera::spec::Shape s;
  s.symbols = {{"M", 33}, {"N", 4097}};
  torch_and_compare("rmsnorm", "h200-2026-11-30.db", s);
}

TEST(Export, KdaFromTorchMatchesTesseraRun) {
  tessera::spec::Shape s;
  s.symbols = {{"H", 8}, {"K", 128}, {"V", 128}, {"T", 1301}, {"NSEQ", 3}};
  s.seqlens = {300, 1, 1000};
  torch_and_compare("kda", "h200-kda-2026-12-01u.db.gz", s);
}

TEST(Export, RmsnormFromCppMatchesTesseraRun) {
  tessera::spec::Shape s;
  s.symbols = {{"M", 33}, {"N", 4097}};
  export_and_compare("rmsnorm", "h200-2026-11-30.db", s);
}

TEST(Export, KdaFromCppMatchesTesseraRun) {
  tessera::spec::Shape s;
  s.symbols = {{"H", 8}, {"K", 128}, {"V", 128}, {"T", 1301}, {"NSEQ", 3}};
  s.seqlens = {300, 1, 1000};
  export_and_compare("kda", "h200-kda-2026-12-01u.db.gz", s);
}
