// agent/llm/prompt.h — turning what tessera knows about an operator into the
// conversation a model sees. The words live in agent/prompts/*.md (templates with
// {{name}} placeholders and {{#name}}...{{/name}} / {{^name}}...{{/name}} sections);
// this file holds the context the agent fills in and the renderer. Every compiler
// or validation message passes through scrub_compile_log and shorten_message first.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/llm/client.h"

namespace tessera::llm {

struct ShapeTiming {
  std::string shape;                        // "4096x8192"
  double time_us = 0;                       // candidate median
  std::optional<double> baseline_us;        // baseline median, same worker
  std::optional<double> roofline_fraction;  // floor / time, in (0, 1]
};

// One of the best candidates so far, as the model should see it.
struct CandidateReport {
  std::string id;     // store id, so the model can name a parent
  std::string label;  // "rows THREADS=256 VEC=8" or the proposal's name
  std::string source;
  std::string launch_json;  // the launch plan (and scratch) as JSON text
  std::vector<ShapeTiming> timings;
  std::optional<double> speedup_geomean;
  std::optional<double> max_rel_error;
  std::optional<double> roofline_fraction;  // geometric mean over the suite
  std::string resource_report;              // "regs 64, spills 0, smem 16384 B, local 0 B"
  std::string printed;  // what the kernel printed while judged (device printf); scrubbed and shortened when rendered
};

// A recent failure: compile error, static-check violation, wrong result, crash,
// timeout, or a response that did not parse.
struct FailureReport {
  std::string id;
  std::string label;
  std::string stage;    // "static_check", "compile", "validate", "crash", "timeout", "parse"
  std::string message;  // full text; scrubbed and shortened when rendered
  std::string printed;  // what the kernel printed while judged (device printf); scrubbed and shortened when rendered
};

struct PromptContext {
  std::string operator_name;
  std::string operator_math;  // the math in prose/pseudo-code (OPERATORS.md excerpt)
  std::string spec_json;      // targets/<op>/spec.json
  std::string reference_source;
  std::string tile_api;  // the tile library's API summary
  std::string device;    // "NVIDIA H200 (sm_90a), 132 SMs, 4.3 TB/s, 731 TFLOP/s"
  std::string arch;      // "sm_90a"
  std::vector<CandidateReport> best;
  std::vector<FailureReport> failures;
  int proposals_wanted = 3;
  std::string mode = "either";  // "kernel", "template" or "either"
  // Absolute directories a compile log may quote (see scrub_compile_log).
  std::vector<std::string> allowed_log_prefixes;
  size_t max_failure_lines = 20;
  size_t max_failure_chars = 1500;
  size_t max_source_chars = 30000;
};

// The template files of a prompts folder, by name without ".md".
class PromptTemplates {
 public:
  // Reads every *.md of `dir`. Throws LlmError(Config) when the folder is missing
  // or lacks one of: system, propose, candidate, failure, parse_error, refine.
  static PromptTemplates load(const std::string& dir = default_prompts_dir());
  static PromptTemplates from_map(std::map<std::string, std::string> texts);
  // $TESSERA_PROMPTS_DIR, else the source tree's agent/prompts.
  static std::string default_prompts_dir();

  const std::string& get(const std::string& name) const;  // throws LlmError(Config)

 private:
  std::map<std::string, std::string> texts_;
};

// Substitutes {{name}}; {{#name}}X{{/name}} keeps X when the value is non-empty,
// {{^name}}X{{/name}} when it is empty. Values are not re-scanned, so a kernel
// source holding "{{" is safe. Throws LlmError(Config) for an unknown placeholder
// or an unclosed section.
std::string render_template(std::string_view tmpl, const std::map<std::string, std::string>& values);

// The first turn: system text + one user message asking for proposals.
Conversation build_propose_conversation(const PromptTemplates& templates, const PromptContext& context);
// A later turn's user message: what became of the previous proposals (the current
// best and the new failures), asking for improved proposals.
std::string render_refine_message(const PromptTemplates& templates, const PromptContext& context);
// The user message sent after a reply that did not parse.
std::string render_parse_feedback(const PromptTemplates& templates, const std::vector<std::string>& errors);

// The pieces, exposed for tests and for `tessera show`.
std::string render_candidate(const PromptTemplates& templates, const CandidateReport& candidate,
                             const PromptContext& context);
std::string render_failure(const PromptTemplates& templates, const FailureReport& failure,
                           const PromptContext& context);

}  // namespace tessera::llm
