// tests/support/judge.h — for a template's GPU tests: configurations judged as `tessera
// optimize` judges them (evaluator::Judge, validation only: NaN-poisoned outputs and scratch,
// guard zones, the spec's tolerance against the float64 reference, through the spec's launch
// plan with its tensor maps and `when` steps), each expected ok on every validation shape and
// seed. Header-only, with gtest's EXPECTs; the caller skips where there is no suitable GPU.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/compiler.h"
#include "codegen/render.h"
#include "evaluator/device.h"
#include "evaluator/judge.h"
#include "spec/spec.h"
#include "tests/support/gpu.h"

namespace tessera::testing {

using Params = std::map<std::string, long long>;

// Configurations from a table: one row of values a configuration, in the order of `names`.
inline std::vector<Params> param_table(const std::vector<std::string>& names,
                                       const std::vector<std::vector<long long>>& rows) {
  std::vector<Params> configs;
  for (const auto& r : rows) {
    Params p;
    for (size_t i = 0; i < r.size() && i < names.size(); ++i) p[names[i]] = r[i];
    configs.push_back(p);
  }
  return configs;
}

// A program of op (a template, the reference or the baseline) rendered with params and
// compiled for arch (cache: the temporary folder's tessera-judge-tests), loaded on dev.
inline evaluator::LoadedProgram load_program(evaluator::Device& dev, const spec::Operator& op, const spec::Program& p,
                                             const Params& params, const std::string& arch) {
  static codegen::Compiler compiler(std::filesystem::temp_directory_path() / "tessera-judge-tests");
  evaluator::LoadedProgram lp{p, params, nullptr};
  if (!p.builtin.empty()) return lp;
  auto r = compiler.compile({codegen::render(codegen::read_file(p.source.string()), params),
                             p.source.filename().string(),
                             arch,
                             {op.dir, source_dir() / "targets/common"},
                             {}});
  EXPECT_TRUE(r.ok) << p.source << ":\n" << r.log;
  if (r.ok) lp.module = std::make_shared<evaluator::Module>(dev.driver(), r.cubin);
  return lp;
}

// Each configuration of `tpl` judged on op's validation shapes with `seeds` seeds: ok, every
// shape and seed compared, the largest relative L2 error at most max_rel_l2 and above 0 (a
// rounding error of zero means nothing was compared). A parameter a configuration leaves out
// takes its first value, as for a stored candidate.
inline void judge_configs(evaluator::Device& dev, const spec::Operator& op, const spec::Program& tpl,
                          const std::vector<Params>& configs, const std::string& arch, double max_rel_l2,
                          int seeds = 2) {
  evaluator::Judge judge(dev, op, load_program(dev, op, op.reference, {}, arch),
                         load_program(dev, op, op.baseline, {}, arch));
  evaluator::JudgeSettings st;
  st.seeds = seeds;
  st.benchmark = false;
  for (const Params& p : configs) {
    std::string label = tpl.name;
    for (auto& [name, v] : p) label += " " + name + "=" + std::to_string(v);
    SCOPED_TRACE(label);
    const auto cand = load_program(dev, op, tpl, spec::complete_params(tpl, p), arch);
    ASSERT_TRUE(cand.module);
    const auto rep = judge.evaluate(cand, st);
    EXPECT_EQ(rep.status, "ok") << rep.message;
    EXPECT_EQ(rep.checks.size(), op.validation_shapes.size() * seeds);
    EXPECT_LE(rep.max_rel_l2, max_rel_l2);
    EXPECT_GT(rep.max_rel_l2, 0.0);
  }
}

// A fixture for a template's GPU tests on sm_90a: SetUp calls set_up(OP, WHY), which skips the
// test, saying why, where there is no GPU or it is not sm_90a (WHY: whose kernels need one), and
// otherwise opens device 0 and loads targets/OP.
class Sm90aTemplateTest : public ::testing::Test {
 protected:
  void set_up(const std::string& op_name, const std::string& why_sm90a) {
    std::string why;
    if (!have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
    auto drv = evaluator::Driver::load(&why);
    ASSERT_TRUE(drv) << why;
    dev = std::make_unique<evaluator::Device>(drv, 0);
    arch = dev->info().arch();
    if (arch != "sm_90a") GTEST_SKIP() << why_sm90a << "; this GPU is " << arch;
    op = spec::load_operator(source_dir() / "targets" / op_name);
  }
  std::unique_ptr<evaluator::Device> dev;
  std::string arch;
  spec::Operator op;
};

}  // namespace tessera::testing
