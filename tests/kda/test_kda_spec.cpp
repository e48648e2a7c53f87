// tests/kda/test_kda_spec.cpp — consistency of targets/kda/spec.json, read as plain
// JSON (independent of tessera's spec loader): every launch argument names a tensor,
// scratch buffer, symbol, scalar or template parameter; kernels named in plans exist
// in their sources; the benchmark shapes are exactly the six workloads of
// OPERATORS.md; the validation shapes cover the awkward cases of issue 5.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

using nlohmann::json;

namespace {

const std::string kDir = std::string(TESSERA_SOURCE_DIR_FOR_TESTS) + "/targets/kda/";

json load_spec() {
  std::ifstream f(kDir + "spec.json");
  EXPECT_TRUE(f.good()) << "cannot open " << kDir << "spec.json";
  return json::parse(f);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The source and, in place, every header it includes from kda's own folder (kernels/, ops/;
// the tile library's are not searched): where the template's kernels are defined.
std::string text_with_includes(const std::string& file, int depth = 0) {
  std::string text = read_text(kDir + file), out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    out += line + "\n";
    const auto a = line.find("#include \"");
    if (a == std::string::npos || depth > 4) continue;
    const auto b = line.find('"', a + 10);
    const std::string inc = line.substr(a + 10, b - a - 10);
    if (std::ifstream(kDir + inc)) out += text_with_includes(inc, depth + 1);
  }
  return out;
}

void check_plan(const json& spec, const json& plan, const json& scratch, const json& params, const std::string& source,
                const std::string& what) {
  std::set<std::string> names;
  for (auto& t : spec["tensors"]) names.insert(t["name"]);
  for (auto& s : spec["symbols"]) names.insert(s);
  for (auto& [k, v] : spec["scalars"].items()) names.insert(k);
  for (auto& s : scratch) names.insert(s["name"]);
  for (auto& [k, v] : params.items()) names.insert(k);
  const std::string text = text_with_includes(source);
  ASSERT_FALSE(text.empty()) << what << ": cannot read " << source;
  for (auto& step : plan) {
    const std::string kernel = step["kernel"];
    EXPECT_NE(text.find(" " + kernel + "("), std::string::npos)
        << what << ": kernel " << kernel << " not found in " << source;
    EXPECT_EQ(step["grid"].size(), 3u) << what << " " << kernel;
    EXPECT_EQ(step["block"].size(), 3u) << what << " " << kernel;
    for (auto& a : step["args"]) {
      std::string name = a.get<std::string>();
      if (name.rfind("tmap:", 0) == 0) name = name.substr(5, name.find(':', 5) - 5);  // a tensor map over a tensor
      EXPECT_TRUE(names.count(name)) << what << ": " << kernel << " argument '" << a << "' names nothing in the spec";
    }
  }
}

}  // namespace

TEST(KdaSpec, LaunchPlansNameOnlyKnownThings) {
  json spec = load_spec();
  check_plan(spec, spec["reference"]["launch"], json::array(), json::object(), spec["reference"]["source"],
             "reference");
  check_plan(spec, spec["baseline"]["launch"], spec["baseline"]["scratch"], json::object(), spec["baseline"]["source"],
             "baseline");
  ASSERT_FALSE(spec["templates"].empty());
  for (auto& t : spec["templates"])
    check_plan(spec, t["launch"], t["scratch"], t["params"], t["source"], "template " + t["name"].get<std::string>());
}

TEST(KdaSpec, TensorsAsOperatorsMdDefinesThem) {
  json spec = load_spec();
  std::map<std::string, std::pair<std::string, std::string>> want = {
      {"q", {"bf16", "input"}},      {"k", {"bf16", "input"}},    {"v", {"bf16", "input"}},
      {"g", {"bf16", "input"}},      {"beta", {"bf16", "input"}}, {"A_log", {"f32", "input"}},
      {"dt_bias", {"f32", "input"}}, {"h0", {"f32", "input"}},    {"cu_seqlens", {"i64", "input"}},
      {"o", {"bf16", "output"}},     {"ht", {"f32", "output"}}};
  ASSERT_EQ(spec["tensors"].size(), want.size());
  for (auto& t : spec["tensors"]) {
    auto it = want.find(t["name"]);
    ASSERT_NE(it, want.end()) << t["name"];
    EXPECT_EQ(t["dtype"], it->second.first) << t["name"];
    EXPECT_EQ(t["role"], it->second.second) << t["name"];
    if (t["role"] == "output") {
      EXPECT_LE(t["tolerance"]["rel_l2"].get<double>(), 0.003) << t["name"];
    }
  }
  EXPECT_EQ(spec["scalars"]["scale"]["expr"], "1/sqrt(K)");
  EXPECT_EQ(spec["scalars"]["lower_bound"]["expr"], "-5");
}

TEST(KdaSpec, BenchmarkShapesAreTheSixWorkloads) {
  json spec = load_spec();
  const std::vector<long long> six = {1300, 547, 2048, 963, 271, 3063};
  std::multiset<std::string> seen;
  ASSERT_EQ(spec["benchmark_shapes"].size(), 6u);
  for (auto& s : spec["benchmark_shapes"]) {
    EXPECT_EQ(s["K"], 128);
    EXPECT_EQ(s["V"], 128);
    std::vector<long long> sl = s["seqlens"];
    long long T = 0;
    for (auto x : sl) T += x;
    EXPECT_EQ(T, 8192) << s["name"];
    std::string kind = sl.size() == 1 ? "1x8192"
                       : sl == six    ? "6var"
                                      : (sl == std::vector<long long>(8, 1024) ? "8x1024" : "?");
    seen.insert(std::to_string(s["H"].get<int>()) + "/" + kind);
  }
  EXPECT_EQ(seen,
            (std::multiset<std::string>{"96/1x8192", "96/6var", "96/8x1024", "64/1x8192", "64/6var", "64/8x1024"}));
}

TEST(KdaSpec, ValidationCoversAwkwardLengths) {
  json spec = load_spec();
  std::set<long long> lens;
  bool one_head = false, many = false, h0_zero = false, h0_large = false;
  for (auto& s : spec["validation_shapes"]) {
    for (auto x : s["seqlens"]) lens.insert(x.get<long long>());
    one_head |= s["H"] == 1;
    many |= s["seqlens"].size() >= 10;
    if (s.contains("init_overrides") && s["init_overrides"].contains("h0")) {
      auto& h = s["init_overrides"]["h0"];
      h0_zero |= h["dist"] == "constant" && h["value"] == 0;
      h0_large |= h["dist"] == "normal" && h["std"].get<double>() >= 4;
    }
  }
  for (long long l : {1, 63, 65, 1000}) EXPECT_TRUE(lens.count(l)) << "no sequence of length " << l;
  EXPECT_TRUE(one_head);
  EXPECT_TRUE(many);
  EXPECT_TRUE(h0_zero);
  EXPECT_TRUE(h0_large);
}
