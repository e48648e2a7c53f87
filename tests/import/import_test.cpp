// tests/import/import_test.cpp — `tessera import` of FlashInfer Trace definitions
// (importer/, docs/import.md): every included definition imports into a spec that
// loads; the index tensors the judge draws are valid for every workload, checked
// against the definitions' own constraints; malformed definitions are refused with the
// file, the field and what was expected.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <regex>
#include <set>

#include "importer/target.h"
#include "spec/index_init.h"
#include "spec/spec.h"

namespace fs = std::filesystem;
using namespace tessera;

namespace {

const fs::path kData = TESSERA_DATA;

std::vector<fs::path> definitions() {
  std::vector<fs::path> out;
  for (auto& e : fs::recursive_directory_iterator(kData / "definitions"))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path temp_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("tessera-import-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

importer::ImportResult import_one(const fs::path& def, const fs::path& out) {
  importer::ImportOptions o;
  o.path = def;
  o.out = out;
  return importer::import_definition(o);
}

// The index inputs the judge would make at `s` from `seed`, in spec order.
std::map<std::string, std::vector<long long>> draw(const spec::Operator& op, const spec::Shape& s,
                                                   unsigned long long seed) {
  std::map<std::string, std::vector<long long>> made;
  spec::Bindings b = op.bindings(s);
  unsigned long long k = 0;
  for (auto& t : op.tensors) {
    ++k;
    if (t.output) continue;
    spec::Init in = t.init;
    if (auto it = s.init_overrides.find(t.name); it != s.init_overrides.end()) in = it->second;
    if (!spec::host_generated(in)) continue;
    made[t.name] = spec::generate_index(t, in, s, b, op.elements(t, b), seed * 1000 + k, made);
  }
  return made;
}

// Checks index data against the definition's own words: offsets rise from 0, end where
// the constraints say, keys cover queries; indices point inside the cache.
void check_valid(const importer::Definition& d, const std::map<std::string, long long>& axes,
                 const std::map<std::string, std::vector<long long>>& made, const std::string& where) {
  auto val = [&](const std::string& a) { return axes.count(a) ? axes.at(a) : d.axis(a)->value; };
  static const std::regex last(R"(^\s*(\w+)\s*==\s*(\w+)\s*\[\s*-1\s*\]\s*\.item\(\)\s*$)");
  for (auto& c : d.constraints) {
    std::smatch m;
    if (!std::regex_match(c, m, last) || !made.count(m[2])) continue;
    const auto& o = made.at(m[2]);
    ASSERT_FALSE(o.empty()) << where;
    EXPECT_EQ(o.front(), 0) << where << " " << m[2];
    EXPECT_EQ(o.back(), val(m[1])) << where << ": " << c;
    for (size_t i = 1; i < o.size(); ++i) ASSERT_LE(o[i - 1], o[i]) << where << " " << m[2] << " at " << i;
  }
  for (auto& [name, v] : made) {
    const importer::TensorDef* t = d.input(name);
    ASSERT_TRUE(t && t->shape) << name;
    EXPECT_EQ(static_cast<long long>(v.size()), val(t->shape->front())) << where << " " << name;
  }
  if (made.count("qo_indptr") && made.count("kv_indptr") && d.name.find("causal") != std::string::npos) {
    auto& q = made.at("qo_indptr");
    auto& kv = made.at("kv_indptr");
    for (size_t i = 0; i + 1 < q.size(); ++i)
      EXPECT_GE(kv[i + 1] - kv[i], q[i + 1] - q[i]) << where << ": sequence " << i << "'s keys cover its queries";
  }
  if (made.count("kv_indices")) {
    long long pages = val(d.input("k_cache")->shape->front());
    std::set<long long> distinct;
    for (long long x : made.at("kv_indices")) {
      ASSERT_GE(x, 0) << where;
      ASSERT_LT(x, pages) << where;
      distinct.insert(x);
    }
    if (static_cast<long long>(made.at("kv_indices").size()) <= pages) {
      EXPECT_EQ(distinct.size(), made.at("kv_indices").size()) << where << ": pages are not shared";
    }
  }
}

}  // namespace

TEST(Import, EveryIncludedDefinitionImportsAndLoads) {
  fs::path out = temp_dir("all");
  auto defs = definitions();
  ASSERT_GE(defs.size(), 12u);
  for (auto& def : defs) {
    SCOPED_TRACE(def.string());
    importer::ImportResult r = import_one(def, out);
    spec::Operator op = spec::load_operator(r.dir);
    EXPECT_EQ(op.name, def.stem().string());
    ASSERT_TRUE(op.imported);
    EXPECT_EQ(op.reference.python.filename(), "definition.json");
    EXPECT_FALSE(op.baseline.python.empty());
    EXPECT_LE(op.benchmark_shapes.size(), 8u);
    EXPECT_FALSE(op.validation_shapes.empty());
    for (auto& s : op.benchmark_shapes) EXPECT_GT(op.bytes_at(s), 0) << s.label();
    std::string type = def.parent_path().filename().string();
    bool tuned = type == "rmsnorm" || type == "gemm";
    EXPECT_EQ(!op.templates.empty(), tuned) << "templates of " << op.name;
    for (auto& s : op.benchmark_shapes)
      EXPECT_GT(op.flops_at(s), 0) << s.label() << ": every included op_type has a FLOP formula";
  }
  fs::remove_all(out);
}

TEST(Import, ShapesFollowTheWorkloads) {
  fs::path out = temp_dir("shapes");
  auto r = import_one(kData / "definitions/gemm/gemm_n4096_k4096.json", out);
  spec::Operator op = spec::load_operator(r.dir);
  ASSERT_EQ(op.benchmark_shapes.size(), 8u);  // 43 distinct workloads: 8 by rank of bytes
  std::set<long long> ms;
  for (auto& s : op.benchmark_shapes) ms.insert(s.symbols.at("M"));
  EXPECT_TRUE(ms.count(1) && ms.count(8192)) << "the smallest and the largest workload are kept";
  for (auto& s : op.validation_shapes) EXPECT_EQ(s.symbols.size(), 1u);
  std::set<long long> vm;
  for (auto& s : op.validation_shapes) vm.insert(s.symbols.at("M"));
  EXPECT_TRUE(vm.count(1) && vm.count(7) && vm.count(127)) << "awkward sizes are validated";
  EXPECT_DOUBLE_EQ(op.flops_at(op.benchmark_shapes.back()), 2.0 * 8192 * 4096 * 4096);
  auto tpl = op.find_template("mma");
  ASSERT_NE(tpl, nullptr);
  EXPECT_EQ(tpl->launch[0].kernel, "gemm_mma_f16");
  EXPECT_EQ(tpl->params.at("F16"), std::vector<long long>{1});
  EXPECT_EQ(tpl->launch[0].args, (std::vector<std::string>{"A", "B", "C", "M", "N", "K"}));
  EXPECT_EQ(op.tensor("C")->tol.rel_l2, 5e-3);  // float16 output
  auto dec = op.find_template("decode");        // the decode widths' template, its fp16 kernel
  ASSERT_NE(dec, nullptr);
  EXPECT_EQ(dec->launch[0].kernel, "gemm_decode_f16");
  EXPECT_EQ(dec->source.filename(), "gemm_decode.cu");
  EXPECT_EQ(dec->launch[0].args, (std::vector<std::string>{"A", "B", "C", "M", "N", "K"}));
  // fused_add_rmsnorm: the residual kernel, eps read from the reference
  auto f = import_one(kData / "definitions/rmsnorm/fused_add_rmsnorm_h4096.json", out);
  spec::Operator fo = spec::load_operator(f.dir);
  ASSERT_EQ(fo.templates.size(), 1u);
  EXPECT_EQ(fo.templates[0].launch[0].kernel, "rmsnorm_rows_residual");
  EXPECT_EQ(fo.templates[0].params.at("RESIDUAL"), std::vector<long long>{1});
  EXPECT_EQ(fo.templates[0].launch[0].smem, "SMEM_ROW * ROWS * hidden_size * 4");
  EXPECT_EQ(fo.templates[0].launch[0].args, (std::vector<std::string>{"hidden_states", "residual", "weight", "output",
                                                                      "batch_size", "hidden_size", "eps"}));
  spec::Bindings b = fo.bindings(fo.benchmark_shapes[0]);
  EXPECT_FLOAT_EQ(static_cast<float>(b.at("eps")), 1e-5f);
  EXPECT_EQ(b.at("hidden_size"), 4096);
  EXPECT_EQ(fo.figure_of_merit, "bandwidth");
  EXPECT_TRUE(fs::exists(f.dir / "rmsnorm_rows.cu"));
  EXPECT_TRUE(fs::exists(f.dir / "workloads.jsonl"));
  fs::remove_all(out);
}

TEST(Import, IndexTensorsAreValidForEveryWorkload) {
  fs::path out = temp_dir("index");
  int checked = 0;
  for (auto& def : definitions()) {
    importer::Definition d = importer::read_definition(def);
    auto r = import_one(def, out);
    spec::Operator op = spec::load_operator(r.dir);
    bool has_index = false;
    for (auto& t : op.tensors) has_index |= !t.output && spec::host_generated(t.init);
    if (!has_index) continue;
    // every workload, three seeds each, as validation shapes are drawn
    if (op.imported->workloads.empty()) continue;
    for (auto& w : importer::read_workloads(op.imported->workloads, d)) {
      spec::Shape s;
      s.symbols = w.axes;
      for (unsigned long long seed = 1; seed <= 3; ++seed) {
        check_valid(d, w.axes, draw(op, s, seed), def.stem().string() + " " + w.uuid);
        ++checked;
      }
    }
    // and the fixed data of the benchmark shapes, and the synthesized validation shapes
    for (auto* suite : {&op.benchmark_shapes, &op.validation_shapes})
      for (auto& s : *suite) check_valid(d, s.symbols, draw(op, s, 5), def.stem().string() + " " + s.label());
  }
  EXPECT_GE(checked, 3 * (21 + 48));
  fs::remove_all(out);
}

TEST(Import, RaggedBenchmarkShapesCountTheirCausalPairs) {
  fs::path out = temp_dir("ragged");
  auto r = import_one(kData / "definitions/gqa_ragged/gqa_ragged_prefill_causal_h32_kv8_d128.json", out);
  spec::Operator op = spec::load_operator(r.dir);
  for (auto& s : op.benchmark_shapes) {
    ASSERT_TRUE(s.flops) << s.label();
    const auto& q = s.init_overrides.at("qo_indptr").values;
    const auto& k = s.init_overrides.at("kv_indptr").values;
    double pairs = 0;
    for (size_t i = 0; i + 1 < q.size(); ++i) {
      long long nq = q[i + 1] - q[i], nk = k[i + 1] - k[i];
      for (long long a = 0; a < nq; ++a)
        for (long long j = 0; j < nk; ++j) pairs += j <= a + nk - nq;
    }
    EXPECT_DOUBLE_EQ(*s.flops, 4.0 * 32 * 128 * pairs) << s.label();
  }
  bool said = false;
  for (auto& n : r.notes) said |= n.find("not here") != std::string::npos;
  EXPECT_TRUE(said) << "the import says that the blobs were absent and the index tensors generated";
  fs::remove_all(out);
}

namespace {

std::string refusal_of(const std::string& text, const fs::path& dir) {
  fs::path p = dir / "bad.json";
  std::ofstream(p) << text;
  try {
    importer::ImportOptions o;
    o.path = p;
    o.out = dir / "out";
    importer::import_definition(o);
  } catch (importer::ImportError& e) {
    return e.what();
  }
  return "";
}

bool have_python3() {
  return std::system("python3 -c 'import ast' >/dev/null 2>&1") == 0;
}

}  // namespace

TEST(Import, MalformedDefinitionsAreRefusedWithFileFieldAndExpectation) {
  fs::path dir = temp_dir("refuse");
  std::ifstream in(kData / "definitions/rmsnorm/rmsnorm_h4096.json");
  const auto good = nlohmann::ordered_json::parse(in);
  ASSERT_EQ(refusal_of(good.dump(2), dir), "") << "the unmodified definition imports";
  using Edit = std::function<void(nlohmann::ordered_json&)>;
  struct Case {
    std::string what;
    Edit edit;
    std::string field, expected;
  };
  std::vector<Case> cases = {
      {"unknown dtype", [](auto& j) { j["inputs"]["hidden_states"]["dtype"] = "bfloat17"; },
       "inputs.hidden_states.dtype", "expected a dtype of the format"},
      {"undeclared axis", [](auto& j) { j["inputs"]["weight"]["shape"][0] = "hidden_dim"; }, "inputs.weight.shape[0]",
       "an axis declared in 'axes', got 'hidden_dim'"},
      {"var axis only in outputs",
       [](auto& j) {
         j["axes"]["extra"] = {{"type", "var"}};
         j["outputs"]["output"]["shape"][1] = "extra";
       },
       "axes.extra", "only in outputs"},
      {"reference without run",
       [](auto& j) {
         std::string r = j["reference"];
         r.replace(r.find("def run("), 8, "def forward(");
         j["reference"] = r;
       },
       "reference", "defining run"},
      {"reference not a string", [](auto& j) { j["reference"] = 3; }, "reference", "Python source"},
      {"const axis without a value", [](auto& j) { j["axes"]["hidden_size"].erase("value"); }, "axes.hidden_size.value",
       "a non-negative integer"},
  };
  auto expect_refused = [&](const Case& c) {
    auto j = good;
    c.edit(j);
    std::string err = refusal_of(j.dump(2), dir);
    EXPECT_NE(err.find((dir / "bad.json").string()), std::string::npos) << c.what << ": " << err;
    EXPECT_NE(err.find("field '" + c.field + "'"), std::string::npos) << c.what << ": " << err;
    EXPECT_NE(err.find(c.expected), std::string::npos) << c.what << ": " << err;
  };
  for (auto& c : cases) expect_refused(c);
  // a reference that does not parse, or whose run takes other arguments (python3's ast
  // decides; CI has python3)
  if (!have_python3()) GTEST_SKIP() << "no python3: the parse check of the reference is not made here";
  expect_refused({"reference that does not parse",
                  [](auto& j) {
                    std::string r = j["reference"];
                    r.replace(r.find("EPS = 1e-5"), 10, "EPS = (1e-5");
                    j["reference"] = r;
                  },
                  "reference", "parses and defines run(...): line "});
  expect_refused({"run with the wrong arity",
                  [](auto& j) {
                    std::string r = j["reference"];
                    r.replace(r.find("def run(hidden_states, weight)"), 30, "def run(hidden_states)");
                    j["reference"] = r;
                  },
                  "reference", "run takes 1 positional parameters, the definition has 2 inputs"});
  fs::remove_all(dir);
}

TEST(Import, FormatDtypesTesseraLacksAreNamed) {
  fs::path dir = temp_dir("dtype");
  std::ifstream in(kData / "definitions/gemm/gemm_n4096_k4096.json");
  auto j = nlohmann::ordered_json::parse(in);
  j["inputs"]["A"]["dtype"] = "float8_e4m3fn";
  std::string err = refusal_of(j.dump(2), dir);
  EXPECT_NE(err.find("field 'inputs.A.dtype'"), std::string::npos) << err;
  EXPECT_NE(err.find("tessera does not support it yet"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(Import, CommandLineWritesAnOperator) {
  fs::path out = temp_dir("cli");
  std::string cmd = std::string(TESSERA_BINARY) + " import " + kData.string() + " --name rmsnorm_h4096 --out " +
                    out.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  int rc = pclose(p);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("imported rmsnorm_h4096"), std::string::npos) << text;
  EXPECT_NE(text.find("next: tessera optimize rmsnorm_h4096"), std::string::npos) << text;
  EXPECT_TRUE(fs::exists(out / "rmsnorm_h4096/spec.json"));
  // a definition name the dataset does not have
  cmd = std::string(TESSERA_BINARY) + " import " + kData.string() + " --name nope --out " + out.string() + " 2>&1";
  p = popen(cmd.c_str(), "r");
  text.clear();
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  EXPECT_NE(pclose(p), 0);
  EXPECT_NE(text.find("no definitions/*/nope.json"), std::string::npos) << text;
  fs::remove_all(out);
}
