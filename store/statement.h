// store/statement.h — the one small wrapper over a prepared SQLite statement
// that every query file of store/ uses (positional binding, typed column reads,
// finalized on scope exit, errors as StoreError), and the reader of a stored
// evaluation's per-shape rows. Internal to store/.
#pragma once

#include <fmt/format.h>
#include <sqlite3.h>

#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace tessera::store::sql {

// A prepared statement with positional binding, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : Stmt(db, sql.c_str()) {}
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw StoreError(fmt::format("SQL error: {} in: {}", sqlite3_errmsg(db), sql));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, long long v) { return check(sqlite3_bind_int64(s_, i, v)); }
  Stmt& bind(int i, int v) { return check(sqlite3_bind_int64(s_, i, v)); }
  Stmt& bind(int i, double v) { return check(sqlite3_bind_double(s_, i, v)); }
  Stmt& bind(int i, const std::string& v) {
    return check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Stmt& bind(int i, std::nullptr_t) { return check(sqlite3_bind_null(s_, i)); }
  Stmt& bind(int i, const std::optional<long long>& v) { return v ? bind(i, *v) : bind(i, nullptr); }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(fmt::format("SQL error: {}", sqlite3_errmsg(db_)));
  }
  long long i64(int c) const { return sqlite3_column_int64(s_, c); }
  double f64(int c) const { return sqlite3_column_double(s_, c); }
  bool is_null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  int columns() const { return sqlite3_column_count(s_); }
  std::string text(int c) const {
    auto p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, c)) : std::string();
  }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) throw StoreError(fmt::format("SQL bind error: {}", sqlite3_errmsg(db_)));
    return *this;
  }
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace tessera::store::sql

namespace tessera::store {

// The per-shape rows of one evaluation, in the order they were stored.
inline std::vector<ShapeRow> read_shape_rows(sqlite3* db, long long evaluation_id) {
  sql::Stmt r(db,
              "SELECT shape, cand_median_ms, cand_min_ms, cand_p90_ms, cand_samples, base_median_ms, base_samples, "
              "speedup, floor_ms, roofline_fraction, rel_l2 FROM shape_results WHERE evaluation_id=? ORDER BY rowid");
  r.bind(1, evaluation_id);
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

// An evaluation from the columns id, candidate_id, run_id, device, driver, host,
// spec_hash, status, message, geomean_speedup, max_rel_l2, roofline_fraction,
// seconds, clock_before, clock_after, report (from column 0), with its shape rows.
inline EvaluationInfo read_eval(sqlite3* db, const sql::Stmt& s) {
  EvaluationInfo e;
  long long id = s.i64(0);
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
  e.printed = s.text(16);
  e.printed_bytes = s.i64(17);
  e.shapes = read_shape_rows(db, id);
  return e;
}

// A leaderboard row from the columns c.id, c.template, c.params, e.status,
// e.device, e.created, c.origin, e.geomean_speedup, e.max_rel_l2,
// e.roofline_fraction (in that order, from column 0), c.parent as column 11 and e.run_id
// as column 12 when the query has them; shapes are not filled.
inline LeaderboardRow leaderboard_row(const sql::Stmt& s) {
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
  if (s.columns() > 11 && !s.is_null(11)) r.parent = s.i64(11);
  if (s.columns() > 12 && !s.is_null(12)) r.run_id = s.i64(12);
  return r;
}

}  // namespace tessera::store
