// agent/recheck.cpp — the nightly re-check: picks the champion and the top N,
// has them judged again (detail::rejudge_stored, in session_rejudge.cpp), and compares
// each new figure with the stored one under the noise model of recheck.h.
#include "agent/recheck.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace tessera::agent {

using nlohmann::json;

double relative_noise(double median_ms, double p90_ms, int samples) {
  if (samples <= 1 || median_ms <= 0 || p90_ms <= median_ms) return 0;
  double sigma = (p90_ms - median_ms) / 1.2816;                          // p90 of a normal distribution
  double se = 1.2533 * sigma / std::sqrt(static_cast<double>(samples));  // standard error of a median
  return se / median_ms;
}

namespace {
// Shape -> timing method, from an evaluation's report (empty for older reports);
// shapes flagged `disturbed` go to *disturbed.
std::map<std::string, std::string> methods_of(const store::EvaluationInfo& e, std::set<std::string>* disturbed) {
  std::map<std::string, std::string> out;
  json rep = json::parse(e.report_json.empty() ? "{}" : e.report_json, nullptr, false);
  if (rep.is_object() && rep.contains("timings") && rep["timings"].is_array())
    for (auto& t : rep["timings"]) {
      if (!t.is_object() || !t.contains("shape") || !t["shape"].is_string()) continue;
      if (t.contains("method") && t["method"].is_string())
        out[t["shape"].get<std::string>()] = t["method"].get<std::string>();
      if (t.value("disturbed", false)) disturbed->insert(t["shape"].get<std::string>());
    }
  return out;
}
}  // namespace

Recheck compare(const store::StoredEvaluation& stored, const store::StoredEvaluation& now, const NoiseModel& noise) {
  Recheck r;
  r.candidate_id = now.info.candidate_id;
  r.device = now.info.device;
  r.status_before = stored.info.status;
  r.status_now = now.info.status;
  r.speedup_before = stored.info.geomean_speedup;
  r.speedup_now = now.info.geomean_speedup;
  r.stored_evaluation = stored.id;
  r.new_evaluation = now.id;
  std::map<std::string, const store::ShapeRow*> old;
  for (auto& s : stored.info.shapes) old[s.shape] = &s;
  std::set<std::string> disturbed;
  auto old_methods = methods_of(stored.info, &disturbed), new_methods = methods_of(now.info, &disturbed);
  double log_sum = 0;
  bool slower = false, faster = false;
  for (auto& n : now.info.shapes) {
    auto it = old.find(n.shape);
    if (it == old.end() || it->second->cand_median_ms <= 0 || n.cand_median_ms <= 0) continue;
    const auto& o = *it->second;
    ShapeChange c;
    c.shape = n.shape;
    c.old_ms = o.cand_median_ms;
    c.new_ms = n.cand_median_ms;
    c.old_samples = o.cand_samples;
    c.new_samples = n.cand_samples;
    c.ratio = c.new_ms / c.old_ms;
    double se_o = relative_noise(o.cand_median_ms, o.cand_p90_ms, o.cand_samples);
    double se_n = relative_noise(n.cand_median_ms, n.cand_p90_ms, n.cand_samples);
    c.tolerance = std::max(noise.threshold, noise.z * std::sqrt(se_o * se_o + se_n * se_n));
    if (auto m = old_methods.find(n.shape); m != old_methods.end()) c.old_method = m->second;
    if (auto m = new_methods.find(n.shape); m != new_methods.end()) c.new_method = m->second;
    c.disturbed = disturbed.count(n.shape) > 0;
    c.slower = c.comparable() && c.ratio - 1 > c.tolerance;
    c.faster = c.comparable() && 1 / c.ratio - 1 > c.tolerance;
    slower |= c.slower;
    faster |= c.faster;
    log_sum += std::log(c.ratio);
    r.shapes.push_back(c);
  }
  if (r.shapes.empty()) {
    r.verdict = "first_figure";
    r.note = "no benchmark shape in common with the stored figure (the spec changed?)";
    return r;
  }
  r.time_ratio = std::exp(log_sum / static_cast<double>(r.shapes.size()));
  r.verdict = slower ? "slower" : faster ? "faster" : "unchanged";
  std::string changed;
  for (auto& c : r.shapes)
    if (c.method_changed())
      changed += fmt::format("{}{} ({} -> {})", changed.empty() ? "" : ", ", c.shape, c.old_method, c.new_method);
  if (!changed.empty()) r.note = "not compared, timed by another method: " + changed;
  std::string noisy;
  for (auto& c : r.shapes)
    if (c.disturbed) noisy += fmt::format("{}{}", noisy.empty() ? "" : ", ", c.shape);
  if (!noisy.empty())
    r.note +=
        fmt::format("{}not compared, timed while the machine was disturbed: {}", r.note.empty() ? "" : "; ", noisy);
  if (slower) {
    std::string worst;
    double wr = 0;
    for (auto& c : r.shapes)
      if (c.slower && c.ratio > wr) wr = c.ratio, worst = c.shape;
    r.note = fmt::format(
        "{}: {:.1f}% slower (tolerance {:.1f}%){}", worst, (wr - 1) * 100,
        100 * std::find_if(r.shapes.begin(), r.shapes.end(), [&](auto& c) { return c.shape == worst; })->tolerance,
        r.note.empty() ? "" : "; " + r.note);
  }
  return r;
}

bool RecheckResult::regressed() const {
  for (auto& i : items)
    if (i.regression) return true;
  return false;
}

std::vector<Recheck> verdicts_of_run(store::Store& db, const store::RunRow& run) {
  json s;
  try {
    s = json::parse(run.settings.empty() ? "{}" : run.settings);
  } catch (json::exception&) {
    return {};
  }
  if (!s.is_object() || s.value("kind", "") != "recheck") return {};
  NoiseModel nm;
  if (s.contains("noise")) {
    nm.threshold = s["noise"].value("threshold", nm.threshold);
    nm.z = s["noise"].value("z", nm.z);
  }
  std::map<long long, json> outcomes;
  for (auto& x : s.value("outcomes", json::array())) outcomes[x.value("id", 0LL)] = x;
  std::map<long long, store::StoredEvaluation> evals;
  for (auto& e : store::evaluations_of_run(db, run.id)) evals[e.info.candidate_id] = e;
  std::vector<Recheck> out;
  for (auto& c : s.value("candidates", json::array())) {
    long long id = c.value("id", 0LL);
    int rank = c.value("rank", 0);
    Recheck r;
    if (auto it = evals.find(id); it != evals.end()) {
      auto& now = it->second;
      auto stored = store::previous_ok(db, id, now.info.device, now.id);
      if (now.info.status == "ok" && stored) {
        r = compare(*stored, now, nm);
      } else {
        r.device = now.info.device;
        r.status_now = now.info.status;
        r.speedup_now = now.info.geomean_speedup;
        r.new_evaluation = now.id;
        if (stored) {
          r.status_before = stored->info.status;
          r.speedup_before = stored->info.geomean_speedup;
          r.stored_evaluation = stored->id;
        }
        if (now.info.status == "ok") {
          r.verdict = "first_figure";
          r.note = fmt::format("no stored figure on {} to compare with", now.info.device);
        } else {
          r.verdict = "failed";
          r.note = now.info.status + (now.info.message.empty() ? "" : ": " + now.info.message.substr(0, 300));
        }
      }
    } else if (auto ot = outcomes.find(id); ot != outcomes.end()) {
      std::string st = ot->second.value("status", "");
      r.status_now = st;
      r.note = ot->second.value("note", "");
      r.verdict = st == "compiled" ? "compiles" : st == "compile_error" ? "no_longer_compiles" : "skipped";
      if (st == "compiled") r.note = "compiled again, not timed (no GPU)" + (r.note.empty() ? "" : "; " + r.note);
      r.status_before = "ok";
    } else {
      r.verdict = "skipped";
      r.note = "not judged (the run was interrupted?)";
    }
    if (auto ot = outcomes.find(id); ot != outcomes.end() && evals.count(id)) {
      const std::string n = ot->second.value("note", "");  // (how it was launched, e.g. with its stored plan)
      if (!n.empty()) r.note = r.note.empty() ? n : r.note + "; " + n;
    }
    r.candidate_id = id;
    r.rank = rank;
    r.champion = rank == 1;
    r.regression = r.champion && (r.verdict == "slower" || r.verdict == "failed" || r.verdict == "no_longer_compiles");
    out.push_back(r);
  }
  return out;
}

namespace {
// Why the candidates named in `o` cannot be re-checked (not in the database, another
// operator's); empty when they all can.
std::string named_candidates_error(const RecheckOptions& o) {
  store::Store db(o.db);
  for (long long id : o.candidates) {
    auto c = db.candidate(id);
    if (!c || c->op != o.op)
      return c ? fmt::format("candidate #{} is a {} candidate, not {}", id, c->op, o.op)
               : fmt::format("no candidate #{} in {}", id, o.db);
  }
  return "";
}

// The optimize options of a re-check run: the same GPUs, timing and seed, a budget of
// the candidates judged again, strategy "recheck".
OptimizeOptions rejudge_options(const RecheckOptions& o) {
  OptimizeOptions oo;
  oo.op = o.op;
  oo.db = o.db;
  oo.gpus = o.gpus;
  oo.arch = o.arch;
  oo.l2_flush = o.l2_flush;
  oo.stopping_rule = o.stopping_rule;
  oo.seed = o.seed;
  oo.quiet = o.quiet;
  oo.budget = static_cast<size_t>(std::max<size_t>(o.candidates.empty() ? std::max(1, o.top) : 0, o.candidates.size()));
  oo.strategy = "recheck";
  return oo;
}

// Records `settings` as the run's (proposer "recheck"), keeping the per-GPU figures the
// session stored there.
void save_settings(store::Store& db, const std::string& op, long long run_id, json& settings) {
  for (auto& r : store::runs_of(db, op))
    if (r.id == run_id) {
      json now = json::parse(r.settings.empty() ? "{}" : r.settings, nullptr, false);
      if (now.is_object() && now.contains("per_gpu")) settings["per_gpu"] = now["per_gpu"];
    }
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.raw(), "UPDATE runs SET proposer='recheck', settings=? WHERE id=?", -1, &st, nullptr);
  std::string text = settings.dump();
  sqlite3_bind_text(st, 1, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, run_id);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    throw store::StoreError(fmt::format("cannot record the re-check: {}", sqlite3_errmsg(db.raw())));
}

// The champion over all shapes on `device`, then the shapes' champions (`leaderboard
// --per-shape`) in the shapes' order, each once.
std::vector<long long> per_shape_ids(store::Store& db, const std::string& op, const std::string& device) {
  std::vector<long long> ids;
  const auto rows = db.leaderboard(op, "ok", 1 << 30, device);
  if (!rows.empty() && rows[0].status == "ok") ids.push_back(rows[0].candidate_id);
  for (auto& c : store::per_shape_champions(rows))
    if (std::find(ids.begin(), ids.end(), c.candidate_id) == ids.end()) ids.push_back(c.candidate_id);
  return ids;
}

// The candidates to judge again on `device` (the named ones, else the top N), with their
// ranks; sets settings' "ranked_on" and "candidates".
std::vector<long long> choose_candidates(store::Store& db, const RecheckOptions& o,
                                         const std::vector<std::string>& models, const std::string& device,
                                         json* settings) {
  // Ranked on this GPU model; on another (the latest timed) when it has no figures yet or there is no GPU.
  std::string ranked_on = device;
  auto rows =
      device == "(no GPU)" ? std::vector<store::LeaderboardRow>{} : store::timed_leaderboard(db, o.op, device, o.top);
  if (rows.empty() || rows[0].status != "ok") {
    ranked_on = models[0];
    rows = store::timed_leaderboard(db, o.op, ranked_on, o.top);
  }
  std::vector<long long> ids;
  json cands = json::array();
  if (!o.candidates.empty()) {
    // Named candidates: each keeps its rank on the leaderboard (0 when unranked),
    // so a regression is still flagged only for the champion.
    auto all = store::timed_leaderboard(db, o.op, ranked_on, 1000000);
    for (long long id : o.candidates) {
      int rank = 0;
      double speedup = 0;
      for (size_t i = 0; i < all.size() && all[i].status == "ok"; ++i)
        if (all[i].candidate_id == id) {
          rank = static_cast<int>(i) + 1;
          speedup = all[i].geomean_speedup;
        }
      ids.push_back(id);
      cands.push_back({{"id", id}, {"rank", rank}, {"speedup", speedup}});
    }
  } else if (o.per_shape) {
    // Each shape's champion once, with its rank on the whole leaderboard.
    auto all = store::timed_leaderboard(db, o.op, ranked_on, 1000000);
    for (long long id : per_shape_ids(db, o.op, ranked_on)) {
      int rank = 0;
      double speedup = 0;
      for (size_t i = 0; i < all.size() && all[i].status == "ok" && rank == 0; ++i)
        if (all[i].candidate_id == id) rank = static_cast<int>(i) + 1, speedup = all[i].geomean_speedup;
      ids.push_back(id);
      cands.push_back({{"id", id}, {"rank", rank}, {"speedup", speedup}});
    }
  } else {
    for (auto& r : rows) {
      if (r.status != "ok") break;
      ids.push_back(r.candidate_id);
      cands.push_back({{"id", r.candidate_id}, {"rank", static_cast<int>(ids.size())}, {"speedup", r.geomean_speedup}});
    }
  }
  (*settings)["ranked_on"] = ranked_on;
  (*settings)["candidates"] = cands;
  return ids;
}

// One re-check run of the candidates `o` names or chooses, on `models`' history.
RecheckResult recheck_run(const RecheckOptions& o, const std::vector<std::string>& models, int round) {
  RecheckResult res;
  OptimizeOptions oo = rejudge_options(o);
  store::Store db(o.db);
  json settings = {{"kind", "recheck"},
                   {"seed", o.seed},
                   {"gpus", gpu_selection_name(o.gpus)},
                   {"stopping_rule", evaluator::stopping_criterion_name(o.stopping_rule)},
                   {"top", o.top},
                   {"noise", {{"threshold", o.noise.threshold}, {"z", o.noise.z}}}};
  if (o.per_shape) settings["per_shape_round"] = round;
  auto choose = [&](long long run_id, const std::string& device) {
    auto ids = choose_candidates(db, o, models, device, &settings);
    save_settings(db, o.op, run_id, settings);
    return ids;
  };
  detail::RejudgeRun run;
  std::string err;
  int rc = detail::rejudge_stored(oo, choose, &run, &err);
  if (rc != 0) {
    res.code = rc;
    res.error = err;
    return res;
  }
  res.run_id = run.run_id;
  res.runs = {run.run_id};
  res.device = run.device;
  json outs = json::array();
  for (auto& i : run.items)
    outs.push_back({{"id", i.candidate_id}, {"status", i.status}, {"note", i.note.substr(0, 500)}});
  settings["outcomes"] = outs;
  save_settings(db, o.op, run.run_id, settings);
  if (!run.no_gpu_reason.empty())
    res.skipped = fmt::format("re-timing and re-validation skipped ({}): {} stored source(s) compiled again only",
                              run.no_gpu_reason, run.items.size());
  for (auto& r : store::runs_of(db, o.op))
    if (r.id == run.run_id) res.items = verdicts_of_run(db, r);
  return res;
}
}  // namespace

RecheckResult recheck(const RecheckOptions& o) {
  RecheckResult res;
  if (std::string error = named_candidates_error(o); !error.empty()) {
    res.code = 2;
    res.error = error;
    return res;
  }
  std::vector<std::string> models;
  {
    store::Store db(o.db);
    models = store::devices_of(db, o.op);
  }
  if (models.empty()) {
    res.skipped = fmt::format("no timed candidate of {} in the database: nothing to re-check", o.op);
    return res;
  }
  res = recheck_run(o, models, 1);
  if (!o.per_shape || !o.candidates.empty() || res.code != 0 || res.device == "(no GPU)") return res;
  // Further rounds: the shapes' champions now, less what this re-check judged.
  std::set<long long> judged;
  for (auto& i : res.items) judged.insert(i.candidate_id);
  for (int round = 2; round <= o.rounds; ++round) {
    RecheckOptions next = o;
    next.candidates.clear();
    {
      store::Store db(o.db);
      for (long long id : per_shape_ids(db, o.op, res.device))
        if (!judged.count(id)) next.candidates.push_back(id);
    }
    if (next.candidates.empty()) break;
    RecheckResult more = recheck_run(next, models, round);
    if (more.code != 0) {
      res.code = more.code;
      res.error = more.error;
      break;
    }
    res.runs.push_back(more.run_id);
    for (auto& i : more.items) {
      judged.insert(i.candidate_id);
      res.items.push_back(i);
    }
  }
  return res;
}

}  // namespace tessera::agent
