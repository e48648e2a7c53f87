// tests/core/report_test.cpp — the status set and the evaluation report as data:
// statistics of timing samples and the JSON that travels from worker to agent.
#include "evaluator/report.h"

#include <gtest/gtest.h>

#include <set>

using namespace tessera::evaluator;

TEST(Statuses, AreAClosedDocumentedSet) {
  std::set<std::string> s(all_statuses().begin(), all_statuses().end());
  EXPECT_EQ(s.size(), all_statuses().size());
  for (const char* want :
       {"ok", "compiled", "compile_error", "not_applicable", "rejected_static", "resource_limit", "launch_error",
        "wrong_result", "race", "out_of_bounds", "modified_input", "crashed", "timeout", "impossible_speed"})
    EXPECT_TRUE(is_status(want)) << want;
  EXPECT_FALSE(is_status("fast"));
  EXPECT_FALSE(is_status(""));
}

TEST(Summarize, MedianMinP90AndRelativeStandardError) {
  Timing t = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(t.samples, 5);
  EXPECT_DOUBLE_EQ(t.median_ms, 3);
  EXPECT_DOUBLE_EQ(t.min_ms, 1);
  EXPECT_DOUBLE_EQ(t.p90_ms, 5);
  EXPECT_DOUBLE_EQ(t.mean_ms, 3);
  // sample sd = sqrt(2.5); rse = sd / sqrt(n) / mean
  EXPECT_NEAR(t.rse, std::sqrt(2.5) / std::sqrt(5.0) / 3.0, 1e-12);
  Timing even = summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(even.median_ms, 2.5);
  Timing same = summarize(std::vector<double>(10, 0.5));
  EXPECT_DOUBLE_EQ(same.rse, 0);
  EXPECT_EQ(summarize({}).samples, 0);
}

TEST(Report, RoundTripsThroughJson) {
  EvalReport r;
  r.status = status::wrong_result;
  r.message = "shape 7x1025 seed 3: y: rel_l2 0.5";
  ShapeCheck c;
  c.shape = "7x1025";
  c.seed = 123456789012345ULL;
  c.status = status::wrong_result;
  c.outputs.push_back({"y", 0.5, 2.0, 3, false});
  r.checks.push_back(c);
  ShapeTiming t;
  t.shape = "big";
  t.candidate = summarize({1.0, 1.1, 0.9});
  t.baseline = summarize({2.0, 2.2, 1.8});
  t.speedup = 2.0;
  r.timings.push_back(t);
  r.geomean_speedup = 2.0;
  r.temperature_c_before = 41;
  EvalReport back = nlohmann::json(r).get<EvalReport>();
  EXPECT_EQ(back.status, r.status);
  EXPECT_EQ(back.message, r.message);
  ASSERT_EQ(back.checks.size(), 1u);
  EXPECT_EQ(back.checks[0].seed, c.seed);
  ASSERT_EQ(back.checks[0].outputs.size(), 1u);
  EXPECT_EQ(back.checks[0].outputs[0].nonfinite, 3);
  EXPECT_FALSE(back.checks[0].outputs[0].pass);
  ASSERT_EQ(back.timings.size(), 1u);
  EXPECT_DOUBLE_EQ(back.timings[0].baseline.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(back.geomean_speedup, 2.0);
  EXPECT_DOUBLE_EQ(back.temperature_c_before, 41);
}
