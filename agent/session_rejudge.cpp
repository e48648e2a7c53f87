// agent/session_rejudge.cpp — the nightly re-check's use of a session: judge
// stored candidates again from their stored sources (declared in agent/recheck.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <iostream>
#include <thread>

#include "agent/session.h"
#include "agent/template_space.h"
#include "codegen/render.h"
#include "evaluator/driver.h"
#include "evaluator/report.h"
#include "evaluator/worker.h"
#include "search/strategy.h"

namespace tessera::agent {

namespace {
// Whether any of a candidate's evaluations was made under the spec of this hash (an
// evaluation without one, from before spec hashes were stored, counts as under it).
bool judged_under(const std::vector<store::EvaluationInfo>& evals, const std::string& spec_hash) {
  if (evals.empty()) return true;
  for (auto& e : evals)
    if (e.spec_hash.empty() || e.spec_hash == spec_hash) return true;
  return false;
}

// Sets *tpl to the program a stored candidate is launched with: its spec template, or
// its stored plan (rebuilt into `planned`) where that differs or the template is gone;
// false, with *note set, when the stored plan is unreadable.
bool program_for(const spec::Operator& op, const store::CandidateInfo& c, std::deque<spec::Program>& planned,
                 const spec::Program** tpl, std::string* note) {
  for (auto& t : op.templates)
    if (t.name == c.template_name) *tpl = &t;
  if (!c.plan_json.empty()) {
    // The plan it was judged with is stored with it: a proposed program's (LLM), or a
    // template's, which is launched as stored where the template's plan has changed since.
    try {
      spec::Program stored = spec::program_from_json(json::parse(c.plan_json), op.dir);
      if (!*tpl || !spec::same_launches(stored, **tpl)) {
        if (*tpl) *note = "launched with its stored plan: the template's has changed since";
        stored.name = c.template_name;
        stored.source.clear();  // (not the spec's template: the plan travels to the workers with it)
        planned.push_back(std::move(stored));
        *tpl = &planned.back();
      }
    } catch (std::exception& e) {
      *note = fmt::format("stored launch plan unreadable: {}", e.what());
      return false;
    }
  }
  return true;
}
}  // namespace

namespace fs = std::filesystem;
namespace st = evaluator::status;

void Session::rejudge(const detail::Chooser& choose, detail::RejudgeRun* res) {
  std::string device = device_name();
  res->run_id = run_id_;
  res->device = device;
  res->no_gpu_reason = workers_.empty() ? no_gpu_reason_ : "";
  std::vector<long long> ids = choose(run_id_, device);
  total_budget_ = ids.size();
  std::vector<search::Outcome> out(ids.size());
  std::vector<codegen::CompileRequest> reqs;
  std::vector<size_t> slots;
  std::vector<const spec::Program*> tpls(ids.size(), nullptr);
  std::deque<spec::Program> planned;  // programs rebuilt from stored plans (stable addresses)
  std::vector<std::map<std::string, long long>> params(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    res->items.push_back({ids[i], "", ""});
    auto c = db_.candidate(ids[i]);
    auto src = c ? db_.source(c->source_hash) : std::nullopt;
    if (!c || !src) {
      res->items[i].note = "not in the database";
      continue;
    }
    if (!program_for(op_, *c, planned, &tpls[i], &res->items[i].note)) continue;
    if (!tpls[i]) {
      res->items[i].note = fmt::format("template '{}' is not in the spec", c->template_name);
      continue;
    }
    if (c->plan_json.empty() && !judged_under(db_.evaluations(ids[i]), spec_hash_))
      res->items[i].note =
          "no plan stored with it, judged under another spec.json: launched with today's template plan";
    if (c->arch != arch_) {
      res->items[i].note = fmt::format("built for {}, this machine targets {}", c->arch, arch_);
      continue;
    }
    if (!c->params_json.empty()) params[i] = json::parse(c->params_json).get<std::map<std::string, long long>>();
    params[i] = spec::complete_params(*tpls[i], params[i]);  // (parameters the template gained since)
    reqs.push_back({*src, fmt::format("{}_{}.cu", op_.name, tpls[i]->name), arch_, includes_, {}});
    slots.push_back(i);
  }
  auto results = compiler_.compile_many(reqs);
  std::map<const spec::Program*, std::vector<Pending>> work;
  for (size_t k = 0; k < results.size(); ++k) {
    size_t i = slots[k];
    auto& r = results[k];
    db_.add_compile(ids[i], compile_info(r));
    res->items[i].status = r.ok ? st::compiled : st::compile_error;
    if (!r.ok) res->items[i].note = r.log.substr(0, 2000);
    if (workers_.empty()) {
      progress(ids[i], res->items[i].status, 0, "compiled again, not timed");
      continue;  // only the compile is recorded: a stored timing is not replaced by "compiled"
    }
    if (!r.ok) {
      db_.add_evaluation(verdict(ids[i], device, st::compile_error, res->items[i].note));
      progress(ids[i], st::compile_error, 0, "");
      continue;
    }
    work[tpls[i]].push_back({ids[i], params[i], compiler_.cubin_path(r.key).string(), i});
  }
  for (auto& [tpl, pending] : work) {
    WorkQueue queue;  // everything is compiled already: the queue is full and closed
    queue.items.assign(pending.begin(), pending.end());
    judge_on_workers(*tpl, queue, out);
    for (auto& p : pending) res->items[p.slot].status = out[p.slot].ok ? std::string(st::ok) : out[p.slot].failure;
  }
  double wall = close_run();
  for (auto& w : workers_)
    if (!o_.quiet)
      std::cerr << fmt::format("GPU {} ({}): {} re-checked, busy {:.0f}% of wall time\n", w->client->gpu(),
                               w->device.value("name", ""), w->evaluated, 100.0 * w->busy_s / std::max(wall, 1e-9));
}

int detail::rejudge_stored(const OptimizeOptions& o, const detail::Chooser& choose, detail::RejudgeRun* out,
                           std::string* err) {
  fs::path dir = spec::targets_dir() / o.op;
  if (!fs::exists(dir / "spec.json")) {
    *err = fmt::format("unknown operator '{}'", o.op);
    return 2;
  }
  store::Store db(o.db);
  Session s(o, spec::load_operator(dir), db);
  if (!s.start(err)) return 1;
  s.rejudge(choose, out);
  return 0;
}

}  // namespace tessera::agent
