// tests/core/python_reference_test.cpp — the float64 Python reference process
// (evaluator/python_reference.h, evaluator/python/reference_server.py) on the CPU, with
// small FlashInfer-Trace-style definitions written here (an rmsnorm, a float16 gemm
// `C = A @ B.T`, a two-output one with scalar and None inputs, and broken ones).
//
// What is checked: outputs equal a float64 computation done here; the float64 mode keeps
// every narrower dtype the code asks for at float64 (and running as written does not);
// the narrowing casts are listed with their lines; the on-disk cache hits without calling
// Python and misses on a changed input; errors (a raise, a wrong shape or count, no run,
// a dead or silent server) say what happened with the definition's path and traceback;
// start() says what is missing (no interpreter, no torch, no such CUDA device); the
// baseline is timed at native precision.
//
// The Python with torch, as tests/export/export_python_test.cpp finds it:
// $TESSERA_TEST_PYTHON, else python3 if it imports torch, else the virtual environment at
// $TESSERA_TEST_VENV (default ~/.cache/tessera/test-venv-torch), made (torch from PyPI)
// only when TESSERA_TEST_INSTALL_TORCH=1, as .ci/run sets it. Without one, tests skip.
#include "evaluator/python_reference.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "tests/support/shell.h"
#include "tests/support/torch_python.h"

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::evaluator::PythonReference;
using tessera::evaluator::PythonReferenceError;
using tessera::evaluator::PythonTensor;
using tessera::spec::DType;
using tessera::testing::shell;

namespace {

std::string quote(const std::string& s) {
  return "'" + s + "'";
}

using tessera::testing::torch_python;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// bfloat16 and float16 bits of a float (truncated; float16 for zero and normal numbers only).
uint16_t bf16_bits(float v) {
  uint32_t f;
  std::memcpy(&f, &v, 4);
  return static_cast<uint16_t>(f >> 16);
}
double bf16_value(uint16_t b) {
  uint32_t f = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &f, 4);
  return v;
}
uint16_t f16_bits(float v) {
  uint32_t f;
  std::memcpy(&f, &v, 4);
  uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000);
  if ((f & 0x7fffffff) == 0) return sign;
  int exp = static_cast<int>((f >> 23) & 0xff) - 127 + 15;
  EXPECT_TRUE(exp > 0 && exp < 31) << v;
  return static_cast<uint16_t>(sign | (exp << 10) | ((f >> 13) & 0x3ff));
}
double f16_value(uint16_t h) {
  if ((h & 0x7fff) == 0) return 0.0;
  double m = std::ldexp(1.0 + (h & 0x3ff) / 1024.0, ((h >> 10) & 0x1f) - 15);
  return (h & 0x8000) ? -m : m;
}

// Random values away from zero (normal in float16).
std::vector<float> randoms(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  std::vector<float> v(n);
  for (auto& x : v) x = std::fabs(x = d(g)) < 0.01f ? 0.5f : x;
  return v;
}

template <class T>
PythonTensor tensor(const std::string& name, DType t, std::vector<long long> shape, const std::vector<T>& data) {
  PythonTensor p;
  p.name = name;
  p.dtype = t;
  p.shape = std::move(shape);
  p.data = data.data();
  p.bytes = data.size() * sizeof(T);
  return p;
}

PythonTensor scalar(const std::string& name, DType t, double v) {
  PythonTensor p;
  p.name = name, p.kind = "scalar", p.dtype = t, p.value = v;
  return p;
}

PythonTensor none(const std::string& name) {
  PythonTensor p;
  p.name = name, p.kind = "none";
  return p;
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]), n += b[i] * b[i];
  return std::sqrt(d / n);
}

const char* kRmsnorm = R"(import torch

@torch.no_grad()
def run(hidden_states, weight):
    batch_size, hidden_size = hidden_states.shape
    assert hidden_size == 8
    EPS = 1e-5
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS)
    y = (x * inv_rms) * weight.to(torch.float32)
    return y.to(hidden_states.dtype)
)";

class PythonReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera-pyref-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("TESSERA_CACHE", (dir_ / "cache").c_str(), 1);
    python_ = torch_python(&why_);
    if (!python_.empty()) setenv("TESSERA_PYTHON", python_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("TESSERA_PYTHON");
    unsetenv("TESSERA_CACHE");
    fs::remove_all(dir_);
  }

  // A definition with `inputs` and `outputs` (name -> dtype, shapes left symbolic).
  fs::path definition(const std::string& name, const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs, const std::string& reference) {
    json d = {{"name", name}, {"op_type", "test"}, {"axes", {{"n", {{"type", "var"}}}}}, {"reference", reference}};
    for (auto& i : inputs) d["inputs"][i] = {{"shape", {"n"}}, {"dtype", "float32"}};
    for (auto& o : outputs) d["outputs"][o] = {{"shape", {"n"}}, {"dtype", "float32"}};
    fs::path p = dir_ / (name + ".json");
    write(p, d.dump(2));
    return p;
  }

  std::unique_ptr<PythonReference> start() {
    std::string why;
    auto r = PythonReference::start("cpu", &why);
    EXPECT_TRUE(r) << why;
    return r;
  }

  fs::path dir_;
  std::string python_, why_;
};

#define NEED_TORCH() \
  if (python_.empty()) GTEST_SKIP() << why_

TEST_F(PythonReferenceTest, StartNamesAMissingInterpreter) {
  setenv("TESSERA_PYTHON", "/nonexistent", 1);
  std::string why;
  EXPECT_EQ(PythonReference::start("cpu", &why), nullptr);
  EXPECT_NE(why.find("TESSERA_PYTHON=/nonexistent: no such file"), std::string::npos) << why;
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  unsetenv("TESSERA_PYTHON");
  setenv("PATH", (dir_ / "empty").c_str(), 1);
  EXPECT_EQ(PythonReference::start("cpu", &why), nullptr);
  setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(why, "no python3 on PATH (set TESSERA_PYTHON to a Python with PyTorch)");
  EXPECT_EQ(PythonReference::start("gpu0", &why), nullptr);
  EXPECT_NE(why.find("expected cpu, cuda or cuda:N"), std::string::npos) << why;
}

TEST_F(PythonReferenceTest, StartSaysTorchCannotBeImported) {
  std::string py = python_.empty() ? "python3" : python_;
  if (shell(quote(py) + " -c 'import sys'").code != 0) GTEST_SKIP() << "no python3";
  // The same interpreter without its site-packages (-S): a Python without torch anywhere.
  fs::path wrapper = dir_ / "python-without-torch";
  write(wrapper, "#!/bin/sh\nexec " + quote(py) + " -S \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  setenv("TESSERA_PYTHON", wrapper.c_str(), 1);
  std::string why;
  EXPECT_EQ(PythonReference::start("cpu", &why), nullptr);
  EXPECT_EQ(why.rfind(wrapper.string() + " (Python 3.", 0), 0u) << why;
  EXPECT_NE(why.find(") cannot import torch: ModuleNotFoundError: No module named 'torch' — pip install torch"),
            std::string::npos)
      << why;
}

TEST_F(PythonReferenceTest, StartSaysTheCudaDeviceIsMissing) {
  NEED_TORCH();
  std::string why;
  EXPECT_EQ(PythonReference::start("cuda:99", &why), nullptr);
  EXPECT_EQ(why.rfind("torch ", 0), 0u) << why;
  EXPECT_NE(why.find(" has no CUDA device cuda:99 ("), std::string::npos) << why;
}

TEST_F(PythonReferenceTest, RmsnormIsComputedInFloat64) {
  NEED_TORCH();
  const int B = 3, H = 8;
  std::vector<uint16_t> x, w;
  for (float v : randoms(B * H, 1)) x.push_back(bf16_bits(v));
  for (float v : randoms(H, 2)) w.push_back(bf16_bits(v));
  std::vector<double> expected(B * H);
  for (int b = 0; b < B; ++b) {
    double ss = 0;
    for (int h = 0; h < H; ++h) ss += bf16_value(x[b * H + h]) * bf16_value(x[b * H + h]);
    double inv = 1.0 / std::sqrt(ss / H + 1e-5);
    for (int h = 0; h < H; ++h) expected[b * H + h] = bf16_value(x[b * H + h]) * inv * bf16_value(w[h]);
  }
  auto ref = start();
  ASSERT_TRUE(ref);
  auto narrowing = ref->load(definition("rms", {"hidden_states", "weight"}, {"output"}, kRmsnorm));
  EXPECT_EQ(narrowing,
            (std::vector<std::string>{"line 8: hidden_states.to(torch.float32)", "line 10: weight.to(torch.float32)",
                                      "line 11: y.to(hidden_states.dtype)"}));
  EXPECT_EQ(ref->narrowing(), narrowing);
  auto r = ref->run({tensor("hidden_states", DType::bf16, {B, H}, x), tensor("weight", DType::bf16, {H}, w)},
                    {{"output", {B, H}}}, true);
  EXPECT_FALSE(r.cached);
  ASSERT_EQ(r.outputs["output"].size(), expected.size());
  EXPECT_LT(rel_l2(r.outputs["output"], expected), 1e-13);
  // As written it computes in float32: close, but not float64.
  EXPECT_GT(r.as_written_rel_l2["output"], 1e-10);
  EXPECT_LT(r.as_written_rel_l2["output"], 1e-5);
  EXPECT_GT(r.as_written_max_abs["output"], 0.0);
}

TEST_F(PythonReferenceTest, GemmInFloat16) {
  NEED_TORCH();
  const int M = 5, N = 3, K = 7;
  std::vector<uint16_t> a, b;
  for (float v : randoms(M * K, 3)) a.push_back(f16_bits(v));
  for (float v : randoms(N * K, 4)) b.push_back(f16_bits(v));
  std::vector<double> expected(M * N, 0.0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) expected[m * N + n] += f16_value(a[m * K + k]) * f16_value(b[n * K + k]);
  auto ref = start();
  ASSERT_TRUE(ref);
  ref->load(definition("gemm", {"A", "B"}, {"C"},
                       "import torch\n\ndef run(A, B):\n    C = torch.matmul(A, B.T)\n    return C\n"));
  EXPECT_TRUE(ref->narrowing().empty());
  auto r = ref->run({tensor("A", DType::f16, {M, K}, a), tensor("B", DType::f16, {N, K}, b)}, {{"C", {M, N}}}, false);
  ASSERT_EQ(r.outputs["C"].size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(r.outputs["C"][i], expected[i], 1e-12) << i;
  EXPECT_TRUE(r.as_written_rel_l2.empty());
}

TEST_F(PythonReferenceTest, TwoOutputsWithScalarAndNoneInputs) {
  NEED_TORCH();
  const char* src = R"(import torch

def run(x, scale, count, bias):
    assert bias is None, "bias should be None"
    assert isinstance(count, int) and count == 4, repr(count)
    assert isinstance(scale, float), repr(scale)
    assert x.dtype == torch.float64 and x.shape == (2, count)
    return {"total": x.sum(dim=-1), "scaled": x * scale}
)";
  std::vector<int32_t> xs = {1, -2, 3, 4, 5, 6, -7, 8};  // an integer tensor stays integer
  std::vector<float> xf(xs.begin(), xs.end());
  auto ref = start();
  ASSERT_TRUE(ref);
  ref->load(definition("two", {"x", "scale", "count", "bias"}, {"scaled", "total"}, src));
  auto r = ref->run({tensor("x", DType::f32, {2, 4}, xf), scalar("scale", DType::f32, 0.25),
                     scalar("count", DType::i64, 4), none("bias")},
                    {{"scaled", {2, 4}}, {"total", {2}}}, false);
  EXPECT_EQ(r.outputs["scaled"], (std::vector<double>{0.25, -0.5, 0.75, 1, 1.25, 1.5, -1.75, 2}));
  EXPECT_EQ(r.outputs["total"], (std::vector<double>{6, 12}));
}

TEST_F(PythonReferenceTest, Float64ModeKeepsEveryNarrowerDtypeAtFloat64) {
  NEED_TORCH();
  const char* src = R"(import torch
import torch.nn.functional as F

def run(x):
    rows = [x.to(torch.float32) + 1e-12,
            x.half() + 1e-12,
            x.bfloat16().float() + 1e-12,
            torch.zeros(x.shape, dtype=torch.float16) + x + 1e-12,
            x.to("cpu", torch.float16) + 1e-12,
            x.type(torch.float16) + 1e-12,
            x.new_zeros(x.shape, dtype=torch.bfloat16) + x.float() + torch.tensor(1e-12),
            F.softmax(torch.stack([x, x + 1e-12]), dim=0, dtype=torch.float32)[1] * 2 - 1 + x]
    return torch.stack(rows)
)";
  std::vector<float> x = {1, 2, 0.5f, -3};
  auto ref = start();
  ASSERT_TRUE(ref);
  ref->load(definition("widen", {"x"}, {"y"}, src));
  auto r = ref->run({tensor("x", DType::f32, {4}, x)}, {{"y", {8, 4}}}, true);
  const auto& y = r.outputs["y"];
  ASSERT_EQ(y.size(), 32u);
  for (int row = 0; row < 8; ++row)
    for (int i = 0; i < 4; ++i) {
      double want = double(x[i]) + 1e-12;
      // the softmax row: 2 * sigmoid(1e-12) - 1 = 5e-13, to float64 rounding
      double tol = row == 7 ? 1e-15 : 0.0;
      if (row == 7) want = double(x[i]) + 5e-13;
      EXPECT_NEAR(y[row * 4 + i], want, tol) << "row " << row << " element " << i;
    }
  // As written, every row narrows: the 1e-12 is lost (and float16 rounds nothing here).
  EXPECT_GT(r.as_written_rel_l2["y"], 1e-14);
  EXPECT_NEAR(r.as_written_max_abs["y"], 1e-12, 1e-15);
  // to, half, bfloat16 and float, zeros, to, type, new_zeros and float, softmax
  EXPECT_EQ(ref->narrowing().size(), 10u);
}

TEST_F(PythonReferenceTest, NarrowingCastsAreListedWithTheirLines) {
  NEED_TORCH();
  const char* src = R"(import torch

def run(x):
    a = x.float()
    b = torch.empty(3, dtype=torch.bfloat16)
    c = x.to(torch.int64)
    d = x.to(dtype=torch.float64)
    e = torch.zeros(3,
                    dtype=x.dtype)
    return x.double()
)";
  auto ref = start();
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->load(definition("casts", {"x"}, {"y"}, src)),
            (std::vector<std::string>{"line 4: x.float()", "line 5: torch.empty(..., dtype=torch.bfloat16)",
                                      "line 9: torch.zeros(..., dtype=x.dtype)"}));
}

TEST_F(PythonReferenceTest, ASecondCallIsCachedAndAChangedInputIsNot) {
  NEED_TORCH();
  fs::path calls = dir_ / "calls.txt";
  std::string src = "def run(x):\n    open(" + json(calls.string()).dump() + ", 'a').write('x')\n    return x * 3\n";
  std::vector<float> x = {1, 2, 3};
  auto ref = start();
  ASSERT_TRUE(ref);
  ref->load(definition("cache", {"x"}, {"y"}, src));
  auto first = ref->run({tensor("x", DType::f32, {3}, x)}, {{"y", {3}}}, false);
  auto second = ref->run({tensor("x", DType::f32, {3}, x)}, {{"y", {3}}}, false);
  EXPECT_FALSE(first.cached);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.outputs, first.outputs);
  EXPECT_EQ(first.outputs["y"], (std::vector<double>{3, 6, 9}));
  EXPECT_EQ(read(calls), "x");  // the hit did not call Python
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "cache" / "reference"), fs::directory_iterator{}), 1);
  x[1] = 2.5f;
  auto third = ref->run({tensor("x", DType::f32, {3}, x)}, {{"y", {3}}}, false);
  EXPECT_FALSE(third.cached);
  EXPECT_EQ(third.outputs["y"], (std::vector<double>{3, 7.5, 9}));
  auto with_comparison = ref->run({tensor("x", DType::f32, {3}, x)}, {{"y", {3}}}, true);
  EXPECT_FALSE(with_comparison.cached);
  EXPECT_EQ(with_comparison.as_written_rel_l2["y"], 0.0);
  EXPECT_EQ(read(calls), "xxxx");  // the comparison ran it twice
  // A fresh process (another worker) reads the same entry.
  auto again = start();
  again->load(dir_ / "cache.json");
  EXPECT_TRUE(again->run({tensor("x", DType::f32, {3}, x)}, {{"y", {3}}}, true).cached);
}

TEST_F(PythonReferenceTest, AReferenceThatRaisesGivesItsTraceback) {
  NEED_TORCH();
  const char* src =
      "import torch\n\ndef helper(x):\n    raise ValueError('no good: %d' % x.numel())\n\n"
      "def run(x):\n    return helper(x)\n";
  std::vector<float> x = {1, 2, 3};
  auto ref = start();
  ASSERT_TRUE(ref);
  fs::path def = definition("raises", {"x"}, {"y"}, src);
  ref->load(def);
  try {
    ref->run({tensor("x", DType::f32, {3}, x)}, {{"y", {3}}}, false);
    FAIL() << "no error";
  } catch (const PythonReferenceError& e) {
    std::string w = e.what();
    EXPECT_EQ(e.kind, PythonReferenceError::Kind::raised);
    EXPECT_EQ(w.rfind(def.string() + ": the reference failed: ValueError: no good: 3\n", 0), 0u) << w;
    EXPECT_NE(w.find("Traceback (most recent call last)"), std::string::npos) << w;
    EXPECT_NE(w.find("File \"" + fs::absolute(def).string() + ":reference\", line 4, in helper"), std::string::npos)
        << w;
    EXPECT_NE(w.find("raise ValueError('no good: %d' % x.numel())"), std::string::npos) << w;
    EXPECT_NE(e.traceback.find("in run"), std::string::npos);
  }
  // The process lives on.
  ref->load(definition("fine", {"x"}, {"y"}, "def run(x):\n    return x + 1\n"));
  EXPECT_EQ(ref->run({tensor("x", DType::f32, {3}, x)}, {{"y", {3}}}, false).outputs["y"],
            (std::vector<double>{2, 3, 4}));
}

TEST_F(PythonReferenceTest, WrongShapeOrCountIsAClearError) {
  NEED_TORCH();
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  auto ref = start();
  ASSERT_TRUE(ref);
  auto message = [&](const std::vector<std::pair<std::string, std::vector<long long>>>& outs) {
    try {
      ref->run({tensor("x", DType::f32, {2, 3}, x)}, outs, false);
    } catch (const PythonReferenceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ref->load(definition("shape", {"x"}, {"y"}, "def run(x):\n    return x.T\n"));
  EXPECT_NE(message({{"y", {2, 3}}}).find("ValueError: run's output 'y' has shape [3, 2], the definition says [2, 3]"),
            std::string::npos)
      << message({{"y", {2, 3}}});
  EXPECT_NE(message({{"y", {3, 2}}, {"z", {2}}}).find("run returned 1 output(s), the definition has 2 (y, z)"),
            std::string::npos);
  ref->load(definition("dict", {"x"}, {"y"}, "def run(x):\n    return {'w': x}\n"));
  EXPECT_NE(message({{"y", {2, 3}}}).find("run returned a dict without ['y'] (it has ['w'])"), std::string::npos);
  EXPECT_THROW(ref->run({tensor("x", DType::f32, {2, 2}, x)}, {{"y", {2, 2}}}, false), std::invalid_argument);
  EXPECT_THROW(ref->run({tensor("x", DType::f32, {2, 3}, x)}, {{"../y", {2, 3}}}, false), std::invalid_argument);
}

TEST_F(PythonReferenceTest, LoadRefusesABrokenReference) {
  NEED_TORCH();
  auto ref = start();
  ASSERT_TRUE(ref);
  fs::path no_run = definition("norun", {"x"}, {"y"}, "def forward(x):\n    return x\n");
  fs::path syntax = definition("syntax", {"x"}, {"y"}, "def run(x)\n    return x\n");
  try {
    ref->load(no_run);
    FAIL() << "no error";
  } catch (const PythonReferenceError& e) {
    std::string w = e.what();
    EXPECT_EQ(w.rfind(no_run.string() + ": loading the reference failed: ValueError: ", 0), 0u) << w;
    EXPECT_NE(w.find("field 'reference' defines no function run(...)"), std::string::npos) << w;
  }
  try {
    ref->load(syntax);
    FAIL() << "no error";
  } catch (const PythonReferenceError& e) {
    EXPECT_NE(std::string(e.what()).find(syntax.string() + ": loading the reference failed: SyntaxError"),
              std::string::npos)
        << e.what();
  }
  std::vector<float> x = {1};
  EXPECT_THROW(ref->run({tensor("x", DType::f32, {1}, x)}, {{"y", {1}}}, false), PythonReferenceError);
}

TEST_F(PythonReferenceTest, TimesTheBaselineAtNativePrecision) {
  NEED_TORCH();
  std::vector<uint16_t> x;
  for (float v : randoms(64, 5)) x.push_back(bf16_bits(v));
  const char* src = "import torch\n\ndef run(x):\n    assert x.dtype == torch.bfloat16, x.dtype\n    return x * 2\n";
  auto ref = start();
  ASSERT_TRUE(ref);
  fs::path def = definition("timed", {"x"}, {"y"}, src);
  ref->load(def);
  std::string what;
  auto ms = ref->time_baseline({tensor("x", DType::bf16, {64}, x)}, 1 << 20, 12, 40, 1e-9, 5.0, &what);
  EXPECT_EQ(what, "the definition's reference at native precision (PyTorch)");
  EXPECT_GE(ms.size(), 12u);
  EXPECT_LE(ms.size(), 40u);
  for (double m : ms) EXPECT_GT(m, 0.0);
  fs::path calls = dir_ / "baseline-calls.txt";
  fs::path baseline = dir_ / "baseline.py";
  write(baseline, "import torch\n\ndef run(x):\n    assert x.dtype == torch.bfloat16\n    open(" +
                      json(calls.string()).dump() + ", 'a').write('x')\n    return x + x\n");
  ref->load(def, baseline);
  ms = ref->time_baseline({tensor("x", DType::bf16, {64}, x)}, 1 << 20, 10, 10, 0.5, 5.0, &what);
  EXPECT_EQ(what, "baseline.py's run");
  EXPECT_EQ(ms.size(), 10u);
  EXPECT_EQ(read(calls).size(), 12u);  // 2 warm-ups and 10 samples
}

TEST_F(PythonReferenceTest, ADeadProcessIsReportedWithItsExitStatus) {
  NEED_TORCH();
  std::vector<float> x = {1};
  auto ref = start();
  ASSERT_TRUE(ref);
  ref->load(definition("dies", {"x"}, {"y"}, "import os\n\ndef run(x):\n    os._exit(3)\n"));
  try {
    ref->run({tensor("x", DType::f32, {1}, x)}, {{"y", {1}}}, false);
    FAIL() << "no error";
  } catch (const PythonReferenceError& e) {
    EXPECT_EQ(e.kind, PythonReferenceError::Kind::process_died);
    EXPECT_NE(std::string(e.what()).find("ended before its reply (exited with status 3)"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(ref->alive());
  try {
    ref->load(dir_ / "dies.json");
    FAIL() << "no error";
  } catch (const PythonReferenceError& e) {
    EXPECT_EQ(e.kind, PythonReferenceError::Kind::process_died);
    EXPECT_NE(std::string(e.what()).find("is not running: it ended before its reply (exited with status 3)"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(PythonReferenceTest, ASilentProcessIsKilledAtTheTimeout) {
  NEED_TORCH();
  std::vector<float> x = {1};
  auto ref = start();
  ASSERT_TRUE(ref);
  ref->load(definition("sleeps", {"x"}, {"y"}, "import time\n\ndef run(x):\n    time.sleep(60)\n    return x\n"));
  ref->set_timeout(1.0);
  auto t0 = std::chrono::steady_clock::now();
  try {
    ref->run({tensor("x", DType::f32, {1}, x)}, {{"y", {1}}}, false);
    FAIL() << "no error";
  } catch (const PythonReferenceError& e) {
    EXPECT_EQ(e.kind, PythonReferenceError::Kind::timeout);
    EXPECT_NE(std::string(e.what()).find("gave no reply within 1 s and was killed"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_FALSE(ref->alive());
}

TEST_F(PythonReferenceTest, TheServerScriptComesFromTheBinary) {
  NEED_TORCH();
  auto ref = start();
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->cache_dir(), dir_ / "cache");
  std::vector<fs::path> scripts;
  for (auto& e : fs::directory_iterator(dir_ / "cache" / "python")) scripts.push_back(e.path());
  ASSERT_EQ(scripts.size(), 1u);
  EXPECT_EQ(scripts[0].filename().string().rfind("reference_server-", 0), 0u);
  EXPECT_EQ(read(scripts[0]), read(fs::path(TESSERA_SOURCE_DIR) / "evaluator/python/reference_server.py"));
}

}  // namespace
