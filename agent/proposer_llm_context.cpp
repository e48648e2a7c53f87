// agent/proposer_llm_context.cpp — gathering the prompt's material: the operator
// folder (spec.json, reference), the tile library's header comments, and the
// store's view of the best candidates (source, plan, per-shape figures, compiler
// resources). Failure messages are passed raw; llm::render_failure scrubs and
// shortens them.
#include "agent/proposer_llm_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "codegen/compiler.h"
#include "codegen/render.h"
#include "evaluator/report.h"
#include "store/report_queries.h"
#include "store/store.h"

namespace tessera::agent {

namespace fs = std::filesystem;
using nlohmann::json;
namespace st = evaluator::status;

std::string candidate_ref(long long id) {
  return fmt::format("#{}", id);
}

std::string tile_api_summary() {
  fs::path dir = spec::targets_dir() / "common" / "tile";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".cuh" || e.path().extension() == ".h") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string out;
  for (auto& f : files) {
    std::string text = codegen::read_file(f.string()), comment;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(pos, end - pos);
      if (line.rfind("//", 0) != 0) break;
      comment += line + "\n";
      pos = end + 1;
    }
    if (!comment.empty()) out += fmt::format("`tile/{}`:\n```\n{}```\n\n", f.filename().string(), comment);
  }
  return out;
}

llm::StaticCheckOptions static_check_options(const spec::Operator& op) {
  llm::StaticCheckOptions opts;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(op.dir, ec)) {
    auto ext = e.path().extension();
    if (ext == ".cuh" || ext == ".h") opts.target_files.push_back(e.path().filename().string());
  }
  return opts;
}

llm::PromptContext base_context(const spec::Operator& op, const Loop& loop, int proposals, const std::string& mode) {
  llm::PromptContext c;
  c.operator_name = op.name;
  c.operator_math = op.description;
  c.spec_json = codegen::read_file((op.dir / "spec.json").string());
  if (!op.reference.source.empty()) c.reference_source = codegen::read_file(op.reference.source.string());
  if (!op.reference.python.empty()) {
    // An imported operator: the FlashInfer Trace definition, whose run tessera executes in float64.
    auto def = nlohmann::ordered_json::parse(codegen::read_file(op.reference.python.string()));
    std::string ref = def.value("reference", "");
    def.erase("reference");
    c.reference_source =
        "# The FlashInfer Trace definition this operator was imported from (its `run`, below, is\n"
        "# executed by tessera in float64 on the judge's inputs: positional, in the order of inputs)\n"
        "# " +
        def.dump() + "\n\n" + ref;
  }
  c.tile_api = tile_api_summary();
  c.device = loop.device_summary();
  c.arch = loop.arch();
  c.proposals_wanted = proposals;
  c.mode = mode;
  c.allowed_log_prefixes = {op.dir.string(), (spec::targets_dir() / "common").string(),
                            codegen::cuda_include_dir().string()};
  return c;
}

// Whether a stored plan launches as template t does now (an unreadable one does not).
static bool launches_as(const std::string& plan, const spec::Operator& op, const spec::Program& t) {
  try {
    return spec::same_launches(spec::program_from_json(json::parse(plan), op.dir), t);
  } catch (std::exception&) {
    return false;
  }
}

llm::CandidateReport candidate_report(store::Store& db, const spec::Operator& op, long long id) {
  llm::CandidateReport r;
  r.id = candidate_ref(id);
  auto c = db.candidate(id);
  if (!c) return r;
  r.label = c->template_name;
  json params = json::parse(c->params_json.empty() ? "{}" : c->params_json, nullptr, false);
  if (params.is_object())
    for (auto& [k, v] : params.items()) r.label += fmt::format(" {}={}", k, v.dump());
  r.source = db.source(c->source_hash).value_or("");
  const spec::Program* t = op.find_template(c->template_name);
  // a proposed program's plan, or a template's stored plan where the template's has changed since
  if (!c->plan_json.empty() && (!t || !launches_as(c->plan_json, op, *t))) {
    r.launch_json = c->plan_json;
  } else if (t) {
    json plan = spec::program_to_json(*t);
    plan.erase("params");  // the values are #defined at the top of the source
    plan.erase("constraints");
    r.launch_json = plan.dump(1);
  }
  if (auto comp = db.last_compile(id))
    r.resource_report = fmt::format("{} registers, {} bytes spilled, {} bytes static shared memory", comp->registers,
                                    comp->spill_bytes, comp->smem);
  auto evals = db.evaluations(id);
  if (!evals.empty()) r.printed = evals.back().printed;
  if (!evals.empty() && evals.back().status == st::ok) {
    auto& e = evals.back();
    r.speedup_geomean = e.geomean_speedup;
    r.max_rel_error = e.max_rel_l2;
    if (e.roofline_fraction > 0) r.roofline_fraction = e.roofline_fraction;
    for (auto& s : e.shapes) {
      llm::ShapeTiming t;
      t.shape = s.shape;
      t.time_us = s.cand_median_ms * 1e3;
      if (s.base_median_ms > 0) t.baseline_us = s.base_median_ms * 1e3;
      if (s.roofline_fraction > 0) t.roofline_fraction = s.roofline_fraction;
      r.timings.push_back(t);
    }
  }
  return r;
}

std::vector<llm::CandidateReport> best_reports(store::Store& db, const spec::Operator& op, const Loop& loop, size_t n) {
  std::vector<long long> ids;
  if (loop.timing()) {
    // ranked on one GPU model, the latest evaluation's (this run's GPU once it has judged one)
    const std::string model = store::leaderboard_device(db, op.name, "", nullptr);
    for (auto& row : db.leaderboard(op.name, st::ok, static_cast<int>(n) * 4, model))
      if (auto c = db.candidate(row.candidate_id); c && c->arch == loop.arch()) ids.push_back(row.candidate_id);
  } else {
    auto rows = db.leaderboard(op.name, st::compiled, 100000);
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.candidate_id > b.candidate_id; });
    for (auto& row : rows)
      if (auto c = db.candidate(row.candidate_id); c && c->arch == loop.arch()) ids.push_back(row.candidate_id);
  }
  if (ids.size() > n) ids.resize(n);
  std::vector<llm::CandidateReport> out;
  for (long long id : ids) out.push_back(candidate_report(db, op, id));
  return out;
}

std::string failure_stage(const std::string& s) {
  if (s == st::rejected_static) return "static_check";
  if (s == st::compile_error || s == st::resource_limit) return "compile";
  if (s == st::crashed) return "crash";
  if (s == st::timeout) return "timeout";
  if (s == st::launch_error) return "launch";
  if (s == st::not_applicable) return "arch";
  return "validate";  // wrong_result, race, out_of_bounds, modified_input, impossible_speed
}

bool is_failure(const std::string& s) {
  return s != st::ok && s != st::compiled;
}

std::optional<long long> parent_named_in(const std::string& text, const std::set<long long>& shown,
                                         const std::map<long long, long long>& recorded) {
  static const std::regex ref(R"(#(\d{1,12})\b)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), ref); it != std::sregex_iterator(); ++it) {
    long long id = std::stoll((*it)[1].str());
    if (auto r = recorded.find(id); r != recorded.end()) return r->second;
    if (recorded.empty() && shown.count(id)) return id;
  }
  // A replay whose ids could not all be translated (an older record file, or a
  // candidate the recording's search proposed): the ids as they stand.
  for (auto it = std::sregex_iterator(text.begin(), text.end(), ref); it != std::sregex_iterator(); ++it) {
    long long id = std::stoll((*it)[1].str());
    if (shown.count(id)) return id;
  }
  return std::nullopt;
}

std::string safe_name(const std::string& name, const std::string& fallback) {
  std::string out;
  for (char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-')
      out += ch;
    else if (!out.empty() && out.back() != '-')
      out += '-';
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? fallback : out;
}

}  // namespace tessera::agent
