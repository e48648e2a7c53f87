// agent/proposer_llm.cpp — the LLM proposer's turn loop. A turn: ask the model
// (system + the opening prompt + the previous answer and the feedback on it), parse
// the answer, and for each proposal check its plan and source, write the source
// next to the database, and have the loop compile and judge it (a template is tuned
// by the search instead). The feedback for the next turn is the current best and
// the new failures (refine.md), or the reasons an answer could not be read
// (parse_error.md). Failed calls and unusable answers are recorded and the run goes
// on, up to a limit of consecutive ones.
#include "agent/proposer_llm.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "agent/llm/proposal.h"
#include "agent/llm/sanitize.h"
#include "agent/llm_session.h"
#include "agent/proposer_llm_context.h"
#include "codegen/render.h"
#include "evaluator/report.h"
#include "store/store.h"

namespace tessera::agent {

namespace fs = std::filesystem;
using nlohmann::json;
namespace st = evaluator::status;

namespace {
constexpr int kMaxConsecutiveBadTurns = 4;  // failed calls or unusable answers in a row
constexpr size_t kMaxFailuresShown = 6;
constexpr size_t kBestShown = 3;

bool fatal(llm::LlmErrorKind k) {
  return k == llm::LlmErrorKind::BudgetExceeded || k == llm::LlmErrorKind::ReplayExhausted ||
         k == llm::LlmErrorKind::Config || k == llm::LlmErrorKind::MissingKey;
}

// Statically checks a proposal's source and builds its program from its plan into *prog;
// returns why it is rejected (the violations, then the plan's error), empty when it is not.
std::string check_proposal(const llm::Proposal& p, const json& plan, const std::string& name, const spec::Operator& op,
                           const llm::StaticCheckOptions& check_options, spec::Program* prog) {
  auto violations = llm::check_source(p.source, check_options);
  std::string plan_error;
  try {
    json pj = plan;
    pj["name"] = name;
    *prog = spec::program_from_json(pj, op.dir);
    spec::validate_program(op, *prog, name);
  } catch (const std::exception& e) {
    plan_error = e.what();
  }
  if (violations.empty() && plan_error.empty()) return "";
  std::string msg = violations.empty() ? "" : llm::format_violations(violations);
  if (!plan_error.empty()) msg += (msg.empty() ? "" : "\n") + ("launch plan: " + plan_error);
  return msg;
}

// The candidate ids a prompt names: its best ones and its failures'.
std::set<long long> shown_ids(const llm::PromptContext& ctx) {
  std::set<long long> ids;
  for (auto& c : ctx.best) ids.insert(std::stoll(c.id.substr(1)));
  for (auto& f : ctx.failures)
    if (!f.id.empty()) ids.insert(std::stoll(f.id.substr(1)));
  return ids;
}

// The id of the best candidate a prompt shows, if it shows one.
std::optional<long long> best_shown_id(const llm::PromptContext& ctx) {
  return ctx.best.empty() ? std::nullopt : std::optional<long long>(std::stoll(ctx.best[0].id.substr(1)));
}

// How an answer is parsed: up to twice the proposals asked for, knowing why the reply ended.
llm::ParseOptions parse_options(int proposals_per_turn, const std::string& finish_reason) {
  llm::ParseOptions po;
  po.max_proposals = static_cast<size_t>(std::max(1, proposals_per_turn * 2));
  po.finish_reason = finish_reason;
  return po;
}

// The progress line of a turn with proposals: how many, and how many parts were unreadable.
std::string turn_summary(int number, const llm::ParseResult& parsed) {
  return fmt::format("llm: turn {}: {} proposal{}{}\n", number, parsed.proposals.size(),
                     parsed.proposals.size() == 1 ? "" : "s",
                     parsed.errors.empty() ? "" : fmt::format(", {} unreadable", parsed.errors.size()));
}

// Adds the unreadable parts of turn `number`'s answer, if any, to the failures as one.
void add_parse_failure(int number, const std::vector<std::string>& errors, std::vector<llm::FailureReport>* failures) {
  if (errors.empty()) return;
  std::string all;
  for (auto& e : errors) all += e + "\n";
  failures->push_back({"", fmt::format("part of your answer of turn {}", number), "parse", all});
}

// Puts a turn's failures before the older ones in *recent, keeping the most shown.
void remember_failures(const std::vector<llm::FailureReport>& failures, std::vector<llm::FailureReport>* recent) {
  recent->insert(recent->begin(), failures.begin(), failures.end());
  if (recent->size() > kMaxFailuresShown) recent->resize(kMaxFailuresShown);
}

// Writes a proposal's text under dir, named by its content hash (once); returns the file.
fs::path write_proposal(const std::string& dir, const std::string& text) {
  fs::path file = fs::path(dir) / (codegen::content_hash(text) + ".cu");
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (!fs::exists(file)) std::ofstream(file, std::ios::binary) << text;
  return file;
}
}  // namespace

struct LlmProposer::Turn {
  int number = 0;
  long long exchange_id = 0;
  llm::ParseResult parsed;
  std::set<long long> shown;                // candidate ids the prompt named
  std::optional<long long> default_parent;  // the best shown: what a refinement starts from
  std::vector<llm::FailureReport> failures;
  json outcome = json::array();
};

LlmProposer::LlmProposer(std::unique_ptr<LlmSession> session, LlmOptions options, std::string proposals_dir)
    : session_(std::move(session)), options_(std::move(options)), proposals_dir_(std::move(proposals_dir)) {}

LlmProposer::~LlmProposer() = default;

std::unique_ptr<LlmProposer> LlmProposer::create(const LlmOptions& options, const std::string& db_path,
                                                 std::string* err) {
  auto session = LlmSession::create(options, err);
  if (!session) return nullptr;
  fs::path dir = fs::absolute(fs::path(db_path)).parent_path() / "proposals";
  return std::unique_ptr<LlmProposer>(new LlmProposer(std::move(session), options, dir.string()));
}

std::string LlmProposer::describe() const {
  return session_->describe();
}

std::string LlmProposer::summary() const {
  return fmt::format("LLM ({}): {}; {} kernel{} and {} template{} proposed, {} unusable answer{}, {} failed call{}{}",
                     session_->describe(), session_->usage(), kernels_, kernels_ == 1 ? "" : "s", templates_,
                     templates_ == 1 ? "" : "s", unusable_answers_, unusable_answers_ == 1 ? "" : "s", failed_calls_,
                     failed_calls_ == 1 ? "" : "s", stop_reason_.empty() ? "" : "; stopped: " + stop_reason_);
}

void LlmProposer::evaluate_proposals(Loop& loop, const spec::Operator& op, Turn& turn, size_t budget_left) {
  size_t used = 0;
  auto check_options = static_check_options(op);
  for (size_t k = 0; k < turn.parsed.proposals.size() && used < budget_left && loop.seconds_left() > 0; ++k) {
    const llm::Proposal& p = turn.parsed.proposals[k];
    bool is_template = p.kind == llm::ProposalKind::Template;
    (is_template ? templates_ : kernels_)++;
    std::string name = safe_name(p.name, fmt::format("turn{}-{}", turn.number, k + 1));
    Lineage lin;
    lin.origin = is_template ? "llm-template:" + loop.strategy() : "llm";
    lin.parent = parent_named_in(p.rationale, turn.shown, recorded_ids_);
    if (!lin.parent) lin.parent = turn.default_parent;
    if (turn.exchange_id > 0) lin.exchange_id = turn.exchange_id;
    json plan = p.plan_json();
    // The plan travels in the file's first line, so that one source with two
    // plans is two candidates (and the same pair proposed again is one);
    // #line keeps the compiler's line numbers the model's.
    std::string text = fmt::format("// tessera: LLM proposal, launch plan {}\n#line 1\n",
                                   plan.dump(-1, ' ', false, json::error_handler_t::replace)) +
                       p.source;
    json rec = {{"name", name},
                {"kind", is_template ? "template" : "kernel"},
                {"parent", lin.parent ? json(*lin.parent) : json()}};
    auto fail = [&](const Judged& j, const std::string& label) {
      turn.failures.push_back({candidate_ref(j.id), label, failure_stage(j.status), j.message, j.printed});
    };
    spec::Program prog;
    std::string msg = check_proposal(p, plan, name, op, check_options, &prog);
    if (!msg.empty()) {
      Judged j = loop.reject(name, text, plan.dump(), lin, st::rejected_static, msg);
      fail(j, name);
      rec["candidates"] = {j.id};
      rec["status"] = j.status;
      turn.outcome.push_back(rec);
      ++used;
      continue;
    }
    prog.source = write_proposal(proposals_dir_, text);
    std::vector<Judged> results;
    if (!is_template) {
      results = loop.evaluate(prog, {search::Config{}}, lin);
    } else {
      size_t share =
          options_.template_budget > 0 ? options_.template_budget : std::max<size_t>(4, (budget_left - used) / 3);
      share = std::min(share, budget_left - used);
      try {
        results = loop.tune(prog, share, lin);
      } catch (const std::exception& e) {
        turn.failures.push_back(
            {"", name, "parse", fmt::format("the parameter space cannot be searched: {}", e.what())});
      }
      if (results.empty() && turn.failures.empty())
        turn.failures.push_back(
            {"", name, "parse", "the parameter space has no configuration that meets the constraints"});
    }
    used += results.size();
    json ids = json::array();
    std::set<std::string> reported;
    for (auto& j : results) {
      ids.push_back(j.id);
      // One failure per distinct status of a tuned template is enough for the model.
      if (is_failure(j.status) && reported.insert(j.status).second) fail(j, name);
    }
    rec["candidates"] = ids;
    if (!results.empty()) rec["status"] = results.front().status;
    turn.outcome.push_back(rec);
  }
}

// A replayed answer: pair the recording's proposals with this run's, in order (the
// same answer gives the same proposals), and remember which of this run's candidates
// each recorded kernel id became. Tuned templates are left out: their
// configurations depend on the measurements, so position k is not the same one.
void LlmProposer::learn_recorded_ids(const std::string& recorded_outcome, const json& outcome) {
  if (recorded_outcome.empty()) return;
  json rec = json::parse(recorded_outcome, nullptr, false);
  if (!rec.is_object() || !rec.contains("proposals") || !rec["proposals"].is_array()) return;
  const json& then = rec["proposals"];
  for (size_t k = 0; k < then.size() && k < outcome.size(); ++k) {
    const json& a = then[k];
    const json& b = outcome[k];
    if (!a.is_object() || a.value("kind", "") != "kernel" || b.value("kind", "") != "kernel") continue;
    if (a.value("name", "") != b.value("name", "")) continue;
    const json& ra = a.contains("candidates") ? a["candidates"] : json();
    const json& rb = b.contains("candidates") ? b["candidates"] : json();
    if (ra.is_array() && rb.is_array() && ra.size() == 1 && rb.size() == 1 && ra[0].is_number_integer() &&
        rb[0].is_number_integer())
      recorded_ids_[ra[0].get<long long>()] = rb[0].get<long long>();
  }
}

void LlmProposer::run(Loop& loop, const spec::Operator& op, store::Store& db, size_t budget, bool allow_templates) {
  session_->attach(db, loop.run_id());
  llm::PromptTemplates templates;
  try {
    templates = llm::PromptTemplates::load();
  } catch (const llm::LlmError& e) {
    stop_reason_ = e.what();
    std::cerr << "tessera: " << e.what() << "\n";
    return;
  }
  const size_t start = loop.evaluated();
  auto left = [&] { return budget > loop.evaluated() - start ? budget - (loop.evaluated() - start) : 0; };
  llm::PromptContext ctx = base_context(op, loop, options_.proposals_per_turn, allow_templates ? "either" : "kernel");
  ctx.best = best_reports(db, op, loop, kBestShown);
  llm::Conversation opening = llm::build_propose_conversation(templates, ctx);
  std::vector<llm::Message> tail;  // the previous answer and the feedback on it
  std::vector<llm::FailureReport> recent;
  std::set<long long> shown = shown_ids(ctx);
  std::optional<long long> best_shown = best_shown_id(ctx);
  int bad_in_a_row = 0;
  for (int number = 1; left() > 0 && loop.seconds_left() > 0; ++number) {
    llm::Conversation conv = opening;
    conv.messages.insert(conv.messages.end(), tail.begin(), tail.end());
    auto answer = session_->ask(conv, number);
    if (!answer.ok) {
      if (answer.error_kind && fatal(*answer.error_kind)) {
        if (!options_.quiet) std::cerr << fmt::format("llm: stopping: {}\n", answer.error);
        stop_reason_ = answer.error;
        break;
      }
      ++failed_calls_;
      if (!options_.quiet) std::cerr << fmt::format("llm: turn {}: the call failed: {}\n", number, answer.error);
      if (++bad_in_a_row >= kMaxConsecutiveBadTurns) {
        stop_reason_ =
            fmt::format("{} failed calls or unusable answers in a row; last: {}", bad_in_a_row, answer.error);
        break;
      }
      continue;  // the same conversation again
    }
    Turn turn;
    turn.number = number;
    turn.exchange_id = answer.exchange_id;
    turn.shown = shown;
    turn.default_parent = best_shown;
    turn.parsed =
        llm::parse_proposals(answer.reply.text, parse_options(options_.proposals_per_turn, answer.reply.finish_reason));
    if (turn.parsed.proposals.empty()) {
      ++unusable_answers_;
      session_->set_outcome(answer.exchange_id, {{"proposals", json::array()}, {"parse_errors", turn.parsed.errors}});
      if (!options_.quiet)
        std::cerr << fmt::format("llm: turn {}: no usable proposal in the answer ({})\n", number,
                                 turn.parsed.errors.empty() ? "?" : turn.parsed.errors.front().substr(0, 120));
      tail = {{llm::Role::Assistant, answer.reply.text},
              {llm::Role::User, llm::render_parse_feedback(templates, turn.parsed.errors)}};
      if (++bad_in_a_row >= kMaxConsecutiveBadTurns) {
        stop_reason_ = fmt::format("{} failed calls or unusable answers in a row", bad_in_a_row);
        break;
      }
      continue;
    }
    bad_in_a_row = 0;
    if (!options_.quiet) std::cerr << turn_summary(number, turn.parsed);
    evaluate_proposals(loop, op, turn, left());
    learn_recorded_ids(answer.recorded_outcome, turn.outcome);
    add_parse_failure(number, turn.parsed.errors, &turn.failures);
    session_->set_outcome(answer.exchange_id, {{"proposals", turn.outcome}, {"parse_errors", turn.parsed.errors}});
    // Feedback: the new failures first, then older ones; the best as they stand now.
    remember_failures(turn.failures, &recent);
    ctx.best = best_reports(db, op, loop, kBestShown);
    ctx.failures = recent;
    shown = shown_ids(ctx);
    best_shown = best_shown_id(ctx);
    tail = {{llm::Role::Assistant, answer.reply.text}, {llm::Role::User, llm::render_refine_message(templates, ctx)}};
  }
}

}  // namespace tessera::agent
