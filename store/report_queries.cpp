// store/report_queries.cpp — read-only queries for reports and re-checks.
#include "store/report_queries.h"

#include <fmt/format.h>

namespace tessera::store {

namespace {

class Q {
 public:
  Q(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw StoreError(fmt::format("SQL error: {} in: {}", sqlite3_errmsg(db), sql));
  }
  ~Q() { sqlite3_finalize(s_); }
  Q(const Q&) = delete;
  Q& operator=(const Q&) = delete;
  Q& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Q& bind(int i, long long v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(fmt::format("SQL error: {}", sqlite3_errmsg(db_)));
  }
  long long i64(int c) const { return sqlite3_column_int64(s_, c); }
  double f64(int c) const { return sqlite3_column_double(s_, c); }
  bool is_null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::string text(int c) const {
    auto p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, c)) : std::string();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

const char* kCols =
    "id, candidate_id, run_id, device, driver, host, spec_hash, status, message, geomean_speedup, max_rel_l2, "
    "roofline_fraction, seconds, clock_before, clock_after, report, created";

std::vector<ShapeRow> shapes_of(sqlite3* db, long long eval_id) {
  Q r(db,
      "SELECT shape, cand_median_ms, cand_min_ms, cand_p90_ms, cand_samples, base_median_ms, base_samples, speedup, "
      "floor_ms, roofline_fraction, rel_l2 FROM shape_results WHERE evaluation_id=? ORDER BY rowid");
  r.bind(1, eval_id);
  std::vector<ShapeRow> out;
  while (r.step()) {
    ShapeRow row;
    row.shape = r.text(0);
    row.cand_median_ms = r.f64(1);
    row.cand_min_ms = r.f64(2);
    row.cand_p90_ms = r.f64(3);
    row.cand_samples = static_cast<int>(r.i64(4));
    row.base_median_ms = r.f64(5);
    row.base_samples = static_cast<int>(r.i64(6));
    row.speedup = r.f64(7);
    row.floor_ms = r.f64(8);
    row.roofline_fraction = r.f64(9);
    row.rel_l2 = r.f64(10);
    out.push_back(row);
  }
  return out;
}

StoredEvaluation read(sqlite3* db, Q& s) {
  StoredEvaluation se;
  se.id = s.i64(0);
  auto& e = se.info;
  e.candidate_id = s.i64(1);
  e.run_id = s.i64(2);
  e.device = s.text(3);
  e.driver = s.text(4);
  e.host = s.text(5);
  e.spec_hash = s.text(6);
  e.status = s.text(7);
  e.message = s.text(8);
  e.geomean_speedup = s.f64(9);
  e.max_rel_l2 = s.f64(10);
  e.roofline_fraction = s.f64(11);
  e.seconds = s.f64(12);
  e.clock_before = s.f64(13);
  e.clock_after = s.f64(14);
  e.report_json = s.text(15);
  se.created = s.text(16);
  e.shapes = shapes_of(db, se.id);
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
      "e.roofline_fraction, e.id FROM candidates c JOIN evaluations e ON e.id = (SELECT id FROM evaluations WHERE "
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
    LeaderboardRow r;
    r.candidate_id = s.i64(0);
    r.template_name = s.text(1);
    r.params_json = s.text(2);
    r.status = s.text(3);
    r.device = s.text(4);
    r.created = s.text(5);
    r.origin = s.text(6);
    r.geomean_speedup = s.f64(7);
    r.max_rel_l2 = s.f64(8);
    r.roofline_fraction = s.f64(9);
    ids.push_back(s.i64(10));
    out.push_back(r);
  }
  for (size_t k = 0; k < out.size(); ++k) out[k].shapes = shapes_of(db.raw(), ids[k]);
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
  Q q(db.raw(), fmt::format("SELECT {} FROM evaluations WHERE candidate_id=? AND device=? AND status='ok' {} ORDER BY id "
                            "DESC LIMIT 1",
                            kCols, before_id > 0 ? "AND id<?" : ""));
  q.bind(1, candidate_id).bind(2, device);
  if (before_id > 0) q.bind(3, before_id);
  if (!q.step()) return std::nullopt;
  return read(db.raw(), q);
}

}  // namespace tessera::store
