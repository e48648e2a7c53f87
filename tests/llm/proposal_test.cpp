// tests/llm/proposal_test.cpp — reading answers into proposals: kernels with
// launch plans, templates with parameter spaces, several proposals at once, and
// every malformed shape an answer can take (which must yield messages, not throws).
#include "agent/llm/proposal.h"

#include <gtest/gtest.h>

#include <random>

#include "answers.h"

namespace tessera::llm {
namespace {

TEST(ParseProposals, KernelWithPlanIsNormalized) {
  ParseResult r = parse_proposals(testing::kGoodKernelAnswer);
  ASSERT_TRUE(r.ok()) << r.errors.front();
  ASSERT_EQ(r.proposals.size(), 1u);
  const Proposal& p = r.proposals[0];
  EXPECT_EQ(p.kind, ProposalKind::Kernel);
  EXPECT_EQ(p.name, "rows-shuffle");
  EXPECT_NE(p.rationale.find("warp-shuffle"), std::string::npos);
  EXPECT_NE(p.source.find("extern \"C\" __global__ void rmsnorm_rows"), std::string::npos);
  EXPECT_EQ(p.source.find("```"), std::string::npos);
  ASSERT_EQ(p.launch.size(), 1u);
  EXPECT_EQ(p.launch[0]["grid"], nlohmann::json({"M", "1", "1"}));     // padded to 3
  EXPECT_EQ(p.launch[0]["block"], nlohmann::json({"256", "1", "1"}));  // ints become text
  EXPECT_EQ(p.launch[0]["smem"], "0");
  EXPECT_EQ(p.launch[0]["args"].size(), 6u);
  EXPECT_TRUE(p.scratch.empty());
  EXPECT_FALSE(p.plan_json().contains("params"));
}

// A launch argument may be a tensor map over a tensor (tmap:NAME:BOX:SWIZZLE, built by the
// evaluator); its form is checked here, what it names later against the operator.
TEST(ParseProposals, TensorMapArgumentsKeepTheirForm) {
  const std::string src = "```cuda\nextern \"C\" __global__ void k(float* y, long long N) {}\n```\n";
  ParseResult r = parse_proposals(src +
                                  "```json\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], "
                                  "\"args\": [\"tmap:x:64x1x32:128\", \"y\"]}]}\n```\n");
  ASSERT_TRUE(r.ok()) << r.errors.front();
  EXPECT_EQ(r.proposals.at(0).launch[0]["args"][0], "tmap:x:64x1x32:128");
  for (const char* bad : {"tmap:x:64:96", "tmap:x;y:64:0", "tmap:x:64x1x1x1x1x1:0", "tmap:x:64"}) {
    ParseResult b = parse_proposals(src +
                                    "```json\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], "
                                    "\"args\": [\"" +
                                    std::string(bad) + "\"]}]}\n```\n");
    EXPECT_TRUE(b.proposals.empty()) << bad;
    ASSERT_FALSE(b.errors.empty()) << bad;
    EXPECT_NE(b.errors.front().find("nor a tensor map"), std::string::npos) << b.errors.front();
  }
}

TEST(ParseProposals, TemplateWithParameterSpace) {
  ParseResult r = parse_proposals(testing::kTemplateAnswer);
  ASSERT_TRUE(r.ok()) << r.errors.front();
  const Proposal& p = r.proposals.at(0);
  EXPECT_EQ(p.kind, ProposalKind::Template);
  EXPECT_EQ(p.params.at("THREADS"), (std::vector<long long>{128, 256}));
  EXPECT_EQ(p.params.at("VEC"), (std::vector<long long>{1, 2, 4}));
  EXPECT_EQ(p.constraints, std::vector<std::string>{"THREADS * VEC <= 1024"});
  EXPECT_EQ(p.arch, std::vector<std::string>{"sm_90a"});
  ASSERT_EQ(p.scratch.size(), 1u);
  EXPECT_EQ(p.scratch[0]["dtype"], "f32");
  nlohmann::json plan = p.plan_json();
  EXPECT_EQ(plan["params"]["VEC"], nlohmann::json({1, 2, 4}));
}

TEST(ParseProposals, SeveralProposalsAndABareArrayPlan) {
  ParseResult r = parse_proposals(testing::kGoodKernelAnswer + "\nAnd another:\n" + testing::kWrongKernelAnswer +
                                  testing::kTemplateAnswer);
  ASSERT_TRUE(r.ok()) << r.errors.front();
  ASSERT_EQ(r.proposals.size(), 3u);
  EXPECT_EQ(r.proposals[1].name, "proposal-2");
  EXPECT_EQ(r.proposals[1].kernel_names(), std::vector<std::string>{"rmsnorm_wrong"});
  EXPECT_EQ(r.proposals[2].kind, ProposalKind::Template);

  ParseOptions two;
  two.max_proposals = 2;
  ParseResult capped =
      parse_proposals(testing::kGoodKernelAnswer + testing::kWrongKernelAnswer + testing::kTemplateAnswer, two);
  EXPECT_EQ(capped.proposals.size(), 2u);
  ASSERT_EQ(capped.errors.size(), 1u);
  EXPECT_NE(capped.errors[0].find("first 2"), std::string::npos);
}

TEST(ParseProposals, OneBadProposalDoesNotSinkTheOthers) {
  std::string bad =
      "```cuda\nextern \"C\" __global__ void k(float* y) {}\n```\n```json\n"
      "{\"launch\": [{\"kernel\": \"other\", \"grid\": [1], \"block\": [1], "
      "\"args\": [\"y\"]}]}\n```\n";
  ParseResult r = parse_proposals(bad + testing::kGoodKernelAnswer);
  ASSERT_EQ(r.proposals.size(), 1u);
  EXPECT_EQ(r.proposals[0].name, "rows-shuffle");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("proposal 1"), std::string::npos);
  EXPECT_NE(r.errors[0].find("'other'"), std::string::npos);
  EXPECT_FALSE(r.ok());
}

struct Malformed {
  std::string answer;
  std::string expect;  // a fragment of the error message
};

class ParseMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(ParseMalformed, GivesAMessageForTheModel) {
  ParseResult r = parse_proposals(GetParam().answer);
  EXPECT_TRUE(r.proposals.empty());
  ASSERT_FALSE(r.errors.empty());
  std::string all;
  for (const auto& e : r.errors) all += e + "\n";
  EXPECT_NE(all.find(GetParam().expect), std::string::npos) << all;
}

const std::string kSrc = "```cuda\nextern \"C\" __global__ void k(float* y, long long N) {}\n```\n";

INSTANTIATE_TEST_SUITE_P(
    Answers, ParseMalformed,
    ::testing::Values(Malformed{"", "empty"}, Malformed{"  \n\t\n", "empty"},
                      Malformed{"Sorry, I cannot help with that.", "no ```cuda block"},
                      Malformed{kSrc, "no ```json launch plan"},
                      Malformed{"```json\n{\"launch\": []}\n```\n", "no ```cuda block before it"},
                      Malformed{kSrc + "```json\n{\"launch\": [{\"kernel\": \"k\",}]}\n```\n", "not valid JSON"},
                      Malformed{kSrc + "```json\n{\"launch\": []}\n```\n", "non-empty array"},
                      Malformed{kSrc + "```json\n\"k\"\n```\n", "must be an object"},
                      Malformed{kSrc + "```json\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1,2,3,4], "
                                       "\"block\": [1], \"args\": []}]}\n```\n",
                                "1 to 3"},
                      Malformed{
                          kSrc + "```json\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1]}]}\n```\n",
                          "no \"args\""},
                      Malformed{kSrc + "```json\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], "
                                       "\"args\": [\"y; system()\"]}]}\n```\n",
                                "not a tensor"},
                      Malformed{kSrc + "```json\n{\"params\": {\"T\": [\"big\"]}, \"launch\": [{\"kernel\": \"k\", "
                                       "\"grid\": [1], \"block\": [\"T\"], \"args\": [\"y\"]}]}\n```\n",
                                "must list integers"},
                      Malformed{kSrc + "```json\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], "
                                       "\"args\": [\"y\"]}], \"scratch\": [{\"name\": \"t\", \"dtype\": \"f128\", "
                                       "\"size\": 4}]}\n```\n",
                                "dtype"},
                      Malformed{"```cuda\n__global__ void k(float* y) {}\n```\n```json\n[{\"kernel\": \"k\", "
                                "\"grid\": [1], \"block\": [1], \"args\": [\"y\"]}]\n```\n",
                                "extern \"C\""},
                      Malformed{"```cuda\nextern \"C\" __global__ void k(float* y) {\n  y[0] = 1;\n", "ended inside"}));

TEST(ParseProposals, TruncatedAnswerMentionsTheTokenLimit) {
  ParseOptions o;
  o.finish_reason = "length";
  ParseResult r = parse_proposals("```cuda\nextern \"C\" __global__ void k(", o);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("token limit"), std::string::npos);
}

TEST(ParseProposals, NeverThrowsOnRandomInput) {
  std::mt19937 rng(1234);
  const std::vector<std::string> pieces = {"```",     "```cuda\n",  "```json\n",
                                           "{",       "}",          "[",
                                           "]",       "\"launch\"", ":",
                                           ",",       "\n",         "extern \"C\" __global__",
                                           "void k(", ")",          "\"kernel\": \"k\"",
                                           "\xff",    "\0",         "~~~"};
  for (int round = 0; round < 2000; ++round) {
    std::string answer;
    int n = int(rng() % 40);
    for (int i = 0; i < n; ++i) answer += pieces[rng() % pieces.size()];
    ParseResult r;
    EXPECT_NO_THROW(r = parse_proposals(answer));
    EXPECT_TRUE(!r.proposals.empty() || !r.errors.empty()) << answer;
  }
}

}  // namespace
}  // namespace tessera::llm
