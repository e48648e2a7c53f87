// store/merge.cpp — merging database shards into one history (see merge.h).
//
// The shard is ATTACHed to the output's connection and copied table by table,
// row by row, with the columns both databases have (a shard written by an older
// or newer tessera merges too). Identifier columns are remapped through maps
// built as the tables are copied: runs, then sources, exchanges, candidates,
// compiles, evaluations, shape rows, devices, and any other table both have.
#include "store/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <unordered_map>

namespace tessera::store {

namespace fs = std::filesystem;

namespace {

using IdMap = std::unordered_map<long long, long long>;

class Q {
 public:
  Q(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw StoreError(fmt::format("merge: SQL error: {} in: {}", sqlite3_errmsg(db), sql));
  }
  ~Q() { sqlite3_finalize(s_); }
  Q(const Q&) = delete;
  Q& operator=(const Q&) = delete;
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(sqlite3_errmsg(db_));
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, long long v) { sqlite3_bind_int64(s_, i, v); }
  void bind_value(int i, sqlite3_value* v) { sqlite3_bind_value(s_, i, v); }
  void bind_null(int i) { sqlite3_bind_null(s_, i); }
  sqlite3_value* value(int c) { return sqlite3_column_value(s_, c); }
  bool is_null(int c) { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  long long i64(int c) { return sqlite3_column_int64(s_, c); }
  std::string text(int c) {
    auto p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, c)) : std::string();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    throw StoreError(m);
  }
}

std::set<std::string> tables(sqlite3* db, const std::string& schema) {
  Q q(db, fmt::format("SELECT name FROM \"{}\".sqlite_master WHERE type='table'", schema));
  std::set<std::string> out;
  while (q.step()) out.insert(q.text(0));
  return out;
}

std::vector<std::string> columns(sqlite3* db, const std::string& schema, const std::string& table) {
  Q q(db, fmt::format("SELECT name FROM pragma_table_info('{}', '{}') ORDER BY cid", table, schema));
  std::vector<std::string> out;
  while (q.step()) out.push_back(q.text(0));
  return out;
}

// Columns both databases have, in the output's order, without `id`.
std::vector<std::string> common_columns(sqlite3* db, const std::string& table) {
  auto theirs = columns(db, "shard", table);
  std::set<std::string> t(theirs.begin(), theirs.end());
  std::vector<std::string> out;
  for (auto& c : columns(db, "main", table))
    if (c != "id" && t.count(c)) out.push_back(c);
  return out;
}

std::string joined(const std::vector<std::string>& cols, const std::string& fmt_each, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < cols.size(); ++i) {
    if (i) s += sep;
    s += fmt::format(fmt::runtime(fmt_each), cols[i]);
  }
  return s;
}

class Merger {
 public:
  Merger(sqlite3* db, MergeStats& st) : db_(db), st_(st) {}

  void run() {
    auto ours = tables(db_, "main"), theirs = tables(db_, "shard");
    for (const char* t : {"runs", "sources", "candidates", "evaluations"})
      if (!theirs.count(t)) throw StoreError(fmt::format("not a tessera database (no table '{}')", t));
    merge_runs();
    merge_sources();
    std::set<std::string> done = {"runs", "sources", "template_texts", "candidates", "meta", "run_uids", "devices"};
    if (theirs.count("exchanges") && ours.count("exchanges"))
      append("exchanges", &exchanges_), done.insert("exchanges");
    merge_candidates();
    for (const char* t : {"compiles", "evaluations", "shape_results"}) {
      if (!theirs.count(t)) continue;
      append(t, std::string(t) == "evaluations" ? &evaluations_ : nullptr);
      done.insert(t);
    }
    if (theirs.count("devices")) merge_devices();
    for (auto& t : theirs) {
      if (done.count(t) || t.rfind("sqlite_", 0) == 0) continue;
      if (!ours.count(t)) {
        st_.warnings.push_back(fmt::format("table '{}' of the shard is unknown to this tessera: not merged", t));
        continue;
      }
      append(t, nullptr);
    }
  }

 private:
  // Runs are recognised by their identity in run_uids.
  void merge_runs() {
    auto cols = common_columns(db_, "runs");
    auto& n = st_.tables["runs"];
    Q sel(db_,
          fmt::format("SELECT r.id, u.uid, {} FROM shard.runs r JOIN shard.run_uids u ON u.run_id = r.id ORDER BY r.id",
                      joined(cols, "r.\"{}\"", ", ")));
    Q find(db_, "SELECT run_id FROM main.run_uids WHERE uid=?");
    Q ins(db_,
          fmt::format("INSERT INTO main.runs({}) VALUES({})", joined(cols, "\"{}\"", ", "), joined(cols, "?", ", ")));
    Q tag(db_, "INSERT INTO main.run_uids(run_id, uid) VALUES(?, ?)");
    // A run merged while it was still going is completed from the shard later.
    bool has_finished = std::find(cols.begin(), cols.end(), "finished") != cols.end();
    std::unique_ptr<Q> upd;
    if (has_finished)
      upd = std::make_unique<Q>(
          db_, fmt::format("UPDATE main.runs SET {} WHERE id=? AND finished IS NULL", joined(cols, "\"{}\"=?", ", ")));
    while (sel.step()) {
      long long sid = sel.i64(0);
      std::string uid = sel.text(1);
      find.reset();
      find.bind(1, uid);
      if (find.step()) {
        runs_[sid] = find.i64(0);
        ++n.present;
        if (upd) {
          upd->reset();
          for (size_t i = 0; i < cols.size(); ++i)
            upd->bind_value(static_cast<int>(i + 1), sel.value(static_cast<int>(i + 2)));
          upd->bind(static_cast<int>(cols.size() + 1), runs_[sid]);
          upd->step();
        }
        continue;
      }
      ins.reset();
      for (size_t i = 0; i < cols.size(); ++i)
        ins.bind_value(static_cast<int>(i + 1), sel.value(static_cast<int>(i + 2)));
      ins.step();
      long long id = sqlite3_last_insert_rowid(db_);
      tag.reset();
      tag.bind(1, id);
      tag.bind(2, uid);
      tag.step();
      runs_[sid] = id;
      ++n.added;
    }
  }

  void merge_sources() {
    Q total(db_, "SELECT count(*) FROM shard.sources");
    total.step();
    long long added = 0;
    if (tables(db_, "shard").count("template_texts")) {  // a v4 shard: prefixes and shared template texts
      exec(db_, "INSERT OR IGNORE INTO main.template_texts(hash, text) SELECT hash, text FROM shard.template_texts");
      exec(db_,
           "INSERT OR IGNORE INTO main.sources(hash, text, template_hash) SELECT hash, text, template_hash FROM "
           "shard.sources");
      added = sqlite3_changes(db_);
    } else {
      exec(db_, "INSERT OR IGNORE INTO main.sources(hash, text) SELECT hash, text FROM shard.sources");
      added = sqlite3_changes(db_);
    }
    st_.tables["sources"] = {added, total.i64(0) - added};
  }

  // Candidates are recognised by content: (operator, source_hash, arch).
  void merge_candidates() {
    auto cols = common_columns(db_, "candidates");
    auto& n = st_.tables["candidates"];
    Q sel(db_, fmt::format("SELECT id, {} FROM shard.candidates ORDER BY id", joined(cols, "\"{}\"", ", ")));
    Q find(db_, "SELECT id FROM main.candidates WHERE operator=? AND source_hash=? AND arch=?");
    Q ins(db_, fmt::format("INSERT INTO main.candidates({}) VALUES({})", joined(cols, "\"{}\"", ", "),
                           joined(cols, "?", ", ")));
    auto col = [&](const char* name) {
      auto it = std::find(cols.begin(), cols.end(), name);
      return it == cols.end() ? -1 : static_cast<int>(it - cols.begin());
    };
    int c_op = col("operator"), c_hash = col("source_hash"), c_arch = col("arch"), c_parent = col("parent");
    std::vector<std::pair<long long, long long>> parents;  // (merged id, shard parent id)
    while (sel.step()) {
      long long sid = sel.i64(0);
      find.reset();
      find.bind_value(1, sel.value(c_op + 1));
      find.bind_value(2, sel.value(c_hash + 1));
      find.bind_value(3, sel.value(c_arch + 1));
      if (find.step()) {
        candidates_[sid] = find.i64(0);
        ++n.present;
        continue;
      }
      ins.reset();
      for (size_t i = 0; i < cols.size(); ++i) {
        int k = static_cast<int>(i);
        if (bind_mapped(ins, k + 1, cols[i], sel, k + 1, true)) continue;
        ins.bind_value(k + 1, sel.value(k + 1));
      }
      ins.step();
      long long id = sqlite3_last_insert_rowid(db_);
      candidates_[sid] = id;
      if (c_parent >= 0 && !sel.is_null(c_parent + 1)) parents.push_back({id, sel.i64(c_parent + 1)});
      ++n.added;
    }
    // Parents recorded after their children (rare) are linked once all are known.
    Q upd(db_, "UPDATE main.candidates SET parent=? WHERE id=? AND parent IS NULL");
    for (auto& [id, sp] : parents) {
      auto it = candidates_.find(sp);
      if (it == candidates_.end()) continue;
      upd.reset();
      upd.bind(1, it->second);
      upd.bind(2, id);
      upd.step();
    }
  }

  void merge_devices() {
    auto cols = common_columns(db_, "devices");
    Q total(db_, "SELECT count(*) FROM shard.devices");
    total.step();
    exec(db_, fmt::format("INSERT OR IGNORE INTO main.devices({0}) SELECT {0} FROM shard.devices",
                          joined(cols, "\"{}\"", ", ")));
    long long added = sqlite3_changes(db_);
    st_.tables["devices"] = {added, total.i64(0) - added};
  }

  // Binds the remapped value of an identifier column; true if the column is one.
  // Sets missing_ when the shard refers to a row it does not have.
  bool bind_mapped(Q& q, int param, const std::string& col, Q& sel, int c, bool candidates_table) {
    const IdMap* m = nullptr;
    if (col == "run_id")
      m = &runs_;
    else if (col == "candidate_id")
      m = &candidates_;
    else if (col == "evaluation_id")
      m = &evaluations_;
    else if (col == "exchange_id")
      m = &exchanges_;
    else if (col == "parent" && candidates_table) {
      // Linked in merge_candidates once every candidate is mapped.
      auto it = sel.is_null(c) ? candidates_.end() : candidates_.find(sel.i64(c));
      if (it == candidates_.end())
        q.bind_null(param);
      else
        q.bind(param, it->second);
      return true;
    }
    if (!m) return false;
    if (sel.is_null(c)) {
      q.bind_null(param);
      return true;
    }
    auto it = m->find(sel.i64(c));
    if (it == m->end()) {
      // run_id 0 (or a run the shard lacks) is kept as it is; other dangling
      // references make the row unmergeable.
      if (col == "run_id" && sel.i64(c) == 0)
        q.bind(param, 0LL);
      else if (col == "run_id" || col == "exchange_id")
        q.bind_null(param);
      else
        missing_ = true;
      return true;
    }
    q.bind(param, it->second);
    return true;
  }

  // An append-only table: a row whose (remapped) content is already there is
  // recognised, not copied again.
  void append(const std::string& table, IdMap* own) {
    auto cols = common_columns(db_, table);
    if (cols.empty()) return;
    auto& n = st_.tables[table];
    bool has_id = !columns(db_, "shard", table).empty() && columns(db_, "shard", table)[0] == "id";
    Q sel(db_, fmt::format("SELECT {}, {} FROM shard.\"{}\" ORDER BY rowid", has_id ? "id" : "rowid",
                           joined(cols, "\"{}\"", ", "), table));
    // The first identifier column leads the lookup so an index on it is used.
    Q find(db_,
           fmt::format("SELECT rowid FROM main.\"{}\" WHERE {} LIMIT 1", table, joined(cols, "\"{}\" IS ?", " AND ")));
    Q ins(db_, fmt::format("INSERT INTO main.\"{}\"({}) VALUES({})", table, joined(cols, "\"{}\"", ", "),
                           joined(cols, "?", ", ")));
    long long skipped = 0;
    while (sel.step()) {
      missing_ = false;
      find.reset();
      ins.reset();
      for (size_t i = 0; i < cols.size(); ++i) {
        int k = static_cast<int>(i);
        if (bind_mapped(find, k + 1, cols[i], sel, k + 1, false)) {
          bind_mapped(ins, k + 1, cols[i], sel, k + 1, false);
          continue;
        }
        find.bind_value(k + 1, sel.value(k + 1));
        ins.bind_value(k + 1, sel.value(k + 1));
      }
      if (missing_) {
        ++skipped;
        continue;
      }
      long long id;
      if (find.step()) {
        id = find.i64(0);
        ++n.present;
      } else {
        ins.step();
        id = sqlite3_last_insert_rowid(db_);
        ++n.added;
      }
      if (own) (*own)[sel.i64(0)] = id;
    }
    if (skipped)
      st_.warnings.push_back(
          fmt::format("{}: {} row(s) refer to rows the shard does not have; not merged", table, skipped));
  }

  sqlite3* db_;
  MergeStats& st_;
  IdMap runs_, candidates_, evaluations_, exchanges_;
  bool missing_ = false;
};

}  // namespace

void tag_runs(sqlite3* db, const std::string& schema) {
  exec(db,
       fmt::format("CREATE TABLE IF NOT EXISTS \"{0}\".run_uids(run_id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE)",
                   schema));
  exec(db,
       fmt::format("INSERT INTO \"{0}\".run_uids(run_id, uid) SELECT id, lower(hex(randomblob(16))) FROM \"{0}\".runs "
                   "WHERE id NOT IN (SELECT run_id FROM \"{0}\".run_uids)",
                   schema));
}

MergeStats merge_shard(Store& out, const std::string& shard_path) {
  std::error_code ec;
  if (!fs::is_regular_file(shard_path, ec)) throw StoreError(fmt::format("{}: no such database", shard_path));
  sqlite3* db = out.raw();
  {
    Q q(db, "SELECT file FROM pragma_database_list WHERE name='main'");
    if (q.step() && fs::equivalent(q.text(0), shard_path, ec))
      throw StoreError(fmt::format("{}: is the output database itself", shard_path));
  }
  try {
    Q a(db, "ATTACH DATABASE ? AS shard");
    a.bind(1, shard_path);
    a.step();
  } catch (StoreError& e) {
    throw StoreError(fmt::format("{}: cannot open it as a tessera database ({})", shard_path, e.what()));
  }
  MergeStats st;
  auto detach = [&] { sqlite3_exec(db, "DETACH DATABASE shard", nullptr, nullptr, nullptr); };
  try {
    try {
      if (!tables(db, "shard").count("runs")) throw StoreError("no table 'runs'");
    } catch (StoreError& e) {
      throw StoreError(fmt::format("{}: cannot open it as a tessera database ({})", shard_path, e.what()));
    }
    refuse_newer_schema(db, "shard", shard_path);  // a newer tessera's shard is neither read nor tagged
    // Identities first, each database in its own short transaction.
    try {
      exec(db, "BEGIN IMMEDIATE");
      tag_runs(db, "shard");
      exec(db, "COMMIT");
    } catch (StoreError& e) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw StoreError(fmt::format("{}: cannot record run identities in the shard ({}); merge needs it writable",
                                   shard_path, e.what()));
    }
    exec(db, "BEGIN IMMEDIATE");
    try {
      tag_runs(db, "main");
      Merger(db, st).run();
      exec(db, "COMMIT");
    } catch (StoreError& e) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw StoreError(fmt::format("{}: {}", shard_path, e.what()));
    }
  } catch (...) {
    detach();
    throw;
  }
  detach();
  return st;
}

}  // namespace tessera::store
