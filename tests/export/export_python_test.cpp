// tests/export/export_python_test.cpp — the Python formats of `tessera export` without a
// GPU (export/format_torch.cpp, export/format_flashinfer.cpp), on packages built here by
// hand for rmsnorm and kda: their templates with fixed parameters, rendered sources,
// dummy kernel images (no exporter, no database).
//
// What is checked: spec expressions translated to Python agree with spec::eval; the
// torch package's files say what the spec says (schema, argument structure, fixed
// symbols, the FLA backend for kda only); the FlashInfer folder follows the format's
// documented rules (flashinfer-bench 0.1.2) and, where a Python with flashinfer_bench is
// at hand, loads with its own pydantic models; and, where a Python with torch is at hand,
// the package installs with pip, registers torch.ops.tessera.<op>, checks dtypes, shapes
// and contiguity through its fake implementation, says there is no GPU when called on
// the CPU, and the definitions' Python references agree with the float64 test vectors.
//
// The Python with torch: $TESSERA_TEST_PYTHON, else python3 if it imports torch, else a
// virtual environment at $TESSERA_TEST_VENV (default ~/.cache/tessera/test-venv-torch),
// which is made (torch from PyPI, about 5 GB and 4 minutes) only when
// TESSERA_TEST_INSTALL_TORCH=1, as .ci/run sets it. Without one those tests skip and say why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "codegen/render.h"
#include "export/expr_to_py.h"
#include "export/package.h"
#include "export/python_call.h"
#include "spec/expr.h"
#include "spec/spec.h"
#include "tests/support/shell.h"
#include "tests/support/torch_python.h"

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::testing::shell;
namespace ex = tessera::exporter;

namespace {

fs::path temp_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("tessera-export-py-" + tag + "-" + std::to_string(getpid()));
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

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// TESSERA_TEST_KEEP=1 leaves the exported folders in the temporary folder (to look at them).
void remove_unless_kept(const fs::path& p) {
  const char* keep = std::getenv("TESSERA_TEST_KEEP");
  if (!keep || std::string(keep) != "1") fs::remove_all(p);
}

std::string quote(const fs::path& p) {
  return std::string(1, '\'').append(p.string()).append(1, '\'');
}

fs::path source_dir() {
  return fs::path(TESSERA_SOURCE_DIR);
}

// The operators, loaded once (a package points at its operator).
const tessera::spec::Operator& op(const std::string& name) {
  static std::map<std::string, tessera::spec::Operator> ops;
  auto it = ops.find(name);
  if (it == ops.end()) it = ops.emplace(name, tessera::spec::load_operator(source_dir() / "targets" / name)).first;
  return it->second;
}

// A package of one candidate of `tmpl` with `params`, as the exporter would pack it, with
// dummy bytes for the kernel images.
ex::ExportPackage package(const std::string& name, const std::string& tmpl, std::map<std::string, long long> params,
                          long long id) {
  const auto& o = op(name);
  ex::ExportPackage p;
  p.op = &o;
  p.spec_hash = "0123456789abcdef";
  p.tessera_commit = "test";
  p.created = "2026-12-02T00:00:00Z";
  p.archs = {"sm_90a", "sm_103a"};
  ex::PackedCandidate c;
  c.id = id;
  c.name = std::string("c").append(std::to_string(id));
  c.template_name = tmpl;
  c.params = params;
  const auto* t = o.find_template(tmpl);
  EXPECT_NE(t, nullptr) << tmpl;
  c.program = *t;
  c.source = tessera::codegen::render(read(t->source), params);
  c.images = {{"sm_90a", std::string("\x7f"
                                     "ELF dummy cubin sm_90a",
                                     24)}};
  if (name == "rmsnorm")
    c.images.push_back({"sm_103a", std::string("\x7f"
                                               "ELF dummy cubin sm_103a",
                                               25)});
  c.ptx = "// dummy PTX\n";
  c.ptx_arch = "compute_90a";
  c.figures = {{"device", "NVIDIA H200"},
               {"driver", "13.0"},
               {"geomean_speedup", 2.5},
               {"max_rel_l2", 1.8e-3},
               {"shapes", json::array()}};
  p.candidates.push_back(std::move(c));
  return p;
}

ex::ExportPackage rmsnorm_package() {
  return package("rmsnorm", "rows", {{"THREADS", 256}, {"ROWS", 1}, {"VEC", 8}, {"UNROLL", 1}, {"SMEM_ROW", 0}}, 42);
}
ex::ExportPackage kda_package() {
  return package("kda", "chunk_wgmma",
                 {{"BV", 128},
                  {"SW", 8},
                  {"PREC", 2},
                  {"STG", 0},
                  {"GM", 2},
                  {"TRN", 1},
                  {"CH", 32},
                  {"UA", 1},
                  {"RC", 1},
                  {"PIPE", 1},
                  {"LEAD", 100}},
                 7);
}

// Every writer, as `tessera export --format cpp,torch,flashinfer` runs them.
fs::path export_all(const ex::ExportPackage& p, const std::string& tag) {
  fs::path out = temp_dir(tag);
  ex::write_manifest(p, out);
  ex::write_kernels_and_sources(p, out);
  ex::write_cpp(p, out);
  ex::write_torch(p, out);
  ex::write_flashinfer(p, out);
  return out;
}

bool has_python3() {
  return shell("python3 -c 'import sys' ").code == 0;
}

using tessera::testing::torch_python;

// Runs `script` with `python` (PYTHONPATH=`path` when given); the output, with the code.
tessera::testing::ShellResult run_python(const std::string& python, const fs::path& dir, const std::string& script,
                                         const fs::path& path = {}) {
  fs::path f = dir / "check.py";
  write(f, script);
  std::string env = path.empty() ? "" : "PYTHONPATH=" + quote(path) + " ";
  return shell(env + "CUDA_VISIBLE_DEVICES= " + python + " " + quote(f));
}

}  // namespace

// Shape, scalar and launch expressions translated to Python and evaluated there agree
// with spec::eval at random symbol values.
TEST(ExportPython, TranslatedExpressionsAgreeWithTheSpecEvaluator) {
  if (!has_python3()) GTEST_SKIP() << "no python3";
  std::vector<std::string> exprs = {"cdiv(M, 64) * (N > 4 ? 2 : 3)",
                                    "-2^2",
                                    "max(M, N) - min(M, 3)",
                                    "M % 5 + mod(N, 4)",
                                    "(M <= N) && (N != 3) || 0",
                                    "floor(N / 3) + ceil(M / 7)",
                                    "sqrt(N) * 2.5e-1",
                                    "1 - (M == N)",
                                    "M > 4 ? N > 4 ? 1 : 2 : 3",
                                    "1e-6",
                                    ".5 + M"};
  for (const char* name : {"rmsnorm", "kda"})
    for (auto& t : op(name).tensors)
      for (auto& e : t.shape) exprs.push_back(e);
  for (auto& s : op("kda").scalars) exprs.push_back(s.expr);
  for (auto& t : op("kda").templates)
    for (auto& s : t.scratch) exprs.push_back(s.size);
  std::mt19937 rng(7);
  std::string script = "import math\n";
  std::vector<double> expected;
  for (int round = 0; round < 4; ++round) {
    tessera::spec::Bindings b;
    for (const char* s : {"M", "N", "T", "H", "K", "V", "NSEQ", "CH", "SEG"})
      b[s] = static_cast<double>(std::uniform_int_distribution<int>(1, 300)(rng));
    b["NSEG"] = round % 2 ? 0.0 : static_cast<double>(std::uniform_int_distribution<int>(1, 16)(rng));  // (both forms)
    for (auto& e : exprs) {
      std::string py = ex::expr_to_py(e, [&](const std::string& n) {
        if (!b.count(n)) throw std::runtime_error("unknown " + n);
        return std::to_string(static_cast<long long>(b[n]));
      });
      script += "print(repr(float(" + py + ")))\n";
      expected.push_back(tessera::spec::eval(e, b));
    }
  }
  fs::path dir = temp_dir("expr");
  auto r = run_python("python3", dir, script);
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream lines(r.out);
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line)) << "line " << i;
    EXPECT_NEAR(std::stod(line), expected[i], 1e-9 * std::max(1.0, std::fabs(expected[i]))) << exprs[i % exprs.size()];
  }
  EXPECT_THROW(ex::expr_to_py("M +", [](const std::string& n) { return n; }), std::runtime_error);
  EXPECT_THROW(ex::expr_to_py("atan(M)", [](const std::string& n) { return n; }), std::runtime_error);
}

// Where each symbol comes from and which the spec fixes.
TEST(ExportPython, SymbolsComeFromTheFirstInputThatNamesThem) {
  auto r = ex::python_call(op("rmsnorm"));
  ASSERT_EQ(r.symbols.size(), 2u);
  EXPECT_EQ(r.symbols[0].tensor->name, "x");
  EXPECT_EQ(r.symbols[1].tensor->name, "x");
  EXPECT_EQ(r.symbols[1].dim, 1u);
  EXPECT_TRUE(r.fixed.empty());
  auto k = ex::python_call(op("kda"));
  std::map<std::string, std::pair<std::string, size_t>> src;
  for (auto& s : k.symbols) src[s.symbol] = {s.tensor ? s.tensor->name : "", s.dim};
  EXPECT_EQ(src["T"], std::make_pair(std::string("q"), size_t{0}));
  EXPECT_EQ(src["K"], std::make_pair(std::string("q"), size_t{2}));
  EXPECT_EQ(src["V"], std::make_pair(std::string("v"), size_t{2}));
  EXPECT_EQ(src["NSEQ"], std::make_pair(std::string("h0"), size_t{0}));
  EXPECT_EQ(k.fixed, (std::map<std::string, long long>{{"K", 128}, {"V", 128}}));
  EXPECT_EQ(k.inputs.size(), 9u);
  EXPECT_EQ(k.outputs.size(), 2u);
}

// The torch package's files: the schema, the argument structure in the C ABI's order,
// the fixed symbols, the C library copied from DIR/cpp, the FLA backend for kda only.
TEST(ExportTorch, PackageFilesFollowTheSpec) {
  fs::path out = export_all(rmsnorm_package(), "torch-rms");
  fs::path t = out / "torch";
  std::string pyproject = read(t / "pyproject.toml");
  EXPECT_NE(pyproject.find("name = \"tessera-rmsnorm\""), std::string::npos) << pyproject;
  EXPECT_NE(pyproject.find("packages = [\"tessera_rmsnorm\"]"), std::string::npos);
  EXPECT_EQ(read(t / "csrc/tessera_rmsnorm.cpp"), read(out / "cpp/src/tessera_rmsnorm.cpp"));
  EXPECT_EQ(read(t / "csrc/tessera_rmsnorm.h"), read(out / "cpp/include/tessera_rmsnorm.h"));
  std::string opf = read(t / "tessera_rmsnorm/_op.py");
  EXPECT_NE(opf.find("SCHEMA = \"rmsnorm(Tensor x, Tensor w) -> Tensor\""), std::string::npos) << opf;
  EXPECT_NE(opf.find("FIXED = {}"), std::string::npos);
  EXPECT_NE(opf.find("_r[\"eps\"] = 1e-6"), std::string::npos);
  EXPECT_NE(opf.find("if w.shape != (N,):"), std::string::npos);
  std::string lib = read(t / "tessera_rmsnorm/_library.py");
  size_t x = lib.find("(\"x\", ctypes.c_uint64)"), w = lib.find("(\"w\", ctypes.c_uint64)"),
         y = lib.find("(\"y\", ctypes.c_uint64)"), m = lib.find("(\"M\", ctypes.c_longlong)"),
         n = lib.find("(\"N\", ctypes.c_longlong)"), s = lib.find("(\"scratch\", ctypes.c_uint64)");
  EXPECT_TRUE(x < w && w < y && y < m && m < n && n < s && s != std::string::npos) << lib;
  EXPECT_FALSE(fs::exists(t / "tessera_rmsnorm/fla_kda.py"));
  EXPECT_EQ(json::parse(read(t / "tessera_rmsnorm/manifest.json"))["operator"], "rmsnorm");

  fs::path kout = export_all(kda_package(), "torch-kda");
  std::string kop = read(kout / "torch/tessera_kda/_op.py");
  EXPECT_NE(
      kop.find("SCHEMA = \"kda(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta, Tensor A_log, Tensor dt_bias, "
               "Tensor h0, Tensor cu_seqlens) -> (Tensor, Tensor)\""),
      std::string::npos)
      << kop;
  EXPECT_NE(kop.find("FIXED = {\"K\": 128, \"V\": 128}"), std::string::npos);
  EXPECT_NE(kop.find("if cu_seqlens.shape != ((NSEQ + 1),):"), std::string::npos) << kop;
  EXPECT_NE(kop.find("_r[\"scale\"] = (1 / math.sqrt(K))"), std::string::npos);
  EXPECT_NE(kop.find("ht = torch.empty((NSEQ, H, V, K), dtype=torch.float32, device=_dev)"), std::string::npos);
  EXPECT_TRUE(fs::exists(kout / "torch/tessera_kda/fla_kda.py"));
  EXPECT_NE(read(kout / "torch/tessera_kda/__init__.py").find("from . import fla_kda"), std::string::npos);
  if (has_python3()) {
    auto r = shell("python3 -m py_compile " + quote(t / "setup.py") + " " + quote(t / "tessera_rmsnorm/_op.py") + " " +
                   quote(t / "tessera_rmsnorm/_library.py") + " " + quote(t / "tessera_rmsnorm/__init__.py") + " " +
                   quote(kout / "torch/tessera_kda/_op.py") + " " + quote(kout / "torch/tessera_kda/fla_kda.py") + " " +
                   quote(kout / "torch/tessera_kda/_library.py") + " " + quote(kout / "torch/tessera_kda/__init__.py"));
    EXPECT_EQ(r.code, 0) << r.out;
  }
  remove_unless_kept(out);
  remove_unless_kept(kout);
}

// The FlashInfer folder against the format's rules (flashinfer-bench 0.1.2's models,
// restated): names, axes, dtypes, the reference's run(), the workloads' axes and
// safetensors, the Solution's entry point and sources.
TEST(ExportFlashinfer, FolderFollowsTheFormatsRules) {
  fs::path out = export_all(kda_package(), "fi-kda");
  fs::path fi = out / "flashinfer";
  json def = json::parse(read(fi / "definitions/kda/kda_k128_v128.json"));
  EXPECT_EQ(def["name"], "kda_k128_v128");
  EXPECT_EQ(def["op_type"], "kda");
  // Inputs and outputs keep the spec's order (the format calls run() positionally).
  std::string raw = read(fi / "definitions/kda/kda_k128_v128.json");
  std::vector<std::string> order = {"\"q\":",       "\"k\":",  "\"v\":",          "\"g\":", "\"beta\":", "\"A_log\":",
                                    "\"dt_bias\":", "\"h0\":", "\"cu_seqlens\":", "\"o\":", "\"ht\":"};
  size_t at = 0;
  for (auto& key : order) {
    size_t p = raw.find(key, at);
    ASSERT_NE(p, std::string::npos) << key;
    at = p;
  }
  EXPECT_EQ(def["axes"]["K"],
            json({{"type", "const"}, {"value", 128}, {"description", def["axes"]["K"]["description"]}}));
  EXPECT_EQ(def["axes"]["H"]["type"], "var");
  EXPECT_EQ(def["axes"]["T"]["type"], "var");
  EXPECT_EQ(def["inputs"]["cu_seqlens"]["shape"], json({"cu_seqlens_len"}));
  EXPECT_EQ(def["inputs"]["cu_seqlens"]["dtype"], "int64");
  EXPECT_EQ(def["outputs"]["ht"]["shape"], json({"NSEQ", "H", "V", "K"}));
  EXPECT_NE(std::find(def["constraints"].begin(), def["constraints"].end(), "cu_seqlens_len == (NSEQ + 1)"),
            def["constraints"].end());
  static const std::set<std::string> dtypes = {"float32",     "float16",     "bfloat16", "float8_e4m3fn",
                                               "float8_e5m2", "float4_e2m1", "int64",    "int32",
                                               "int16",       "int8",        "bool"};
  std::set<std::string> var_axes;
  for (auto& [name, a] : def["axes"].items()) {
    ASSERT_TRUE(a["type"] == "var" || (a["type"] == "const" && a["value"].is_number_integer() && a["value"] >= 0));
    if (a["type"] == "var") var_axes.insert(name);
  }
  std::set<std::string> bound;
  for (const char* side : {"inputs", "outputs"})
    for (auto& [name, t] : def[side].items()) {
      EXPECT_TRUE(dtypes.count(t["dtype"])) << name;
      if (std::string(side) == "outputs") {
        EXPECT_FALSE(def["inputs"].contains(name)) << name;
      }
      for (auto& a : t["shape"]) {
        EXPECT_TRUE(def["axes"].contains(a)) << name << " " << a;
        if (std::string(side) == "inputs") bound.insert(a);
      }
    }
  for (auto& a : var_axes) EXPECT_TRUE(bound.count(a)) << "var axis " << a << " in no input";
  std::string ref = def["reference"];
  EXPECT_NE(ref.find("\ndef run(q, k, v, g, beta, A_log, dt_bias, h0, cu_seqlens):"), std::string::npos) << ref;
  EXPECT_NE(ref.find("def reference(q, k, v, g, beta, A_log, dt_bias, h0, cu_seqlens, *, scale, lower_bound)"),
            std::string::npos);

  // One workload per benchmark shape, its var axes all given, cu_seqlens from a safetensors file.
  std::istringstream lines(read(fi / "workloads/kda/kda_k128_v128.jsonl"));
  std::string line;
  size_t n = 0;
  std::set<std::string> uuids;
  while (std::getline(lines, line)) {
    json w = json::parse(line);
    const auto& shape = op("kda").benchmark_shapes.at(n++);
    EXPECT_EQ(w["definition"], "kda_k128_v128");
    EXPECT_TRUE(w["solution"].is_null() && w["evaluation"].is_null());
    std::set<std::string> axes;
    for (auto& [a, v] : w["workload"]["axes"].items()) axes.insert(a);
    EXPECT_EQ(axes, var_axes);
    EXPECT_EQ(w["workload"]["axes"]["T"], 8192);
    EXPECT_EQ(w["workload"]["axes"]["NSEQ"], shape.seqlens.size());
    EXPECT_EQ(w["workload"]["axes"]["cu_seqlens_len"], shape.seqlens.size() + 1);
    uuids.insert(w["workload"]["uuid"]);
    EXPECT_EQ(w["workload"]["inputs"]["q"]["type"], "random");
    auto cu = w["workload"]["inputs"]["cu_seqlens"];
    ASSERT_EQ(cu["type"], "safetensors");
    std::string st = read(fi / cu["path"].get<std::string>());
    ASSERT_GT(st.size(), 8u);
    uint64_t hlen = 0;
    for (int b = 7; b >= 0; --b) hlen = (hlen << 8) | static_cast<unsigned char>(st[b]);
    json h = json::parse(st.substr(8, hlen));
    EXPECT_EQ(h["cu_seqlens"]["dtype"], "I64");
    EXPECT_EQ(h["cu_seqlens"]["shape"], json({shape.seqlens.size() + 1}));
    const char* data = st.data() + 8 + hlen;
    long long acc = 0;
    for (size_t i = 0; i <= shape.seqlens.size(); ++i) {
      long long v;
      std::memcpy(&v, data + 8 * i, 8);
      EXPECT_EQ(v, acc);
      if (i < shape.seqlens.size()) acc += shape.seqlens[i];
    }
  }
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(uuids.size(), 6u);

  // The Solution: the entry file among the sources, unique relative paths, no .cu for the
  // builder to compile besides nothing (the kernels are .cuh), the C library as written.
  json sol = json::parse(read(fi / "solutions/kda/tessera_kda_c7.json"));
  EXPECT_EQ(sol["definition"], "kda_k128_v128");
  EXPECT_EQ(sol["spec"]["language"], "cuda");
  EXPECT_EQ(sol["spec"]["binding"], "torch");
  EXPECT_EQ(sol["spec"]["destination_passing_style"], true);
  EXPECT_FALSE(sol["spec"]["target_hardware"].empty());
  std::string entry = sol["spec"]["entry_point"];
  ASSERT_EQ(entry, "tessera_kda_binding.cpp::run");
  std::set<std::string> paths;
  for (auto& s : sol["sources"]) {
    std::string p = s["path"];
    EXPECT_TRUE(paths.insert(p).second) << "duplicate " << p;
    EXPECT_FALSE(fs::path(p).is_absolute());
    EXPECT_EQ(p.find(".."), std::string::npos) << p;
    EXPECT_FALSE(s["content"].get<std::string>().empty()) << p;
    EXPECT_NE(fs::path(p).extension(), ".cu") << p;
  }
  EXPECT_TRUE(paths.count("tessera_kda_binding.cpp"));
  EXPECT_TRUE(paths.count("kernels/c7.cuh"));
  EXPECT_TRUE(paths.count("kernels/ops/wgmma.cuh"));  // (kda's own headers, from targets/kda/ops)
  EXPECT_TRUE(paths.count("kernels/tile/base.cuh"));
  for (auto& s : sol["sources"]) {
    if (s["path"] == "tessera_kda.cpp") {
      EXPECT_EQ(s["content"], read(out / "cpp/src/tessera_kda.cpp"));
    }
  }
  std::string bind;
  for (auto& s : sol["sources"])
    if (s["path"] == "tessera_kda_binding.cpp") bind = s["content"];
  EXPECT_NE(
      bind.find("void run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor g, torch::Tensor beta, "
                "torch::Tensor A_log, torch::Tensor dt_bias, torch::Tensor h0, torch::Tensor cu_seqlens, "
                "torch::Tensor o, torch::Tensor ht)"),
      std::string::npos)
      << bind;
  EXPECT_NE(bind.find("TORCH_CHECK(K == 128"), std::string::npos);

  // rmsnorm: every symbol var, no blobs.
  fs::path rout = export_all(rmsnorm_package(), "fi-rms");
  json rdef = json::parse(read(rout / "flashinfer/definitions/rmsnorm/rmsnorm.json"));
  EXPECT_EQ(rdef["axes"], json({{"M", {{"type", "var"}}}, {"N", {{"type", "var"}}}}));
  EXPECT_FALSE(fs::exists(rout / "flashinfer/blob"));
  EXPECT_TRUE(fs::exists(rout / "flashinfer/solutions/rmsnorm/tessera_rmsnorm_c42.json"));
  remove_unless_kept(out);
  remove_unless_kept(rout);
}

// flashinfer-bench's own models load the folder (TraceSet.from_path: every definition,
// workload and solution through pydantic), and the definitions' references compute what
// the float64 test vectors hold (kda) and what the formula gives (rmsnorm).
TEST(ExportFlashinfer, FlashinferBenchLoadsItAndTheReferencesAgreeWithTheVectors) {
  std::string why;
  std::string py = torch_python(&why);
  if (py.empty()) GTEST_SKIP() << why;
  if (shell(py + " -c 'import flashinfer_bench' ").code != 0)
    GTEST_SKIP() << "flashinfer_bench is not importable by " << py << " (pip install flashinfer-bench==0.1.2)";
  fs::path kout = export_all(kda_package(), "fib-kda");
  fs::path rout = export_all(rmsnorm_package(), "fib-rms");
  std::string script = R"(import sys, glob, os
import numpy as np, torch
from flashinfer_bench.data import TraceSet
out = {}
for root in sys.argv[1:3]:
    ts = TraceSet.from_path(root)
    for name, d in ts.definitions.items():
        out[name] = (d, len(ts.workloads[name]), [s.name for s in ts.solutions[name]])
        print(name, len(ts.workloads[name]), [s.name for s in ts.solutions[name]], d.var_axes)
d = out["kda_k128_v128"][0]
ns = {}
exec(d.reference, ns)
for case in sorted(glob.glob(os.path.join(sys.argv[3], "*"))):
    if not os.path.isdir(case):
        continue
    ld = lambda n: torch.from_numpy(np.load(os.path.join(case, n + ".npy")))
    q, k, v, g, beta = (ld(n).to(torch.bfloat16) for n in ("q", "k", "v", "g", "beta"))
    o, ht = ns["run"](q, k, v, g, beta, ld("A_log"), ld("dt_bias"), ld("initial_state"), ld("cu_seqlens"))
    eo = ld("o"); eh = ld("final_state")
    ro = float((o.double() - eo).norm() / eo.norm()); rh = float((ht.double() - eh).norm() / eh.norm())
    print("case", os.path.basename(case), o.dtype, ht.dtype, "%.3g %.3g" % (ro, rh))
    assert o.dtype == torch.bfloat16 and ht.dtype == torch.float32
    assert ro < 4e-3 and rh < 1e-6, (ro, rh)
r = out["rmsnorm"][0]
ns = {}
exec(r.reference, ns)
x = torch.randn(5, 300).to(torch.bfloat16); w = torch.rand(300).to(torch.bfloat16)
y = ns["run"](x, w)
e = x.double() / torch.sqrt((x.double() ** 2).mean(-1, keepdim=True) + 1e-6) * w.double()
assert y.dtype == torch.bfloat16 and float((y.double() - e).abs().max()) < 0.02
print("ok")
)";
  fs::path dir = temp_dir("fib");
  write(dir / "check.py", script);
  auto r = shell("CUDA_VISIBLE_DEVICES= " + py + " " + quote(dir / "check.py") + " " + quote(kout / "flashinfer") +
                 " " + quote(rout / "flashinfer") + " " + quote(source_dir() / "tests/data/kda-vectors"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("kda_k128_v128 6 ['tessera_kda_c7']"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rmsnorm 4 ['tessera_rmsnorm_c42']"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("case varlen_30_1_64_h2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nok"), std::string::npos) << r.out;
  remove_unless_kept(kout);
  remove_unless_kept(rout);
}

// pip installs the torch package (building the C library from csrc/); importing it
// registers torch.ops.tessera.<op> without a GPU; the fake implementation gives the
// outputs and refuses wrong dtypes, shapes, strides and fixed symbols with the words
// the user needs; a call on CPU tensors says there is no GPU; the C library itself
// answers "no GPU" (code 1); FLA's registry holds the kda backend, which declines
// gradients and other head sizes.
TEST(ExportTorch, InstallsWithPipAndRegistersItsOperatorWithoutAGpu) {
  std::string why;
  std::string py = torch_python(&why);
  if (py.empty()) GTEST_SKIP() << why;
  fs::path rout = export_all(rmsnorm_package(), "pip-rms");
  fs::path kout = export_all(kda_package(), "pip-kda");
  fs::path site = temp_dir("pip-site");
  for (auto& o : {rout, kout}) {
    auto r = shell(py + " -m pip install -q --no-deps --no-build-isolation --target " + quote(site) + " " +
                   quote(o / "torch"));
    ASSERT_EQ(r.code, 0) << r.out;
  }
  std::string script = R"(import torch
import tessera_rmsnorm, tessera_kda
from tessera_rmsnorm import _library as L
assert hasattr(torch.ops.tessera, "rmsnorm") and hasattr(torch.ops.tessera, "kda")
print("schema", torch.ops.tessera.rmsnorm.default._schema)
m = dict(device="meta")
x = torch.empty(5, 1024, dtype=torch.bfloat16, **m); w = torch.empty(1024, dtype=torch.bfloat16, **m)
y = tessera_rmsnorm.rmsnorm(x, w)
assert tuple(y.shape) == (5, 1024) and y.dtype == torch.bfloat16 and y.device.type == "meta"
def fails(kind, words, f):
    try:
        f()
    except kind as e:
        assert words in str(e), str(e)
        print("refused:", e)
        return
    raise AssertionError("no %s for %s" % (kind.__name__, words))
fails(TypeError, "x must be torch.bfloat16", lambda: tessera_rmsnorm.rmsnorm(x.float(), w))
fails(ValueError, "w has shape (1000,), expected [N]", lambda: tessera_rmsnorm.rmsnorm(x, torch.empty(1000, dtype=torch.bfloat16, **m)))
fails(ValueError, "x must be contiguous", lambda: tessera_rmsnorm.rmsnorm(torch.empty(1024, 5, dtype=torch.bfloat16, **m).t(), w))
fails(RuntimeError, "there is no CUDA GPU here", lambda: tessera_rmsnorm.rmsnorm(torch.randn(3, 8).to(torch.bfloat16), torch.ones(8, dtype=torch.bfloat16)))
code = L.launch_raw(L.Args(1, 2, 3, 5, 1024, 0), 0)
print("C library:", code, L.error_text(code))
assert code == 1, code
assert tessera_rmsnorm.candidate(5, 1024) == "c42"
assert tessera_rmsnorm.scalars(1, 1) == {"eps": 1e-6}
assert tessera_rmsnorm.manifest()["candidates"][0]["name"] == "c42"
T, H, N = 100, 4, 3
def kda_inputs(K=128, dtype=torch.bfloat16):
    b = lambda *s: torch.empty(*s, dtype=dtype, **m)
    f = lambda *s: torch.empty(*s, dtype=torch.float32, **m)
    return (b(T, H, K), b(T, H, K), b(T, H, 128), b(T, H, K), b(T, H), f(H), f(H, K), f(N, H, 128, K),
            torch.empty(N + 1, dtype=torch.int64, **m))
o, ht = tessera_kda.kda(*kda_inputs())
assert tuple(o.shape) == (T, H, 128) and o.dtype == torch.bfloat16, o.shape
assert tuple(ht.shape) == (N, H, 128, 128) and ht.dtype == torch.float32
fails(ValueError, "the kernels were built and checked for K = 128 only", lambda: tessera_kda.kda(*kda_inputs(K=64)))
bad = list(kda_inputs()); bad[8] = torch.empty(N, dtype=torch.int64, **m)
fails(ValueError, "cu_seqlens has shape (3,), expected [NSEQ+1]", lambda: tessera_kda.kda(*bad))
s = tessera_kda.scalars(T=T, H=H, K=128, V=128, NSEQ=N)
assert abs(s["scale"] - 128 ** -0.5) < 1e-12 and s["lower_bound"] == -5, s
try:
    import fla  # noqa: F401
except Exception as e:
    print("no FLA:", e)
else:
    from tessera_kda import fla_kda
    print("FLA registered:", fla_kda.REGISTERED, fla_kda.REASON)
    assert fla_kda.REGISTERED
    from inspect import unwrap
    from fla.backends import _function_registries
    from fla.ops.kda.chunk import chunk_kda
    reg = _function_registries[unwrap(chunk_kda)]
    assert "tessera" in reg._backends
    q = torch.empty(1, T, H, 128, dtype=torch.bfloat16); be = torch.empty(1, T, H, dtype=torch.bfloat16)
    kw = dict(use_gate_in_kernel=True, use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True, safe_gate=True,
              lower_bound=-5.0, state_v_first=True, A_log=torch.empty(H), dt_bias=torch.empty(H * 128))
    ok, reason = reg._backends["tessera"].verify("chunk_kda", q, q, q, q, be, **kw)
    assert not ok and "forward only" in reason, reason
    with torch.inference_mode():
        ok, reason = reg._backends["tessera"].verify("chunk_kda", q, q, q, q, be, **dict(kw, lower_bound=-3.0))
        assert not ok and "lower_bound" in reason, reason
        q64 = torch.empty(1, T, H, 64, dtype=torch.bfloat16)
        ok, reason = reg._backends["tessera"].verify("chunk_kda", q64, q64, q, q64, be, **dict(kw, dt_bias=torch.empty(H * 64)))
        assert not ok and "K = 128" in reason, reason
        ok, reason = reg._backends["tessera"].verify("chunk_kda", q, q, q, q, be, **kw)
        assert not ok and "CUDA" in reason, reason
    print("FLA verifier ok")
print("ok")
)";
  auto r = run_python(py, temp_dir("pip-run"), script, site);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("schema tessera::rmsnorm(Tensor x, Tensor w) -> Tensor"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("C library: 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nok"), std::string::npos) << r.out;
  remove_unless_kept(rout);
  remove_unless_kept(kout);
  remove_unless_kept(site);
}

// flashinfer-bench's own builder for binding "torch" (torch.utils.cpp_extension.load,
// as `flashinfer-bench run` calls it) compiles the Solution's binding and C library and
// loads the module, without a GPU: what the GPU run would otherwise find out first.
TEST(ExportFlashinfer, SolutionBuildsWithFlashinferBenchsTorchBuilder) {
  std::string why;
  std::string py = torch_python(&why);
  if (py.empty()) GTEST_SKIP() << why;
  const char* cuda_home = std::getenv("CUDA_HOME");
  std::string cuda = cuda_home && *cuda_home ? cuda_home : "/usr/local/cuda";
  if (!fs::exists(fs::path(cuda) / "include/cuda.h") || !fs::exists(fs::path(cuda) / "bin/nvcc"))
    GTEST_SKIP() << "no CUDA toolkit at " << cuda << " (set CUDA_HOME): torch's extension builder needs it";
  if (shell(py + " -c 'import flashinfer_bench' ").code != 0)
    GTEST_SKIP() << "flashinfer_bench is not importable by " << py;
  fs::path out = export_all(rmsnorm_package(), "fib-build");
  std::string script = R"(import sys
from flashinfer_bench.data import TraceSet
from flashinfer_bench.compile.builders.torch_builder import TorchBuilder
ts = TraceSet.from_path(sys.argv[1])
d = ts.definitions["rmsnorm"]
r = TorchBuilder().build(d, ts.solutions["rmsnorm"][0])
print("built", r.metadata.solution_name, r.metadata.misc["entry_symbol"], callable(r))
)";
  fs::path dir = temp_dir("fib-build-run");
  write(dir / "build.py", script);
  auto r = shell("cd " + quote(dir) +
                 " && CUDA_VISIBLE_DEVICES= TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=2 CUDA_HOME=" + quote(cuda) +
                 " FIB_CACHE_PATH=" + quote(dir / "cache") + " " + py + " build.py " + quote(out / "flashinfer"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("built tessera_rmsnorm_c42 run True"), std::string::npos) << r.out;
  remove_unless_kept(out);
  remove_unless_kept(dir);
}

// A per-shape package (two candidates, a dispatch rule): the Solution carries both
// kernels' sources and is named after both; the torch package's version names both.
TEST(ExportFlashinfer, PerShapePackagesCarryEveryCandidate) {
  ex::ExportPackage p = kda_package();
  ex::ExportPackage second = package("kda", "chunk_wgmma",
                                     {{"BV", 128},
                                      {"SW", 8},
                                      {"PREC", 2},
                                      {"STG", 0},
                                      {"GM", 2},
                                      {"TRN", 1},
                                      {"CH", 64},
                                      {"UA", 0},
                                      {"RC", 0},
                                      {"PIPE", 0},
                                      {"LEAD", 0}},
                                     8);
  p.candidates.push_back(second.candidates[0]);
  ex::DispatchRule rule;
  rule.shape = "h64_1x8192";
  rule.symbols = {{"T", 8192}, {"H", 64}, {"K", 128}, {"V", 128}, {"NSEQ", 1}};
  rule.candidate = 1;
  p.dispatch.push_back(rule);
  fs::path out = export_all(p, "per-shape");
  json sol = json::parse(read(out / "flashinfer/solutions/kda/tessera_kda_c7_c8.json"));
  std::set<std::string> paths;
  for (auto& s : sol["sources"]) paths.insert(s["path"]);
  EXPECT_TRUE(paths.count("kernels/c7.cuh") && paths.count("kernels/c8.cuh"));
  EXPECT_NE(read(out / "flashinfer/solutions/kda/tessera_kda_c7_c8.json").find("#define CH 64"), std::string::npos);
  EXPECT_NE(read(out / "torch/pyproject.toml").find("version = \"1.0.7+c7.c8\""), std::string::npos);
  EXPECT_NE(read(out / "torch/README.md").find("candidate c7, c8"), std::string::npos);
  remove_unless_kept(out);
}
