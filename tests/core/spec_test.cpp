// tests/core/spec_test.cpp — loading operator specs, and refusing broken ones
// with the file, the field and what was expected.
#include "spec/spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/session.h"
#include "tests/support/hostile_targets.h"

using namespace tessera::spec;
namespace fs = std::filesystem;

namespace {

fs::path targets() {
  return fs::path(TESSERA_SOURCE_DIR) / "targets";
}

// A valid small spec in a temporary folder; tests break one field at a time.
struct TempOp {
  fs::path dir;
  explicit TempOp(const std::string& spec) {
    dir = fs::temp_directory_path() /
          ("tessera-spec-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
    std::ofstream(dir / "spec.json") << spec;
    std::ofstream(dir / "k.cu") << "extern \"C\" __global__ void k() {}";
  }
  ~TempOp() { fs::remove_all(dir); }
};

const char* kGood = R"J({
  "name": "toy", "symbols": ["N"],
  "tensors": [
    {"name": "x", "dtype": "f32", "shape": ["N"], "role": "input", "init": {"dist": "normal", "std": 1}},
    {"name": "y", "dtype": "f32", "shape": ["N"], "role": "output", "tolerance": {"rel_l2": 1e-5}}],
  "validation_shapes": [{"N": 1}, {"N": 1000}],
  "benchmark_shapes": [{"name": "big", "N": 1048576}],
  "flops": "N", "bytes": "8*N",
  "reference": {"source": "k.cu", "launch": [{"kernel": "k", "grid": ["cdiv(N,256)"], "block": ["256"], "args": ["x", "y", "N"]}]},
  "baseline": {"source": "k.cu", "launch": [{"kernel": "k", "grid": ["cdiv(N,256)"], "block": ["256"], "args": ["x", "y", "N"]}]},
  "templates": [{"name": "t", "source": "k.cu", "params": {"B": [64, 128]}, "constraints": ["B >= 64"],
                 "launch": [{"kernel": "k", "grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"]}]}]
})J";

std::string load_error(const std::string& spec) {
  TempOp op(spec);
  try {
    load_operator(op.dir);
  } catch (SpecError& e) {
    return e.what();
  }
  return "";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST(Spec, LoadsAValidSpec) {
  TempOp t(kGood);
  Operator op = load_operator(t.dir);
  EXPECT_EQ(op.name, "toy");
  ASSERT_EQ(op.tensors.size(), 2u);
  EXPECT_TRUE(op.tensors[1].output);
  EXPECT_DOUBLE_EQ(op.tensors[1].tol.rel_l2, 1e-5);
  EXPECT_EQ(op.validation_shapes.size(), 2u);
  EXPECT_EQ(op.benchmark_shapes[0].label(), "big");
  EXPECT_DOUBLE_EQ(op.bytes_at(op.benchmark_shapes[0]), 8.0 * 1048576);
  ASSERT_EQ(op.templates.size(), 1u);
  EXPECT_EQ(op.templates[0].params.at("B"), (std::vector<long long>{64, 128}));
}

TEST(Spec, RefusesBadFieldsNamingFileAndField) {
  struct Case {
    std::string from, to, expect;
  };
  std::vector<Case> cases = {
      {R"J("dtype": "f32", "shape": ["N"], "role": "input")J", R"J("dtype": "float", "shape": ["N"], "role": "input")J",
       "tensors[0].dtype"},
      {R"J("role": "output")J", R"J("role": "result")J", "tensors[1].role"},
      {R"J({"N": 1}, )J", R"J({"N": 1, "Q": 2}, )J", "validation_shapes[0].Q"},
      {R"J("tolerance": {"rel_l2": 1e-5})J", R"J("tolerance": {"rel_l2": "small"})J", "tensors[1].tolerance.rel_l2"},
      {R"J("args": ["x", "y", "N", "B"])J", R"J("args": ["x", "y", "N", "Z"])J", "'Z' is not a tensor"},
      {R"J("grid": ["cdiv(N,B)"])J", R"J("grid": ["cdiv(N,BB)"])J", "templates[0].launch[0]"},
      {R"J("source": "k.cu", "params")J", R"J("source": "missing.cu", "params")J", "templates[0].source"},
      {R"J("init": {"dist": "normal", "std": 1})J", R"J("init": {"dist": "zeros"})J", "tensors[0].init.dist"},
      {R"J("init": {"dist": "normal", "std": 1})J", R"J("init": {"dist": "uniform", "low": 1, "high": 1})J", "high"},
      {R"J("source": "k.cu", "params")J", R"J("source": "../k.cu", "params")J", "inside the target folder"},
  };
  for (auto& c : cases) {
    std::string err = load_error(replace(kGood, c.from, c.to));
    EXPECT_NE(err.find("spec.json"), std::string::npos) << "no file named for " << c.expect << ": " << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << err;
  }
  EXPECT_NE(load_error("{ not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(load_error(replace(kGood, R"J("flops": "N", )J", "")).find("'flops'"), std::string::npos);
}

// "tmap:NAME:BOX:SWIZZLE" launch arguments (TMA tensor maps the evaluator builds per
// launch): parsed into tensor, box and swizzle, and refused, naming the launch step, when
// malformed or when they do not fit the tensor they name.
TEST(Spec, TensorMapArgumentsParseAndAreChecked) {
  EXPECT_FALSE(parse_tensor_map_arg("x").has_value());
  auto t = parse_tensor_map_arg("tmap:q:64x1x32:128");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->tensor, "q");
  EXPECT_EQ(t->box, (std::vector<int>{64, 1, 32}));
  EXPECT_EQ(t->swizzle, 128);
  for (const char* bad : {"tmap:q", "tmap:q:64:128:1", "tmap::64:0", "tmap:q:64x:0", "tmap:q:0:0", "tmap:q:257:0",
                          "tmap:q:64x1:96", "tmap:q:ax1:0", "tmap:q:1x1x1x1x1x1:0"})
    EXPECT_THROW(parse_tensor_map_arg(bad), SpecError) << bad;

  TempOp ok(replace(kGood, R"J("args": ["x", "y", "N", "B"])J", R"J("args": ["tmap:x:32:128", "y", "N", "B"])J"));
  Operator op = load_operator(ok.dir);
  EXPECT_EQ(op.templates[0].launch[0].args[0], "tmap:x:32:128");
  struct Case {
    std::string arg, expect;
  };
  for (const Case& c : std::vector<Case>{{"tmap:z:32:0", "not a tensor"},
                                         {"tmap:x:32x2:0", "2 box sizes for a tensor of rank 1"},
                                         {"tmap:x:2:0", "multiple of 16 bytes"},
                                         {"tmap:x:64:128", "wider than its 128-byte swizzle"},
                                         {"tmap:x:32:100", "the swizzle is 0, 32, 64 or 128"}}) {
    std::string err = load_error(
        replace(kGood, R"J("args": ["x", "y", "N", "B"])J", "\"args\": [\"" + c.arg + "\", \"y\", \"N\", \"B\"]"));
    EXPECT_NE(err.find("templates[0].launch[0].args"), std::string::npos) << c.arg << ": " << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.arg << ": " << err;
  }
}

// Programmatic dependent launches ("pdl": true on a step after the first, main stream):
// parsed, written by program_to_json only when true (plans judged before the field stay
// alike), and refused on the first step, on the side stream and when not a boolean.
TEST(Spec, ProgrammaticDependentLaunches) {
  const std::string two = replace(kGood, R"J("grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"]}])J",
                                  R"J("grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"]},
                     {"kernel": "k", "grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"], "pdl": true}])J");
  TempOp t(two);
  Operator op = load_operator(t.dir);
  ASSERT_EQ(op.templates[0].launch.size(), 2u);
  EXPECT_FALSE(op.templates[0].launch[0].pdl);
  EXPECT_TRUE(op.templates[0].launch[1].pdl);
  nlohmann::json j = program_to_json(op.templates[0], t.dir);
  EXPECT_FALSE(j["launch"][0].contains("pdl"));
  EXPECT_EQ(j["launch"][1]["pdl"], true);
  Program back = program_from_json(j, t.dir);
  EXPECT_TRUE(back.launch[1].pdl);
  EXPECT_TRUE(same_launches(back, op.templates[0]));
  // the flag is part of the launch: a plan that loses it is another plan
  Program plain = back;
  plain.launch[1].pdl = false;
  EXPECT_FALSE(same_launches(plain, op.templates[0]));

  std::string err = load_error(replace(two, R"J("pdl": true)J", R"J("pdl": 1)J"));
  EXPECT_NE(err.find("templates[0].launch[1].pdl"), std::string::npos) << err;
  EXPECT_NE(err.find("true or false"), std::string::npos) << err;
  err = load_error(replace(two, R"J("pdl": true)J", R"J("pdl": true, "stream": "side")J"));
  EXPECT_NE(err.find("templates[0].launch[1].pdl"), std::string::npos) << err;
  EXPECT_NE(err.find("side stream"), std::string::npos) << err;
  err = load_error(
      replace(kGood, R"J("args": ["x", "y", "N", "B"]}])J", R"J("args": ["x", "y", "N", "B"], "pdl": true}])J"));
  EXPECT_NE(err.find("launch[0].pdl"), std::string::npos) << err;
  EXPECT_NE(err.find("first step"), std::string::npos) << err;
}

// Side launches ("stream": "side", run beside the main stream's launches that follow) and
// the SM-count symbol SMS (bound by the judge in every launch expression): parsed, kept
// through program_to_json, and refused where malformed or where an operator declares SMS.
TEST(Spec, SideLaunchesAndTheSmCountSymbol) {
  const std::string side =
      replace(kGood, R"J("grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"]}])J",
              R"J("grid": ["min(cdiv(N,B), SMS)"], "block": ["B"], "args": ["x", "y", "N", "B"], "stream": "side"},
                     {"kernel": "k", "grid": ["SMS - 1"], "block": ["B"], "args": ["x", "y", "SMS", "B"]}])J");
  TempOp t(side);
  Operator op = load_operator(t.dir);
  ASSERT_EQ(op.templates[0].launch.size(), 2u);
  EXPECT_EQ(op.templates[0].launch[0].stream, "side");
  EXPECT_EQ(op.templates[0].launch[1].stream, "main");
  EXPECT_EQ(op.templates[0].launch[1].args[2], kSmCountSymbol);
  EXPECT_EQ(op.reference.launch[0].stream, "main");

  // program_to_json writes "stream" for side launches only, and reads back the same plan
  nlohmann::json j = program_to_json(op.templates[0], t.dir);
  EXPECT_EQ(j["launch"][0]["stream"], "side");
  EXPECT_FALSE(j["launch"][1].contains("stream"));
  Program back = program_from_json(j, t.dir);
  EXPECT_EQ(back.launch[0].stream, "side");
  EXPECT_EQ(back.launch[1].stream, "main");
  EXPECT_NO_THROW(validate_program(op, back, "back"));

  // a proposal's plan is checked the same way
  j["launch"][0]["stream"] = "aux";
  try {
    program_from_json(j, t.dir);
    ADD_FAILURE() << "stream 'aux' accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("\"main\" or \"side\""), std::string::npos) << e.what();
  }
  std::string err = load_error(replace(side, R"J("stream": "side")J", R"J("stream": 1)J"));
  EXPECT_NE(err.find("templates[0].launch[0].stream"), std::string::npos) << err;

  // SMS is the judge's: an operator may not declare it
  err = load_error(replace(kGood, R"J("symbols": ["N"])J", R"J("symbols": ["N", "SMS"])J"));
  EXPECT_NE(err.find("symbols"), std::string::npos) << err;
  EXPECT_NE(err.find("SM count"), std::string::npos) << err;
  // and without it the expressions that use it would not resolve
  EXPECT_NE(load_error(replace(side, "SMS - 1", "SMX - 1")).find("templates[0].launch[1]"), std::string::npos);

  // the GPU test's fixture (tests/gpu/side_test.cpp) loads: its side template forks, its serial one does not
  fs::path fx =
      tessera::testing::make_rmsnorm_fixture_targets(fs::path(TESSERA_SOURCE_DIR), "side_rmsnorm", "spec-side");
  Operator sop = load_operator(fx / "side_rmsnorm");
  ASSERT_EQ(sop.templates.size(), 2u);
  EXPECT_EQ(sop.find_template("side")->launch.at(0).stream, "side");
  EXPECT_EQ(sop.find_template("serial")->launch.at(0).stream, "main");
  fs::remove_all(fx);
}

// Named expressions ("let"): substituted in parentheses into constraints, launch
// expressions and scratch sizes when the spec is read (lets using lets included), so the
// program holds plain expressions; a cycle, a bad name and a name that is already a
// symbol or parameter are refused with the field.
TEST(Spec, LetsAreSubstitutedIntoTheProgram) {
  const std::string with = replace(
      kGood, R"J("constraints": ["B >= 64"],)J",
      R"J("constraints": ["WIDE || B >= 64"], "let": {"BLOCKS": "cdiv(N, B)", "WIDE": "BLOCKS > 4", "HALF": "B/2"},)J");
  const std::string spec = replace(with, R"J("grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"]}])J",
                                   R"J("grid": ["BLOCKS"], "block": ["HALF"], "when": "WIDE", "smem": "HALF*4",)J"
                                   R"J( "args": ["x", "y", "N", "B"]}])J");
  TempOp t(spec);
  Operator op = load_operator(t.dir);
  const Program& tpl = op.templates[0];
  EXPECT_EQ(tpl.lets.size(), 3u);
  EXPECT_EQ(tpl.launch[0].grid[0], "(cdiv(N, B))");
  EXPECT_EQ(tpl.launch[0].block[0], "(B/2)");
  EXPECT_EQ(tpl.launch[0].when, "((cdiv(N, B)) > 4)");
  EXPECT_EQ(tpl.constraints[0], "((cdiv(N, B)) > 4) || B >= 64");
  Bindings b{{"N", 1000}, {"B", 128}};
  EXPECT_EQ(eval_int(tpl.launch[0].grid[0], b), 8);
  EXPECT_TRUE(launched(tpl.launch[0], b));
  EXPECT_FALSE(launched(tpl.launch[0], {{"N", 500}, {"B", 128}}));  // 4 blocks: not WIDE
  // a name inside a longer identifier or after a dot is left alone
  TempOp t2(replace(spec, R"J("HALF": "B/2")J", R"J("HALF": "B/2", "N2": "HALF_B")J"));
  EXPECT_EQ(load_operator(t2.dir).templates[0].launch[0].block[0], "(B/2)");

  std::string err = load_error(replace(spec, R"J("HALF": "B/2")J", R"J("HALF": "BLOCKS + HALF/2")J"));
  EXPECT_NE(err.find("templates[0].let."), std::string::npos) << err;
  EXPECT_NE(err.find("does not use itself"), std::string::npos) << err;
  err = load_error(replace(spec, R"J("HALF": "B/2")J", R"J("B": "2")J"));
  EXPECT_NE(err.find("let.B"), std::string::npos) << err;
  err = load_error(replace(spec, R"J("HALF": "B/2")J", R"J("N": "2")J"));
  EXPECT_NE(err.find("let.N"), std::string::npos) << err;
  err = load_error(replace(spec, R"J("HALF": "B/2")J", R"J("HALF": 2)J"));
  EXPECT_NE(err.find("let.HALF"), std::string::npos) << err;
}

// A launch step's `when` (run the step only where it is non-zero): parsed, checked like the
// other launch expressions, kept through program_to_json (only where it is not "1"), and
// what spec::launched decides together with the grid.
TEST(Spec, LaunchStepsRunWhereTheirConditionHolds) {
  const std::string two =
      replace(kGood, R"J("grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"]}])J",
              R"J("grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"], "when": "N >= 1000"},
                     {"kernel": "k", "grid": ["1"], "block": ["B"], "args": ["x", "y", "N", "B"], "when": "N < 1000"}])J");
  TempOp t(two);
  Operator op = load_operator(t.dir);
  const auto& L = op.templates[0].launch;
  ASSERT_EQ(L.size(), 2u);
  EXPECT_EQ(L[0].when, "N >= 1000");
  EXPECT_EQ(op.reference.launch[0].when, "1");
  for (long long n : {1LL, 999LL, 1000LL, 5000LL}) {
    Bindings b{{"N", static_cast<double>(n)}, {"B", 64}};
    EXPECT_EQ(launched(L[0], b), n >= 1000) << n;
    EXPECT_EQ(launched(L[1], b), n < 1000) << n;
  }
  // an empty grid still leaves a step out whatever its condition
  KernelLaunch empty = L[1];
  empty.grid[0] = "N - 1";
  EXPECT_FALSE(launched(empty, {{"N", 1}, {"B", 64}}));

  nlohmann::json j = program_to_json(op.templates[0], t.dir);
  EXPECT_EQ(j["launch"][1]["when"], "N < 1000");
  EXPECT_FALSE(program_to_json(op.reference, t.dir)["launch"][0].contains("when"));
  Program back = program_from_json(j, t.dir);
  EXPECT_EQ(back.launch[0].when, "N >= 1000");
  EXPECT_NO_THROW(validate_program(op, back, "back"));

  // a condition over an unknown name is refused with the step's place
  std::string err = load_error(replace(two, R"J("when": "N < 1000")J", R"J("when": "M < 1000")J"));
  EXPECT_NE(err.find("templates[0].launch[1]"), std::string::npos) << err;
  err = load_error(replace(two, R"J("when": "N < 1000")J", R"J("when": ["N"])J"));
  EXPECT_NE(err.find("when"), std::string::npos) << err;
}

TEST(Spec, DerivesTAndNseqFromSeqlens) {
  std::string s = replace(replace(kGood, R"J("symbols": ["N"])J", R"J("symbols": ["N", "T", "NSEQ"])J"),
                          R"J({"N": 1}, )J", R"J({"N": 1, "seqlens": [3, 0, 5]}, )J");
  s = replace(s, R"J({"N": 1000})J", R"J({"N": 1000, "T": 1, "NSEQ": 1})J");
  s = replace(s, R"J("name": "big", "N": 1048576)J", R"J("name": "big", "N": 1048576, "T": 1, "NSEQ": 1)J");
  TempOp t(s);
  Operator op = load_operator(t.dir);
  EXPECT_EQ(op.validation_shapes[0].symbols.at("T"), 8);
  EXPECT_EQ(op.validation_shapes[0].symbols.at("NSEQ"), 3);
}

// A suite (`extends`): another operator's spec with its own name, description and benchmark
// shapes; the sources stay the base's, the spec's folder is the suite's own, and the
// evaluations' spec hash covers both files.
TEST(Spec, ASuiteIsItsBaseWithItsOwnBenchmarkShapes) {
  TempOp base(kGood);
  const fs::path suite_dir = base.dir.parent_path() / (base.dir.filename().string() + "-long");
  fs::create_directories(suite_dir);
  auto write_suite = [&](const std::string& text) { std::ofstream(suite_dir / "spec.json") << text; };
  const std::string extends = "\"extends\": \"../" + base.dir.filename().string() + "\"";
  write_suite("{" + extends +
              R"J(, "name": "toy_long", "benchmark_shapes": [{"name": "huge", "N": 4194304}, {"N": 8}]})J");
  Operator op = load_operator(suite_dir);
  EXPECT_EQ(op.name, "toy_long");
  EXPECT_EQ(op.extends, base.dir.filename().string());
  EXPECT_EQ(op.dir, fs::weakly_canonical(base.dir)) << "the sources' folder";
  EXPECT_EQ(op.spec_dir, fs::absolute(suite_dir));
  ASSERT_EQ(op.benchmark_shapes.size(), 2u);
  EXPECT_EQ(op.benchmark_shapes[0].label(), "huge");
  EXPECT_EQ(op.validation_shapes.size(), 2u) << "the base's";
  ASSERT_EQ(op.templates.size(), 1u);
  EXPECT_EQ(op.templates[0].source, fs::weakly_canonical(base.dir) / "k.cu");
  const Operator b = load_operator(base.dir);
  EXPECT_EQ(b.spec_dir, b.dir);
  EXPECT_TRUE(b.extends.empty());
  const std::string hash = tessera::agent::spec_hash(op);
  EXPECT_NE(hash, tessera::agent::spec_hash(b));
  std::ofstream(base.dir / "spec.json") << replace(kGood, R"J("rel_l2": 1e-5)J", R"J("rel_l2": 1e-4)J");
  EXPECT_NE(tessera::agent::spec_hash(load_operator(suite_dir)), hash) << "a change of the base's spec counts";

  auto error = [&](const std::string& text) {
    write_suite(text);
    try {
      load_operator(suite_dir);
    } catch (SpecError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string err = error("{" + extends + R"J(, "name": "x", "benchmark_shapes": [{"N": 8}], "templates": []})J");
  EXPECT_NE(err.find("'templates'"), std::string::npos) << err;
  EXPECT_NE(err.find("only extends, name, description and benchmark_shapes"), std::string::npos) << err;
  err = error("{" + extends + R"J(, "name": "x"})J");
  EXPECT_NE(err.find("'benchmark_shapes'"), std::string::npos) << err;
  err = error(R"J({"extends": "../no-such-operator", "name": "x", "benchmark_shapes": [{"N": 8}]})J");
  EXPECT_NE(err.find("'extends'"), std::string::npos) << err;
  err = error("{" + extends + R"J(, "name": "x", "benchmark_shapes": [{"M": 8}]})J");
  EXPECT_NE(err.find("extending " + base.dir.filename().string()), std::string::npos) << "names the suite: " << err;
  // a suite of a suite
  const fs::path second = base.dir.parent_path() / (base.dir.filename().string() + "-longer");
  fs::create_directories(second);
  std::ofstream(second / "spec.json") << R"J({"extends": "../)J" + suite_dir.filename().string() +
                                             R"J(", "name": "y", "benchmark_shapes": [{"N": 8}]})J";
  write_suite("{" + extends + R"J(, "name": "toy_long", "benchmark_shapes": [{"N": 8}]})J");
  try {
    load_operator(second);
    ADD_FAILURE() << "a suite of a suite loaded";
  } catch (SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("an operator that extends none"), std::string::npos) << e.what();
  }
  fs::remove_all(suite_dir);
  fs::remove_all(second);
}

// kda_long is kda's long-context suite (issue 32): kda's templates on one long sequence.
TEST(Spec, KdaLongIsKdasLongContextSuite) {
  Operator op = load_operator(targets() / "kda_long");
  const Operator kda = load_operator(targets() / "kda");
  EXPECT_EQ(op.extends, "kda");
  EXPECT_EQ(op.dir, kda.dir);
  ASSERT_EQ(op.templates.size(), kda.templates.size());
  for (size_t i = 0; i < op.templates.size(); ++i) EXPECT_EQ(op.templates[i].name, kda.templates[i].name);
  ASSERT_EQ(op.benchmark_shapes.size(), 4u);
  for (auto& s : op.benchmark_shapes) {
    EXPECT_EQ(s.seqlens.size(), 1u) << s.label();
    EXPECT_GE(s.symbols.at("T"), 32768) << s.label();
  }
}

TEST(Spec, EveryShippedOperatorLoads) {
  auto ops = list_operators(targets());
  ASSERT_GE(ops.size(), 2u);
  for (auto& name : ops) {
    SCOPED_TRACE(name);
    Operator op = load_operator(targets() / name);
    EXPECT_EQ(op.name, name);
    EXPECT_FALSE(op.templates.empty());
    for (auto& s : op.benchmark_shapes) {
      EXPECT_GT(op.flops_at(s), 0);
      EXPECT_GT(op.bytes_at(s), 0);
    }
  }
}

// The plan a template candidate is judged with (stored with it): the template's launch steps,
// its parameters narrowed to the candidate's values, no constraints or source; it reads back
// as a program that launches as the template does, and same_launches tells a changed step
// (block, grid, condition, scratch) from a change of the parameters' lists or constraints.
// (One TempOp at a time: their folders are named after the test.)
Program template_of(const std::string& spec) {
  TempOp t(spec);
  return load_operator(t.dir).templates[0];
}

TEST(Spec, AJudgedPlanLaunchesAsItsTemplateAndAChangedStepShows) {
  Operator op;
  {
    TempOp t(kGood);
    op = load_operator(t.dir);
  }
  const Program& tpl = op.templates[0];
  nlohmann::json plan = judged_plan(tpl, {{"B", 128}});
  EXPECT_EQ(plan["params"], nlohmann::json::parse(R"({"B": [128]})"));
  EXPECT_FALSE(plan.contains("constraints"));
  EXPECT_FALSE(plan.contains("source"));
  Program back = program_from_json(plan, op.dir);
  EXPECT_NO_THROW(validate_program(op, back, "judged plan"));
  EXPECT_TRUE(same_launches(back, tpl));

  EXPECT_TRUE(same_launches(back, template_of(replace(kGood, R"J("B": [64, 128]}, "constraints": ["B >= 64"])J",
                                                      R"J("B": [32, 64, 128]}, "constraints": ["B >= 32"])J"))))
      << "another space, the same launches";
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {R"J("block": ["B"], "args": ["x", "y", "N", "B"]}]}])J",
            R"J("block": ["2*B"], "args": ["x", "y", "N", "B"]}]}])J"},
           {R"J("grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"]}]}])J",
            R"J("grid": ["cdiv(N,B)"], "block": ["B"], "args": ["x", "y", "N", "B"], "when": "N > 1"}]}])J"}})
    EXPECT_FALSE(same_launches(back, template_of(replace(kGood, from, to)))) << to;
}
