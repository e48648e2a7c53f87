// agent/llm/prompt.cpp — loading prompt templates, the {{placeholder}} renderer,
// and building the propose / refine / parse-feedback messages from a PromptContext.
#include "agent/llm/prompt.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/llm/compile_log.h"
#include "agent/llm/redact.h"

#ifndef TESSERA_PROMPTS_DIR
#define TESSERA_PROMPTS_DIR "agent/prompts"
#endif

namespace tessera::llm {

namespace {

const char* const kRequired[] = {"system", "propose", "candidate", "failure", "parse_error", "refine"};

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// A template file starts with an HTML comment saying what it is for; the model
// does not need to read it.
std::string strip_header_comment(std::string text) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || text.compare(start, 4, "<!--") != 0) return text;
  size_t end = text.find("-->", start);
  if (end == std::string::npos) return text;
  end += 3;
  while (end < text.size() && (text[end] == '\n' || text[end] == '\r')) ++end;
  return text.substr(end);
}

const std::string& lookup(const std::map<std::string, std::string>& values, const std::string& name) {
  auto it = values.find(name);
  if (it == values.end())
    throw LlmError(LlmErrorKind::Config,
                   fmt::format("prompt template uses {{{{{}}}}}, which tessera does not provide", name));
  return it->second;
}

std::string number(std::optional<double> v, const char* format = "{:.3g}") {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string();
}

std::string timings_table(const std::vector<ShapeTiming>& timings) {
  if (timings.empty()) return {};
  std::string t =
      "| shape | time (us) | baseline (us) | speedup | roofline fraction |\n"
      "|---|---|---|---|---|\n";
  for (const auto& s : timings) {
    std::string speedup = s.baseline_us && s.time_us > 0 ? fmt::format("{:.2f}x", *s.baseline_us / s.time_us) : "";
    t += fmt::format("| {} | {:.2f} | {} | {} | {} |\n", s.shape, s.time_us, number(s.baseline_us, "{:.2f}"), speedup,
                     number(s.roofline_fraction, "{:.2f}"));
  }
  return t;
}

std::map<std::string, std::string> common_values(const PromptTemplates& templates, const PromptContext& c) {
  std::string best, failures;
  for (const auto& cand : c.best) best += render_candidate(templates, cand, c);
  for (const auto& f : c.failures) failures += render_failure(templates, f, c);
  bool kernel = c.mode != "template", tmpl = c.mode != "kernel";
  return {{"operator_name", c.operator_name},
          {"operator_math", c.operator_math},
          {"spec_json", c.spec_json},
          {"reference_source", truncate_text(c.reference_source, c.max_source_chars)},
          {"tile_api", c.tile_api},
          {"device", c.device},
          {"arch", c.arch},
          {"proposals_wanted", std::to_string(c.proposals_wanted)},
          {"mode", c.mode},
          {"allow_kernel", kernel ? "yes" : ""},
          {"allow_template", tmpl ? "yes" : ""},
          {"best_candidates", best},
          {"failures", failures}};
}

}  // namespace

std::string render_template(std::string_view tmpl, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t i = 0;
  while (i <= tmpl.size()) {
    size_t open = tmpl.find("{{", i);
    if (open == std::string_view::npos) {
      out.append(tmpl.substr(i));
      break;
    }
    out.append(tmpl.substr(i, open - i));
    size_t close = tmpl.find("}}", open + 2);
    if (close == std::string_view::npos) throw LlmError(LlmErrorKind::Config, "prompt template has an unclosed '{{'");
    std::string tag = trim(tmpl.substr(open + 2, close - open - 2));
    i = close + 2;
    if (!tag.empty() && (tag[0] == '#' || tag[0] == '^')) {
      std::string name = trim(std::string_view(tag).substr(1));
      std::string end_tag = "{{/" + name + "}}";
      size_t end = tmpl.find(end_tag, i);
      if (end == std::string_view::npos)
        throw LlmError(LlmErrorKind::Config, fmt::format("prompt template section {{{{{}}}}} is not closed", tag));
      if (i < tmpl.size() && tmpl[i] == '\n') ++i;  // the tag's own line
      bool present = !trim(lookup(values, name)).empty();
      if (present == (tag[0] == '#')) out += render_template(tmpl.substr(i, end - i), values);
      bool tag_on_own_line = end == 0 || tmpl[end - 1] == '\n';
      i = end + end_tag.size();
      if (tag_on_own_line && i < tmpl.size() && tmpl[i] == '\n') ++i;
    } else if (!tag.empty() && tag[0] == '/') {
      throw LlmError(LlmErrorKind::Config, fmt::format("prompt template closes {{{{{}}}}} without opening it", tag));
    } else {
      out += lookup(values, tag);
    }
  }
  return out;
}

std::string PromptTemplates::default_prompts_dir() {
  if (const char* dir = std::getenv("TESSERA_PROMPTS_DIR"); dir && *dir) return dir;
  return TESSERA_PROMPTS_DIR;
}

PromptTemplates PromptTemplates::from_map(std::map<std::string, std::string> texts) {
  for (const char* name : kRequired)
    if (!texts.count(name))
      throw LlmError(LlmErrorKind::Config, fmt::format("prompt template '{}.md' is missing", name));
  PromptTemplates t;
  for (auto& [name, text] : texts) t.texts_[name] = strip_header_comment(std::move(text));
  return t;
}

PromptTemplates PromptTemplates::load(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw LlmError(LlmErrorKind::Config,
                   fmt::format("prompt folder '{}' does not exist (set TESSERA_PROMPTS_DIR)", dir));
  std::map<std::string, std::string> texts;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".md") continue;
    std::ifstream in(entry.path());
    std::stringstream s;
    s << in.rdbuf();
    texts[entry.path().stem().string()] = s.str();
  }
  try {
    return from_map(std::move(texts));
  } catch (const LlmError& e) {
    throw LlmError(LlmErrorKind::Config, fmt::format("{} (in '{}')", e.what(), dir));
  }
}

const std::string& PromptTemplates::get(const std::string& name) const {
  auto it = texts_.find(name);
  if (it == texts_.end()) throw LlmError(LlmErrorKind::Config, fmt::format("prompt template '{}.md' is missing", name));
  return it->second;
}

// What a kernel printed, as a model may see it: scrubbed like a compile log (the
// worker's output also carries the driver's messages), control bytes replaced, and
// shortened to the failure budget.
static std::string printed_for_model(const std::string& printed, const PromptContext& c) {
  std::string text;
  for (char ch : printed) text += (ch >= 32 && ch < 127) || ch == '\n' || ch == '\t' ? ch : '?';
  text = scrub_compile_log(text, c.allowed_log_prefixes);
  return shorten_message(text, c.max_failure_lines, c.max_failure_chars);
}

std::string render_candidate(const PromptTemplates& templates, const CandidateReport& cand, const PromptContext& c) {
  return render_template(templates.get("candidate"),
                         {{"id", cand.id},
                          {"label", cand.label},
                          {"source", truncate_text(cand.source, c.max_source_chars)},
                          {"launch_json", cand.launch_json},
                          {"timings", timings_table(cand.timings)},
                          {"speedup", cand.speedup_geomean ? fmt::format("{:.3f}x", *cand.speedup_geomean) : ""},
                          {"max_rel_error", number(cand.max_rel_error)},
                          {"roofline_fraction", number(cand.roofline_fraction, "{:.2f}")},
                          {"resource_report", cand.resource_report},
                          {"printed", printed_for_model(cand.printed, c)}});
}

std::string render_failure(const PromptTemplates& templates, const FailureReport& f, const PromptContext& c) {
  std::string message = scrub_compile_log(f.message, c.allowed_log_prefixes);
  message = shorten_message(message, c.max_failure_lines, c.max_failure_chars);
  return render_template(templates.get("failure"), {{"id", f.id},
                                                    {"label", f.label},
                                                    {"stage", f.stage},
                                                    {"message", message},
                                                    {"printed", printed_for_model(f.printed, c)}});
}

Conversation build_propose_conversation(const PromptTemplates& templates, const PromptContext& c) {
  auto values = common_values(templates, c);
  Conversation conv;
  conv.system = render_template(templates.get("system"), values);
  conv.messages.push_back({Role::User, render_template(templates.get("propose"), values)});
  return conv;
}

std::string render_refine_message(const PromptTemplates& templates, const PromptContext& c) {
  return render_template(templates.get("refine"), common_values(templates, c));
}

std::string render_parse_feedback(const PromptTemplates& templates, const std::vector<std::string>& errors) {
  std::string list;
  for (const auto& e : errors) list += "- " + shorten_message(e, 8, 600) + "\n";
  return render_template(templates.get("parse_error"), {{"errors", list}});
}

}  // namespace tessera::llm
