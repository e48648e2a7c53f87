// tests/llm/prompt_test.cpp — the template renderer, the project's prompt files,
// and what reaches the model from compile logs: scrubbed of files outside the
// allowed include directories, and shortened.
#include "agent/llm/prompt.h"

#include <gtest/gtest.h>

#include "agent/llm/compile_log.h"

namespace tessera::llm {
namespace {

TEST(RenderTemplate, PlaceholdersAndSections) {
  std::map<std::string, std::string> v = {{"name", "rmsnorm"}, {"best", ""}, {"fails", "x"}};
  EXPECT_EQ(render_template("op {{name}} / {{ name }}", v), "op rmsnorm / rmsnorm");
  EXPECT_EQ(render_template("{{#best}}B{{/best}}{{^best}}none{{/best}}", v), "none");
  EXPECT_EQ(render_template("{{#fails}}F={{fails}}{{/fails}}", v), "F=x");
  EXPECT_EQ(render_template("a\n{{#best}}\nhidden\n{{/best}}\nb\n", v), "a\nb\n");
  // Values are not re-scanned: a source holding braces stays as it is.
  EXPECT_EQ(render_template("{{name}}", {{"name", "{{oops}}"}}), "{{oops}}");
  EXPECT_THROW(render_template("{{missing}}", v), LlmError);
  EXPECT_THROW(render_template("{{#best}} never closed", v), LlmError);
  EXPECT_THROW(render_template("{{/best}}", v), LlmError);
  EXPECT_THROW(render_template("{{name", v), LlmError);
}

PromptContext sample_context() {
  PromptContext c;
  c.operator_name = "rmsnorm";
  c.operator_math = "y = x / sqrt(mean(x^2) + eps) * w";
  c.spec_json = R"({"name": "rmsnorm", "symbols": ["M", "N"]})";
  c.reference_source = "extern \"C\" __global__ void rmsnorm_ref(...) { /* float64 */ }";
  c.tile_api = "tile::load(dst, src) ...";
  c.device = "NVIDIA H200 (sm_90a), 4.3 TB/s";
  c.arch = "sm_90a";
  c.proposals_wanted = 4;
  CandidateReport best;
  best.id = "c17";
  best.label = "rows THREADS=256";
  best.source = "extern \"C\" __global__ void rows() { /* BEST-SOURCE */ }";
  best.launch_json = R"({"launch": []})";
  best.timings = {{"4096x8192", 41.5, 83.0, 0.71}};
  best.speedup_geomean = 2.0;
  best.max_rel_error = 0.0012;
  best.roofline_fraction = 0.71;
  best.resource_report = "regs 40, spills 0, smem 1024 B";
  c.best = {best};
  c.allowed_log_prefixes = {"/work/main/targets/rmsnorm", "/work/main/targets/common"};
  c.failures = {{"c18", "rows-vec8", "compile",
                 "candidate.cu(12): error: identifier \"undeclared_thing\" is undefined\n"
                 "    y[i] = undeclared_thing;\n           ^\n\n"
                 "/etc/hostname(1): error: this declaration has no storage class or type specifier\n"
                 "  secret-host-name\n  ^\n\n2 errors detected in the compilation of \"candidate.cu\".\n"}};
  return c;
}

TEST(Prompts, ProjectTemplatesBuildACompleteFirstTurn) {
  PromptTemplates t = PromptTemplates::load(TESSERA_TEST_PROMPTS_DIR);
  PromptContext c = sample_context();
  Conversation conv = build_propose_conversation(t, c);
  ASSERT_EQ(conv.messages.size(), 1u);
  const std::string& user = conv.messages[0].content;
  EXPECT_NE(conv.system.find("sm_90a"), std::string::npos);
  EXPECT_NE(conv.system.find("\"params\""), std::string::npos);  // mode "either": both forms
  EXPECT_EQ(conv.system.find("<!--"), std::string::npos);        // file headers stripped
  for (const char* piece : {"rmsnorm", "mean(x^2)", "\"symbols\"", "rmsnorm_ref", "tile::load", "NVIDIA H200",
                            "BEST-SOURCE", "4096x8192", "41.50", "83.00", "2.00x", "0.71", "regs 40", "0.0012",
                            "Candidate c17", "undeclared_thing", "failed at compile", "Propose 4"})
    EXPECT_NE(user.find(piece), std::string::npos) << piece;
  EXPECT_EQ(user.find("{{"), std::string::npos);
  EXPECT_EQ(user.find("No candidate has been measured yet"), std::string::npos);
  // The log line quoting /etc/hostname, and the file content NVRTC printed under
  // it, never reach the model.
  EXPECT_EQ(user.find("/etc/hostname"), std::string::npos);
  EXPECT_EQ(user.find("secret-host-name"), std::string::npos);
  EXPECT_NE(user.find("[tessera:"), std::string::npos);

  c.best.clear();
  c.mode = "kernel";
  Conversation first = build_propose_conversation(t, c);
  EXPECT_NE(first.messages[0].content.find("No candidate has been measured yet"), std::string::npos);
  EXPECT_EQ(first.system.find("\"params\""), std::string::npos);

  std::string refine = render_refine_message(t, sample_context());
  EXPECT_NE(refine.find("BEST-SOURCE"), std::string::npos);
  EXPECT_EQ(refine.find("secret-host-name"), std::string::npos);

  std::string feedback = render_parse_feedback(t, {"the ```json block at line 9 is not valid JSON"});
  EXPECT_NE(feedback.find("- the ```json block at line 9"), std::string::npos);
}

TEST(Prompts, WhatAKernelPrintedReachesTheModelScrubbedAndShortened) {
  PromptTemplates t = PromptTemplates::load(TESSERA_TEST_PROMPTS_DIR);
  PromptContext c = sample_context();
  c.failures.clear();
  std::string flood;
  for (int i = 0; i < 200; ++i) flood += "{\"id\":" + std::to_string(i) + ",\"reply\":{\"ok\":true}}\n";
  c.failures.push_back({"c19", "rows-debug", "validate", "shape 7x1025 seed 3: y differs",
                        "debug: row 0 inv=0.5\x01\n/etc/hostname(1): error: leaked\n  secret-host-name\n" + flood});
  c.best[0].printed = "debug from the best: sum=42\n";
  const std::string user = build_propose_conversation(t, c).messages[0].content;
  EXPECT_NE(user.find("What the kernel printed"), std::string::npos);
  EXPECT_NE(user.find("debug: row 0 inv=0.5?"), std::string::npos);  // the control byte replaced
  EXPECT_NE(user.find("debug from the best: sum=42"), std::string::npos);
  EXPECT_EQ(user.find("secret-host-name"), std::string::npos);
  EXPECT_EQ(user.find("\"id\":199"), std::string::npos);  // shortened to the failure budget
  // A kernel that printed nothing gets no such section.
  c.failures[0].printed.clear();
  c.best[0].printed.clear();
  EXPECT_EQ(build_propose_conversation(t, c).messages[0].content.find("What the kernel printed"), std::string::npos);
}

TEST(Prompts, MissingTemplateIsAConfigError) {
  EXPECT_THROW(PromptTemplates::from_map({{"system", "x"}}), LlmError);
  EXPECT_THROW(PromptTemplates::load("/nonexistent/prompts"), LlmError);
}

TEST(ScrubCompileLog, KeepsAllowedDiagnosticsAndDropsOthersWithTheirContext) {
  std::vector<std::string> allowed = {"/t/rmsnorm", "/t/common/"};
  std::string log =
      "candidate.cu(3): error: expected a \";\"\n"
      "    int x = 1\n"
      "             ^\n"
      "\n"
      "/t/common/tile/mma.cuh(40): warning: variable \"y\" was declared but never referenced\n"
      "/etc/passwd(1): error: expected a declaration\n"
      "  root:x:0:0:root:/root:/bin/bash\n"
      "  ^\n"
      "\n"
      "/t/rmsnorm/../../../etc/shadow(1): error: bad\n"
      "  root:$6$hash\n"
      "/t/rmsnormX/evil.h(1): error: sibling folder with a shared prefix\n"
      "candidate.cu(1): catastrophic error: cannot open source file \"/home/me/.ssh/id_rsa\"\n"
      "In file included from /usr/include/stdio.h:1\n"
      "3 errors detected in the compilation of \"candidate.cu\".\n";
  std::string out = scrub_compile_log(log, allowed);
  EXPECT_NE(out.find("candidate.cu(3): error: expected a \";\""), std::string::npos);
  EXPECT_NE(out.find("    int x = 1"), std::string::npos);
  EXPECT_NE(out.find("/t/common/tile/mma.cuh(40)"), std::string::npos);
  EXPECT_NE(out.find("3 errors detected"), std::string::npos);
  for (const char* leak :
       {"/etc/passwd", "root:x", "/bin/bash", "etc/shadow", "$6$hash", "evil.h", "id_rsa", "/usr/include/stdio.h"})
    EXPECT_EQ(out.find(leak), std::string::npos) << leak << "\n" << out;
  EXPECT_NE(out.find("3 lines quoting a file outside"), std::string::npos);
}

TEST(ScrubCompileLog, PathRules) {
  std::vector<std::string> allowed = {"/t/common"};
  EXPECT_TRUE(log_path_allowed("candidate.cu", allowed));
  EXPECT_TRUE(log_path_allowed("tile/x.cuh", allowed));
  EXPECT_TRUE(log_path_allowed("/t/common/tile/x.cuh", allowed));
  EXPECT_FALSE(log_path_allowed("/t/commonx/a.h", allowed));
  EXPECT_FALSE(log_path_allowed("/t/common/../secret", allowed));
  EXPECT_FALSE(log_path_allowed("../secret", allowed));
  EXPECT_FALSE(log_path_allowed("~/secret", allowed));
  EXPECT_FALSE(log_path_allowed("/etc/hostname", allowed));
}

TEST(ShortenMessage, KeepsErrorLinesFirst) {
  std::string msg;
  for (int i = 0; i < 50; ++i) msg += "note " + std::to_string(i) + "\n";
  msg += "candidate.cu(7): error: the real problem\n  context\n";
  std::string s = shorten_message(msg, 5, 2000);
  EXPECT_NE(s.find("the real problem"), std::string::npos);
  EXPECT_NE(s.find("  context"), std::string::npos);
  EXPECT_NE(s.find("more lines"), std::string::npos);
  EXPECT_EQ(s.find("note 10"), std::string::npos);
  EXPECT_LE(shorten_message(std::string(5000, 'x'), 20, 100).size(), 130u);
}

}  // namespace
}  // namespace tessera::llm
