// store/report_queries.cpp — read-only queries for reports and re-checks.
#include "store/report_queries.h"

#include <fmt/format.h>

#include "store/statement.h"

namespace tessera::store {

namespace {

using Q = sql::Stmt;

const char* kCols =
    "id, candidate_id, run_id, device, driver, host, spec_hash, status, message, geomean_speedup, max_rel_l2, "
    "roofline_fraction, seconds, clock_before, clock_after, report, created";

StoredEvaluation read(sqlite3* db, Q& s) {
  StoredEvaluation se;
  se.id = s.i64(0);
  se.info = read_eval(db, s);
  se.created = s.text(16);
  return se;
}

}  // namespace

std::vector<std::string> operators_in(Store& db) {
  Q q(db.raw(), "SELECT DISTINCT operator FROM candidates ORDER BY operator");
  std::vector<std::string> out;
  while (q.step()) out.push_back(q.text(0));
  return out;
}

std::vector<RunRow> runs_of(Store& db, const std::string& op) {
  Q q(db.raw(),
      "SELECT r.id, r.operator, r.started, r.finished, r.strategy, r.proposer, r.arch, r.device, r.host, r.budget, "
      "r.settings, r.status, r.gpu_busy_fraction, (SELECT count(*) FROM evaluations e WHERE e.run_id=r.id), "
      "(SELECT count(*) FROM evaluations e WHERE e.run_id=r.id AND e.status NOT IN ('compiled','compile_error',"
      "'not_applicable','rejected_static','resource_limit')) FROM runs r WHERE r.operator=? ORDER BY r.started, r.id");
  q.bind(1, op);
  std::vector<RunRow> out;
  while (q.step()) {
    RunRow r;
    r.id = q.i64(0);
    r.op = q.text(1);
    r.started = q.text(2);
    r.finished = q.text(3);
    r.strategy = q.text(4);
    r.proposer = q.text(5);
    r.arch = q.text(6);
    r.device = q.text(7);
    r.host = q.text(8);
    r.budget = q.i64(9);
    r.settings = q.text(10);
    r.status = q.text(11);
    if (!q.is_null(12)) r.gpu_busy_fraction = q.f64(12);
    r.evaluations = q.i64(13);
    r.timed = q.i64(14);
    out.push_back(r);
  }
  return out;
}

std::vector<TimelinePoint> ok_timeline(Store& db, const std::string& op) {
  Q q(db.raw(),
      "SELECT e.id, e.candidate_id, e.created, e.device, e.geomean_speedup FROM evaluations e JOIN candidates c ON "
      "c.id=e.candidate_id WHERE c.operator=? AND e.status='ok' ORDER BY e.created, e.id");
  q.bind(1, op);
  std::vector<TimelinePoint> out;
  while (q.step()) out.push_back({q.i64(0), q.i64(1), q.text(2), q.text(3), q.f64(4)});
  return out;
}

std::vector<LeaderboardRow> timed_leaderboard(Store& db, const std::string& op, const std::string& device, int limit) {
  std::string sql = fmt::format(
      "SELECT c.id, c.template, c.params, e.status, e.device, e.created, c.origin, e.geomean_speedup, e.max_rel_l2, "
      "e.roofline_fraction, e.id, c.parent FROM candidates c JOIN evaluations e ON e.id = (SELECT id FROM evaluations "
      "WHERE "
      "candidate_id=c.id AND status<>'compiled' {} ORDER BY id DESC LIMIT 1) WHERE c.operator=? "
      "ORDER BY (e.status='ok') DESC, e.geomean_speedup DESC, c.id LIMIT ?",
      device.empty() ? "" : "AND device=?");
  Q s(db.raw(), sql);
  int i = 1;
  if (!device.empty()) s.bind(i++, device);
  s.bind(i++, op);
  s.bind(i++, static_cast<long long>(limit));
  std::vector<LeaderboardRow> out;
  std::vector<long long> ids;
  while (s.step()) {
    LeaderboardRow r = leaderboard_row(s);
    ids.push_back(s.i64(10));
    out.push_back(r);
  }
  for (size_t k = 0; k < out.size(); ++k) out[k].shapes = read_shape_rows(db.raw(), ids[k]);
  return out;
}

std::vector<std::string> devices_of(Store& db, const std::string& op) {
  Q q(db.raw(),
      "SELECT e.device, max(e.id) AS last FROM evaluations e JOIN candidates c ON c.id=e.candidate_id WHERE "
      "c.operator=? AND e.status='ok' GROUP BY e.device ORDER BY last DESC");
  q.bind(1, op);
  std::vector<std::string> out;
  while (q.step()) out.push_back(q.text(0));
  return out;
}

std::string leaderboard_device(Store& db, const std::string& op, const std::string& asked, std::string* note) {
  if (!asked.empty()) return asked;
  const auto models = devices_of(db, op);
  if (models.size() < 2) return "";
  if (note) {
    std::string others;
    for (size_t k = 1; k < models.size(); ++k) others += (k > 1 ? ", " : "") + models[k];
    *note = fmt::format("{} (the GPU model of the latest evaluation; this history also has {}: --device to choose)",
                        models[0], others);
  }
  return models[0];
}

std::optional<StoredEvaluation> evaluation(Store& db, long long id) {
  Q q(db.raw(), fmt::format("SELECT {} FROM evaluations WHERE id=?", kCols));
  q.bind(1, id);
  if (!q.step()) return std::nullopt;
  return read(db.raw(), q);
}

std::vector<StoredEvaluation> evaluations_of_run(Store& db, long long run_id) {
  Q q(db.raw(), fmt::format("SELECT {} FROM evaluations WHERE run_id=? ORDER BY id", kCols));
  q.bind(1, run_id);
  std::vector<StoredEvaluation> out;
  while (q.step()) out.push_back(read(db.raw(), q));
  return out;
}

std::optional<StoredEvaluation> previous_ok(Store& db, long long candidate_id, const std::string& device,
                                            long long before_id) {
  Q q(db.raw(),
      fmt::format("SELECT {} FROM evaluations WHERE candidate_id=? AND device=? AND status='ok' {} ORDER BY id "
                  "DESC LIMIT 1",
                  kCols, before_id > 0 ? "AND id<?" : ""));
  q.bind(1, candidate_id).bind(2, device);
  if (before_id > 0) q.bind(3, before_id);
  if (!q.step()) return std::nullopt;
  return read(db.raw(), q);
}

}  // namespace tessera::store
