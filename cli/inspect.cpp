// cli/inspect.cpp — read-only views of the history: targets, leaderboard, show.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "agent/template_space.h"
#include "cli/commands.h"
#include "evaluator/report.h"
#include "spec/spec.h"
#include "store/report_queries.h"
#include "store/store.h"

namespace tessera::cli {

using nlohmann::json;

std::string default_db() {
  if (const char* e = std::getenv("TESSERA_DB"); e && *e) return e;
  return "runs/tessera.db";
}

namespace {
// Per shape, how it was timed, from an evaluation's report: the method, the batches
// the judge set aside because the baseline ran slow, and whether the machine was
// disturbed throughout (docs/statuses.md, "Timing method").
std::map<std::string, std::string> timing_notes(const std::string& report_json) {
  std::map<std::string, std::string> out;
  json rep = json::parse(report_json.empty() ? "{}" : report_json, nullptr, false);
  if (!rep.is_object() || !rep.contains("timings") || !rep["timings"].is_array()) return out;
  for (auto& t : rep["timings"]) {
    if (!t.is_object() || !t.contains("shape") || !t["shape"].is_string()) continue;
    std::string note = t.value("method", "");
    int batches = t.value("batches", 0), aside = t.value("batches_set_aside", 0);
    if (aside > 0) note += fmt::format("{}{} of {} batches set aside", note.empty() ? "" : ", ", aside, batches);
    if (t.value("disturbed", false)) note += std::string(note.empty() ? "" : "; ") + "DISTURBED (not comparable)";
    out[t["shape"].get<std::string>()] = note;
  }
  return out;
}

// Opening a database that does not exist is an error for read-only commands.
std::unique_ptr<store::Store> open_existing(const std::string& db) {
  if (!std::filesystem::exists(db))
    throw store::StoreError(fmt::format("no database at {} (run `tessera optimize` first, or pass --db)", db));
  return std::make_unique<store::Store>(db);
}
}  // namespace

int cmd_targets(bool as_json) {
  auto dir = spec::targets_dir();
  json out = json::array();
  int rc = 0;
  for (auto& name : spec::list_operators(dir)) {
    try {
      auto op = spec::load_operator(dir / name);
      size_t variants = 0;  // (what the constraints leave of the products of the parameter lists)
      json tpls = json::array();
      for (auto& t : op.templates) {
        size_t n = 1;
        for (auto& [_, v] : t.params) n *= v.size();
        const size_t valid = agent::template_space(t).valid_configs().size();
        variants += valid;
        tpls.push_back({{"name", t.name}, {"arch", t.arch}, {"cartesian", n}, {"configurations", valid}});
      }
      out.push_back({{"name", op.name},
                     {"description", op.description},
                     {"templates", tpls},
                     {"validation_shapes", op.validation_shapes.size()},
                     {"benchmark_shapes", op.benchmark_shapes.size()},
                     {"baseline", !op.baseline.builtin.empty()  ? op.baseline.builtin
                                  : !op.baseline.python.empty() ? op.baseline.python.filename().string()
                                                                : op.baseline.source.filename().string()}});
      if (!as_json)
        std::cout << fmt::format("{:<18} {} template(s), {} configurations, {} validation / {} benchmark shapes — {}\n",
                                 op.name, op.templates.size(), variants, op.validation_shapes.size(),
                                 op.benchmark_shapes.size(), op.description);
    } catch (std::exception& e) {
      rc = 1;
      out.push_back({{"name", name}, {"error", e.what()}});
      if (!as_json) std::cout << fmt::format("{:<18} BROKEN: {}\n", name, e.what());
    }
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return rc;
}

// The GPU model a leaderboard shows (store::leaderboard_device), said on stderr where it was
// chosen for the user.
static std::string board_device(store::Store& st, const std::string& op, const std::string& asked) {
  std::string note;
  const std::string device = store::leaderboard_device(st, op, asked, &note);
  if (!note.empty()) std::cerr << "timings on " << note << "\n";
  return device;
}

int cmd_leaderboard(const std::string& db, const std::string& op, const std::string& status, int limit,
                    const std::string& device, bool as_json) {
  if (!status.empty() && !evaluator::is_status(status)) {
    std::string all;
    for (auto& s : evaluator::all_statuses()) all += (all.empty() ? "" : ", ") + s;
    std::cerr << fmt::format("tessera: unknown status '{}' (one of: {})\n", status, all);
    return 2;
  }
  auto st = open_existing(db);
  // (compiled candidates were judged on no GPU: every model's, or none's)
  auto rows = st->leaderboard(op, status, limit, status == "compiled" ? device : board_device(*st, op, device));
  if (as_json) {
    json out = json::array();
    int rank = 0;
    for (auto& r : rows) {
      json shapes = json::array();
      for (auto& s : r.shapes)
        shapes.push_back({{"shape", s.shape},
                          {"median_ms", s.cand_median_ms},
                          {"baseline_ms", s.base_median_ms},
                          {"speedup", s.speedup},
                          {"roofline_fraction", s.roofline_fraction},
                          {"rel_l2", s.rel_l2}});
      out.push_back({{"rank", ++rank},
                     {"candidate", r.candidate_id},
                     {"template", r.template_name},
                     {"params", json::parse(r.params_json.empty() ? "{}" : r.params_json)},
                     {"status", r.status},
                     {"geomean_speedup", r.geomean_speedup},
                     {"max_rel_l2", r.max_rel_l2},
                     {"roofline_fraction", r.roofline_fraction},
                     {"device", r.device},
                     {"when", r.created},
                     {"origin", r.origin},
                     {"parent", r.parent ? json(*r.parent) : json()},
                     {"shapes", shapes}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (rows.empty()) {
    std::cout << fmt::format("no evaluated candidates for '{}'{} in {}\n", op,
                             status.empty() ? "" : " with status " + status, db);
    return 0;
  }
  std::cout << fmt::format("{:>4} {:>6} {:<14} {:>8} {:>9} {:>8}  {:<20} {:<22} {}\n", "rank", "id", "status",
                           "speedup", "max err", "roofline", "when", "origin (<- parent)", "template / params");
  int rank = 0;
  for (auto& r : rows) {
    std::string origin = r.origin + (r.parent ? fmt::format(" <- #{}", *r.parent) : "");
    std::cout << fmt::format("{:>4} {:>6} {:<14} {:>8} {:>9.2e} {:>7.1f}%  {:<20} {:<22} {} {}\n", ++rank,
                             r.candidate_id, r.status,
                             r.status == "ok" ? fmt::format("{:.3f}x", r.geomean_speedup) : "-", r.max_rel_l2,
                             100 * r.roofline_fraction, r.created, origin, r.template_name, r.params_json);
    if (rank <= 3 && r.status == "ok") {
      std::string per;
      for (auto& s : r.shapes)
        per += fmt::format("{}{} {:.3f}x ({:.4f} ms, {:.0f}%)", per.empty() ? "" : "; ", s.shape, s.speedup,
                           s.cand_median_ms, 100 * s.roofline_fraction);
      std::cout << "       " << per << "\n";
    }
  }
  return 0;
}

// How many times a candidate was judged `ok` on `device` (every GPU model where it is empty).
static int times_judged(store::Store& st, long long candidate_id, const std::string& device) {
  int n = 0;
  for (const auto& e : st.evaluations(candidate_id))
    if (e.status == "ok" && (device.empty() || e.device == device)) ++n;
  return n;
}

int cmd_leaderboard_per_shape(const std::string& db, const std::string& op, const std::string& asked, bool as_json) {
  auto st = open_existing(db);
  const std::string device = board_device(*st, op, asked);
  // (speedup: against the run's steady baseline at the shape, as export --per-shape chooses)
  const auto best = store::per_shape_champions(st->leaderboard(op, "ok", 1 << 30, device));
  std::map<long long, int> judged;  // once: one timing, often the best of a search's many
  for (const auto& b : best) judged.emplace(b.candidate_id, times_judged(*st, b.candidate_id, device));
  if (as_json) {
    json out = json::array();
    for (const auto& b : best)
      out.push_back({{"shape", b.shape},
                     {"candidate", b.candidate_id},
                     {"run", b.run_id},
                     {"params", json::parse(b.params_json.empty() ? "{}" : b.params_json)},
                     {"speedup", b.speedup},
                     {"median_ms", b.row.cand_median_ms},
                     {"baseline_ms", b.baseline_ms},
                     {"own_baseline_ms", b.row.base_median_ms},
                     {"own_speedup", b.row.speedup},
                     {"roofline_fraction", b.row.roofline_fraction},
                     {"judged", judged[b.candidate_id]}});
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (best.empty()) {
    std::cout << fmt::format("no timed candidates for '{}' in {}\n", op, db);
    return 0;
  }
  std::cout << fmt::format("{:<28} {:>6} {:>8} {:>11} {:>11} {:>8} {:>6}  {}\n", "shape", "id", "speedup", "median ms",
                           "base ms", "roofline", "judged", "params");
  int once = 0;
  for (const auto& b : best) {
    const int n = judged[b.candidate_id];
    once += n == 1;
    std::cout << fmt::format("{:<28} {:>6} {:>7.3f}x {:>11.4f} {:>11.4f} {:>7.1f}% {:>5}x  {}\n", b.shape,
                             b.candidate_id, b.speedup, b.row.cand_median_ms, b.baseline_ms,
                             100 * b.row.roofline_fraction, n, b.params_json);
  }
  std::cout << "(speedup and base ms: the baseline's median over the run's candidates at the shape, so that one\n"
               " candidate's baseline timing a few per cent off does not crown a slower kernel; judged: its ok\n"
               " evaluations on this GPU model, the figure shown being the latest)\n";
  if (once > 0)
    std::cout << fmt::format(
        "{} of the {} figures are of a champion judged only once on this GPU model (a search keeps the best\n"
        " of many such figures): `tessera recheck {} --per-shape` judges them again\n",
        once, best.size(), op);
  // Both figures: what `export --per-shape` serves (each shape's champion), and the one
  // candidate that is best over all shapes together.
  std::cout << fmt::format(
      "geomean of the per-shape champions: {:.3f}x over {} shapes (served by export --per-shape)\n",
      store::per_shape_geomean(best), best.size());
  auto lead = st->leaderboard(op, "ok", 1, device);
  if (!lead.empty())
    std::cout << fmt::format("the champion over all shapes: #{} {:.3f}x\n", lead[0].candidate_id,
                             lead[0].geomean_speedup);
  return 0;
}

// What the kernel printed while judged, quoted line by line (control bytes shown as '?').
static void print_printed(const std::string& text, long long total) {
  std::cout << fmt::format(
      "  printed {} bytes while judged{}:\n", total,
      static_cast<long long>(text.size()) < total ? fmt::format(" (the first {} kept)", text.size()) : "");
  std::string line = "  > ";
  for (char ch : text) {
    if (ch == '\n') {
      std::cout << line << "\n";
      line = "  > ";
    } else {
      line += (ch >= 32 && ch < 127) || ch == '\t' ? ch : '?';
    }
  }
  if (line != "  > ") std::cout << line << "\n";
}

// The stored launch plan of a candidate, as `show` prints it: a template candidate's in one
// word while its template in spec.json still launches alike (the whole plan once it does
// not, or when the spec cannot be read), a proposed program's whole.
static std::string launch_plan_line(const store::CandidateInfo& c) {
  try {
    const auto op = spec::load_operator(spec::targets_dir() / c.op);
    if (const spec::Program* t = op.find_template(c.template_name)) {
      const spec::Program stored = spec::program_from_json(json::parse(c.plan_json), op.dir);
      if (spec::same_launches(stored, *t)) return "launch plan: the template's in spec.json (stored with it)";
      return "launch plan (stored; the template's has changed since): " + c.plan_json;
    }
  } catch (std::exception&) {
  }
  return "launch plan: " + c.plan_json;
}

namespace {
// Everything `show` prints about one candidate, read from the store once.
struct ShowData {
  store::CandidateInfo c;
  std::string src;
  std::optional<store::CompileInfo> comp;
  std::vector<store::EvaluationInfo> evals;
  std::vector<store::CandidateInfo> chain;  // the parent chain, nearest first
  std::optional<store::ExchangeRecord> exchange;
};

// Lineage: the parent chain, nearest first (a cycle or a missing row ends it).
std::vector<store::CandidateInfo> lineage_of(store::Store& st, const store::CandidateInfo& c) {
  std::vector<store::CandidateInfo> chain;
  std::set<long long> seen = {c.id};
  for (auto p = c.parent; p && chain.size() < 100 && seen.insert(*p).second;) {
    auto pc = st.candidate(*p);
    if (!pc) break;
    chain.push_back(*pc);
    p = pc->parent;
  }
  return chain;
}

// The candidate's evaluations as `show --json` lists them.
json evaluations_json(const std::vector<store::EvaluationInfo>& evals) {
  json e = json::array();
  for (auto& ev : evals)
    e.push_back({{"status", ev.status},
                 {"message", ev.message},
                 {"device", ev.device},
                 {"geomean_speedup", ev.geomean_speedup},
                 {"max_rel_l2", ev.max_rel_l2},
                 {"roofline_fraction", ev.roofline_fraction},
                 {"seconds", ev.seconds},
                 {"printed", ev.printed},
                 {"printed_bytes", ev.printed_bytes},
                 {"report", ev.report_json.empty() ? json() : json::parse(ev.report_json)}});
  return e;
}

// The exchange that proposed the candidate, as `show --json` gives it.
json exchange_json(const store::ExchangeRecord& x) {
  return {{"id", x.id},
          {"run_id", x.run_id},
          {"turn", x.turn},
          {"provider", x.provider},
          {"model", x.model},
          {"prompt_tokens", x.prompt_tokens},
          {"completion_tokens", x.completion_tokens},
          {"latency_s", x.latency_s},
          {"http_status", x.http_status},
          {"attempts", x.attempts},
          {"finish_reason", x.finish_reason},
          {"error", x.error},
          {"error_kind", x.error_kind},
          {"request", json::parse(x.request_json, nullptr, false)},
          {"response", x.response},
          {"outcome", json::parse(x.outcome_json.empty() ? "null" : x.outcome_json, nullptr, false)},
          {"created", x.created}};
}

// `show --json`: the whole candidate as one JSON document on stdout.
void print_show_json(store::Store& st, const ShowData& d) {
  const auto& c = d.c;
  json e = evaluations_json(d.evals);
  json out = {{"id", c.id},
              {"operator", c.op},
              {"template", c.template_name},
              {"params", json::parse(c.params_json.empty() ? "{}" : c.params_json)},
              {"arch", c.arch},
              {"origin", c.origin},
              {"parent", c.parent ? json(*c.parent) : json()},
              {"status", st.status_of(c.id)},
              {"source_hash", c.source_hash},
              {"source", d.src},
              {"evaluations", e}};
  if (d.comp)
    out["compile"] = {{"ok", d.comp->ok},
                      {"seconds", d.comp->seconds},
                      {"registers", d.comp->registers},
                      {"spill_bytes", d.comp->spill_bytes},
                      {"smem", d.comp->smem},
                      {"log", d.comp->log}};
  if (!c.plan_json.empty()) out["plan"] = json::parse(c.plan_json, nullptr, false);
  json lineage = json::array();
  for (auto& a : d.chain)
    lineage.push_back({{"id", a.id},
                       {"template", a.template_name},
                       {"origin", a.origin},
                       {"status", st.status_of(a.id)},
                       {"exchange_id", a.exchange_id ? json(*a.exchange_id) : json()}});
  out["lineage"] = lineage;
  out["exchange_id"] = c.exchange_id ? json(*c.exchange_id) : json();
  if (d.exchange) out["exchange"] = exchange_json(*d.exchange);
  std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

// The proposing exchange in text: its figures, the head of the last prompt, the model's answer.
void print_exchange(const store::ExchangeRecord& x) {
  std::cout << fmt::format(
      "proposed by exchange #{} (run {}, turn {}): {} {}, {} prompt + {} completion tokens, "
      "{:.1f} s, HTTP {}, finish {}\n",
      x.id, x.run_id, x.turn, x.provider, x.model, x.prompt_tokens, x.completion_tokens, x.latency_s, x.http_status,
      x.finish_reason.empty() ? "-" : x.finish_reason);
  json req = json::parse(x.request_json, nullptr, false);
  if (req.is_object() && req.contains("messages") && req["messages"].is_array() && !req["messages"].empty()) {
    std::string last = req["messages"].back().value("content", "");
    std::cout << fmt::format("  prompt: {} message(s); the last one ({} chars) begins:\n", req["messages"].size(),
                             last.size());
    std::string head = last.substr(0, 600), quoted = "  | ";
    for (char ch : head) quoted += ch == '\n' ? std::string("\n  | ") : std::string(1, ch);
    std::cout << quoted << (last.size() > head.size() ? " ..." : "") << "\n";
  }
  std::cout << "--- the model's answer ---\n" << x.response << "\n--- end of answer (full exchange: --json) ---\n";
}

// One evaluation in text: its status, figures, per-shape table and what the kernel printed.
void print_evaluation(const store::EvaluationInfo& ev) {
  std::cout << fmt::format("\nevaluation on {}: {}{}\n", ev.device.empty() ? "-" : ev.device, ev.status,
                           ev.message.empty() ? "" : " — " + ev.message);
  if (ev.status == "ok")
    std::cout << fmt::format("  geomean {:.3f}x, max rel L2 {:.2e}, roofline {:.1f}%, SM clock {:.0f}→{:.0f} MHz\n",
                             ev.geomean_speedup, ev.max_rel_l2, 100 * ev.roofline_fraction, ev.clock_before,
                             ev.clock_after);
  auto timing = timing_notes(ev.report_json);
  if (!ev.shapes.empty())
    std::cout << fmt::format("  {:<28} {:>11} {:>11} {:>8} {:>9} {:>9}  {}\n", "shape", "median ms", "base ms",
                             "speedup", "floor ms", "roofline", "timing");
  for (auto& s : ev.shapes)
    std::cout << fmt::format("  {:<28} {:>11.4f} {:>11.4f} {:>7.3f}x {:>9.4f} {:>8.1f}%  {}\n", s.shape,
                             s.cand_median_ms, s.base_median_ms, s.speedup, s.floor_ms, 100 * s.roofline_fraction,
                             timing.count(s.shape) ? timing.at(s.shape) : "");
  if (ev.printed_bytes > 0) print_printed(ev.printed, ev.printed_bytes);
}

// `show` in text: header, lineage, plan, exchange, compile, evaluations, compiler log, source.
void print_show_text(store::Store& st, const ShowData& d) {
  const auto& c = d.c;
  std::cout << fmt::format("candidate #{} — {} / {} for {}\n", c.id, c.op, c.template_name, c.arch);
  std::cout << fmt::format("status: {}   origin: {}   parent: {}   created: {}\n", st.status_of(c.id), c.origin,
                           c.parent ? fmt::format("#{}", *c.parent) : "-", c.created);
  std::cout << "params: " << c.params_json << "\n";
  if (!d.chain.empty()) {
    std::string line = fmt::format("lineage: #{}", c.id);
    for (auto& a : d.chain)
      line += fmt::format(" <- #{} ({}, {}, {})", a.id, a.template_name, a.origin, st.status_of(a.id));
    std::cout << line << "\n";
  }
  if (!c.plan_json.empty()) std::cout << launch_plan_line(c) << "\n";
  if (c.exchange_id && !d.exchange)
    std::cout << fmt::format("proposed by exchange #{} (not in this database)\n", *c.exchange_id);
  if (d.exchange) print_exchange(*d.exchange);
  if (d.comp)
    std::cout << fmt::format("compile: {} in {:.2f} s, {} registers, {} bytes spilled, {} bytes static smem\n",
                             d.comp->ok ? "ok" : "FAILED", d.comp->seconds, d.comp->registers, d.comp->spill_bytes,
                             d.comp->smem);
  for (auto& ev : d.evals) print_evaluation(ev);
  if (d.comp && !d.comp->ok) std::cout << "\ncompiler log:\n" << d.comp->log << "\n";
  std::cout << "\n--- source ---\n" << d.src << "\n";
}
}  // namespace

int cmd_show(const std::string& db, long long id, bool as_json) {
  auto st = open_existing(db);
  auto c = st->candidate(id);
  if (!c) {
    std::cerr << fmt::format("tessera: no candidate #{} in {}\n", id, db);
    return 1;
  }
  ShowData d;
  d.c = *c;
  d.src = st->source(c->source_hash).value_or("");
  d.comp = st->last_compile(id);
  d.evals = st->evaluations(id);
  d.chain = lineage_of(*st, *c);
  d.exchange = c->exchange_id ? st->exchange(*c->exchange_id) : std::nullopt;
  if (as_json)
    print_show_json(*st, d);
  else
    print_show_text(*st, d);
  return 0;
}

}  // namespace tessera::cli
