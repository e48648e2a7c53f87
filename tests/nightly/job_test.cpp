// tests/nightly/job_test.cpp — the nightly job file: what it accepts, its
// defaults, and the message for each kind of mistake (file, field, reason).
#include <gtest/gtest.h>

#include "agent/nightly.h"
#include "helpers.h"

using tessera::agent::GpuSelection;
using tessera::agent::JobError;
using tessera::agent::parse_job;
using tessera::agent::Proposer;
using namespace nightly_test;

namespace {
// The message of the JobError parse_job throws, or "" if it parses.
std::string error_of(const std::string& text) {
  try {
    parse_job(text, "job.json");
  } catch (JobError& e) {
    return e.what();
  }
  return "";
}
#define EXPECT_ERROR(text, part)                                                \
  do {                                                                          \
    std::string m = error_of(text);                                             \
    EXPECT_NE(m.find(part), std::string::npos) << "message: '" << m << "'";     \
    EXPECT_EQ(m.rfind("job.json: ", 0), 0u) << "names the file: '" << m << "'"; \
  } while (0)
}  // namespace

TEST(JobFile, ShippedExampleParses) {
  auto job = tessera::agent::load_job(std::string(TESSERA_SOURCE_DIR) + "/runs/nightly/example.json");
  ASSERT_GE(job.operators.size(), 2u);
  EXPECT_EQ(job.operators[0].name, "rmsnorm");
  EXPECT_EQ(job.operators[1].name, "gemm");
}

TEST(JobFile, DefaultsAndOverrides) {
  auto job = parse_job(R"({
    // comments are allowed
    "db": "x.db", "gpus": "0,1", "report_dir": "out", "seed": 42,
    "recheck": {"top": 3, "noise_threshold": 0.08, "z": 4, "per_shape": true},
    "defaults": {"budget": {"evaluations": 50, "seconds": 600}, "strategy": "annealing"},
    "operators": ["rmsnorm", {"name": "gemm", "budget": {"seconds": 60}, "proposer": "hybrid", "top": 0}]
  })",
                       "job.json");
  EXPECT_EQ(job.db, "x.db");
  EXPECT_EQ(job.gpus, (GpuSelection{GpuSelection::Kind::list, {0, 1}}));
  EXPECT_EQ(job.report_dir, "out");
  ASSERT_TRUE(job.seed);
  EXPECT_EQ(*job.seed, 42u);
  EXPECT_DOUBLE_EQ(job.noise.threshold, 0.08);
  EXPECT_DOUBLE_EQ(job.noise.z, 4);
  EXPECT_TRUE(job.per_shape);
  ASSERT_EQ(job.operators.size(), 2u);
  auto& a = job.operators[0];
  EXPECT_EQ(a.evaluations, 50);
  ASSERT_TRUE(a.seconds);
  EXPECT_DOUBLE_EQ(*a.seconds, 600);
  EXPECT_EQ(a.strategy, "annealing");
  EXPECT_EQ(a.proposer, Proposer::search);
  EXPECT_EQ(a.top, 3);
  auto& b = job.operators[1];
  EXPECT_EQ(b.evaluations, 100000) << "seconds only: bounded by the time";
  EXPECT_DOUBLE_EQ(*b.seconds, 60);
  EXPECT_EQ(b.proposer, Proposer::hybrid);
  EXPECT_EQ(b.top, 0);
  auto minimal = parse_job(R"({"operators": ["rmsnorm"]})", "job.json");
  EXPECT_EQ(minimal.gpus, GpuSelection::all());
  EXPECT_EQ(minimal.operators[0].top, 5);
  EXPECT_DOUBLE_EQ(minimal.noise.threshold, 0.05);
  EXPECT_FALSE(minimal.per_shape);
  EXPECT_FALSE(minimal.seed);
}

TEST(JobFile, ErrorsNameTheFieldAndTheReason) {
  EXPECT_ERROR(R"({"operators": ["rmsnorm"],})", "not valid JSON at line 1");
  EXPECT_ERROR("{\n  \"operators\": [\"rmsnorm\"\n}", "line 3");
  EXPECT_ERROR(R"([1, 2])", "expected an object");
  EXPECT_ERROR(R"({})", "operators: missing");
  EXPECT_ERROR(R"({"operators": []})", "operators: expected a non-empty array");
  EXPECT_ERROR(R"({"operators": ["rmsnrom"]})", "operators[0]: unknown operator 'rmsnrom' (known: ");
  EXPECT_ERROR(R"({"operators": ["rmsnorm", "rmsnorm"]})", "operators[1]: operator 'rmsnorm' is listed twice");
  EXPECT_ERROR(R"({"operators": [{"budget": {"evaluations": 3}}]})", "operators[0]: missing \"name\"");
  EXPECT_ERROR(R"({"operators": [7]})", "operators[0]: expected an operator name or an object, got the number 7");
  EXPECT_ERROR(R"({"operators": ["rmsnorm"], "bugdet": 3})", "bugdet: unknown key (known here: ");
  EXPECT_ERROR(R"({"operators": ["rmsnorm"], "recheck": {"per_shape": 1}})",
               "recheck.per_shape: expected true or false, got the number 1");
  EXPECT_ERROR(R"({"operators": [{"name": "rmsnorm", "budget": {"evaluations": "ten"}}]})",
               "operators[0].budget.evaluations: expected an integer, got the string \"ten\"");
  EXPECT_ERROR(R"({"operators": [{"name": "rmsnorm", "budget": {"evaluations": -1}}]})",
               "operators[0].budget.evaluations: -1 is out of range");
  EXPECT_ERROR(R"({"operators": [{"name": "rmsnorm", "budget": {}}]})",
               "operators[0].budget: give evaluations, seconds or both");
  EXPECT_ERROR(R"({"operators": [{"name": "rmsnorm", "budget": {"seconds": 0}}]})",
               "operators[0].budget.seconds: 0 is out of range");
  EXPECT_ERROR(R"({"operators": [{"name": "rmsnorm", "strategy": "psychic"}]})",
               "operators[0].strategy: unknown strategy 'psychic' (known: ");
  EXPECT_ERROR(R"({"operators": [{"name": "rmsnorm", "proposer": "oracle"}]})",
               "operators[0].proposer: unknown proposer 'oracle' (search, llm, hybrid)");
  EXPECT_ERROR(R"({"operators": ["rmsnorm"], "gpus": "first"})",
               "gpus: \"first\" is not all, none or a list of GPU ordinals");
  EXPECT_ERROR(R"({"operators": ["rmsnorm"], "gpus": "0,0"})",
               "gpus: \"0,0\" is not all, none or a list of GPU ordinals");
  EXPECT_ERROR(R"({"operators": ["rmsnorm"], "gpus": 2})", "gpus: expected a string, got the number 2");
  EXPECT_ERROR(R"({"operators": ["rmsnorm"], "recheck": {"noise_threshold": 1.5}})",
               "recheck.noise_threshold: 1.5 is out of range");
  EXPECT_ERROR(R"({"operators": ["rmsnorm"], "recheck": {"top": 2, "noise": 1}})", "recheck.noise: unknown key");
  EXPECT_ERROR(R"({"operators": ["rmsnorm"], "require_gpu": "yes"})", "require_gpu: expected true or false");
}

TEST(JobFile, CliChecksTheFileAndExitsTwoOnMistakes) {
  TempDir dir;
  std::ofstream(dir / "good.json") << R"({"operators": ["rmsnorm"], "gpus": "none"})";
  auto ok = run_tessera("nightly --check --config " + (dir / "good.json"));
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("rmsnorm: re-check top 5"), std::string::npos) << ok.out;
  std::ofstream(dir / "bad.json") << R"({"operators": ["rmsnorm"], "top": 3})";
  auto bad = run_tessera("nightly --config " + (dir / "bad.json"));
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("bad.json: top: unknown key"), std::string::npos) << bad.out;
  EXPECT_EQ(run_tessera("nightly --config " + (dir / "missing.json")).code, 2);
  EXPECT_EQ(run_tessera("nightly").code, 2);
}
