// store/store.cpp — schema, migrations and queries of tessera's SQLite history.
#include "store/store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <thread>

#include "store/statement.h"

namespace tessera::store {

using sql::Stmt;

std::string now_iso() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

namespace {

const char* kSchemaV1 = R"SQL(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY, operator TEXT NOT NULL, started TEXT NOT NULL, finished TEXT,
  strategy TEXT, proposer TEXT, arch TEXT, device TEXT, host TEXT, budget INTEGER,
  settings TEXT, status TEXT, gpu_busy_fraction REAL);
CREATE TABLE IF NOT EXISTS sources(hash TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS candidates(
  id INTEGER PRIMARY KEY, operator TEXT NOT NULL, template TEXT, params TEXT,
  source_hash TEXT NOT NULL REFERENCES sources(hash), arch TEXT NOT NULL, origin TEXT,
  parent INTEGER REFERENCES candidates(id), run_id INTEGER, created TEXT NOT NULL,
  UNIQUE(operator, source_hash, arch));
CREATE TABLE IF NOT EXISTS compiles(
  id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES candidates(id), ok INTEGER NOT NULL,
  seconds REAL, log TEXT, registers INTEGER, spill_bytes INTEGER, smem INTEGER, cache_key TEXT, created TEXT);
CREATE TABLE IF NOT EXISTS evaluations(
  id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES candidates(id), run_id INTEGER,
  device TEXT, driver TEXT, host TEXT, spec_hash TEXT, status TEXT NOT NULL, message TEXT,
  geomean_speedup REAL, max_rel_l2 REAL, roofline_fraction REAL, seconds REAL,
  clock_before REAL, clock_after REAL, report TEXT, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS shape_results(
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id), shape TEXT NOT NULL,
  cand_median_ms REAL, cand_min_ms REAL, cand_p90_ms REAL, cand_samples INTEGER,
  base_median_ms REAL, base_samples INTEGER, speedup REAL, floor_ms REAL,
  roofline_fraction REAL, rel_l2 REAL);
CREATE TABLE IF NOT EXISTS devices(
  name TEXT NOT NULL, driver TEXT NOT NULL, host TEXT, measured TEXT,
  copy_bytes_per_s REAL, bf16_flops_per_s REAL, PRIMARY KEY(name, driver));
CREATE INDEX IF NOT EXISTS evaluations_by_candidate ON evaluations(candidate_id);
CREATE INDEX IF NOT EXISTS candidates_by_operator ON candidates(operator);
)SQL";

// Version 2: LLM exchanges, and on candidates the exchange that proposed them and
// the launch plan of programs that are not in spec.json. Applied to a v1 database
// in place (new table, new nullable columns); v1 readers ignore both.
const char* kSchemaV2Exchanges = R"SQL(
CREATE TABLE IF NOT EXISTS exchanges(
  id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id), turn INTEGER, provider TEXT, model TEXT,
  fingerprint TEXT, request TEXT NOT NULL, response TEXT, finish_reason TEXT,
  prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL, elapsed_s REAL,
  http_status INTEGER, attempts INTEGER, error TEXT, error_kind TEXT, outcome TEXT, created TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS exchanges_by_run ON exchanges(run_id);
)SQL";

// Version 4: a template's text once. A sources row with a template_hash holds in
// `text` only the rendered prefix (the variant comment, one #define per parameter,
// "#line 1"); its full text is that prefix followed by template_texts.text. The
// store keeps the renderer's output split rather than re-rendering from the
// parameters: it needs no renderer (store links only SQLite), the rebuilt text is
// byte-identical by construction, and sources.hash (which candidates, resume and
// merge match on) stays the hash of the rendered text. Rows that are not a
// rendering (LLM programs) keep their full text with a NULL template_hash.
// v3 readers would read the prefix alone, so a v4 database is for v4 tessera.
const char* kSchemaV4Templates = R"SQL(
CREATE TABLE IF NOT EXISTS template_texts(hash TEXT PRIMARY KEY, text TEXT NOT NULL);
)SQL";

// 64-bit FNV-1a of the template text, hex: a stable key for template_texts.
std::string template_text_hash(const std::string& text) {
  unsigned long long h = 1469598103934665603ULL;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

}  // namespace

// codegen::render writes "// tessera variant: ...\n", one "#define K V\n" per
// parameter, "#line 1\n", then the template text; the prefix is everything up to and
// including the first "#line 1" line.
std::optional<std::string> split_rendered(const std::string& text) {
  static const std::string head = "// tessera variant:", line = "\n#line 1\n";
  if (text.rfind(head, 0) != 0) return std::nullopt;
  auto at = text.find(line);
  if (at == std::string::npos) return std::nullopt;
  return text.substr(0, at + line.size());
}

void refuse_newer_schema(sqlite3* db, const std::string& schema, const std::string& path) {
  {
    Stmt has(db, fmt::format("SELECT 1 FROM \"{}\".sqlite_master WHERE type='table' AND name='meta'", schema));
    if (!has.step()) return;
  }
  Stmt s(db, fmt::format("SELECT value FROM \"{}\".meta WHERE key='schema_version'", schema));
  if (!s.step()) return;
  const std::string text = s.text(0);
  const bool number = !text.empty() && text.size() < 10 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!number)
    throw NewerSchema(fmt::format("{}: schema version '{}' is not a number; this tessera knows versions up to {}", path,
                                  text, kSchemaVersion));
  const int version = std::stoi(text);
  if (version > kSchemaVersion)
    throw NewerSchema(fmt::format(
        "{}: schema version {} is newer than this tessera's ({}): the database was written by a newer tessera, "
        "which is needed to read it (this one neither reads nor changes it)",
        path, version, kSchemaVersion));
}

Store::Store(const std::string& path) : path_(path) {
  std::filesystem::path p(path);
  if (p.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
  }
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(fmt::format("cannot open database {}: {}", path, msg));
  }
  sqlite3_busy_timeout(db_, 30000);
  // Two processes opening one new database at once race to switch it to WAL
  // and to create the schema; SQLite answers the loser "locked" at once, without
  // its busy handler. Such a race is retried for up to the busy timeout.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int attempt = 0;; ++attempt) {
    try {
      refuse_newer_schema(db_, "main", path);  // before anything is written to it
      exec("PRAGMA journal_mode=WAL");
      exec("PRAGMA foreign_keys=ON");
      exec("PRAGMA synchronous=NORMAL");
      migrate();
      break;
    } catch (NewerSchema&) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    } catch (StoreError& e) {
      int code = sqlite3_errcode(db_);  // (a ROLLBACK after a failed BEGIN may have replaced it)
      std::string what = e.what();
      bool contended = code == SQLITE_BUSY || code == SQLITE_LOCKED || what.find("locked") != std::string::npos ||
                       what.find("busy") != std::string::npos;
      if (contended && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(200, 5 << std::min(attempt, 5))));
        continue;
      }
      sqlite3_close(db_);
      db_ = nullptr;
      throw StoreError(fmt::format("{} is not a usable tessera database: {}", path, e.what()));
    }
  }
}

Store::~Store() {
  if (db_) sqlite3_close(db_);
}

void Store::exec(const std::string& sql) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown";
    sqlite3_free(err);
    throw StoreError(m);
  }
}

int Store::schema_version() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_, "SELECT value FROM meta WHERE key='schema_version'");
  return s.step() ? std::stoi(s.text(0)) : 0;
}

// Splits the full copies of rendered sources into prefix + shared template text,
// verifying that the pieces rebuild the text byte for byte before dropping it.
void Store::share_template_texts() {
  std::vector<std::pair<std::string, std::string>> rows;
  {
    Stmt s(db_, "SELECT hash, text FROM sources WHERE template_hash IS NULL");
    while (s.step()) rows.emplace_back(s.text(0), s.text(1));
  }
  for (auto& [hash, text] : rows) {
    auto split = keep_template_text(text);
    if (!split) continue;
    Stmt up(db_, "UPDATE sources SET text=?, template_hash=? WHERE hash=?");
    up.bind(1, split->first).bind(2, split->second).bind(3, hash);
    up.step();
    if (source(hash) != text) throw StoreError(fmt::format("source {} does not rebuild after the v4 split", hash));
  }
}

// Stores the template part of a rendered source once; returns (prefix, template
// hash), or nothing when the text is not a rendering (an LLM program) or its
// template hash is taken by another text.
std::optional<std::pair<std::string, std::string>> Store::keep_template_text(const std::string& text) {
  auto split = split_rendered(text);
  if (!split) return std::nullopt;
  std::string body = text.substr(split->size());
  std::string th = template_text_hash(body);
  Stmt ins(db_, "INSERT OR IGNORE INTO template_texts(hash, text) VALUES(?, ?)");
  ins.bind(1, th).bind(2, body);
  ins.step();
  Stmt get(db_, "SELECT text FROM template_texts WHERE hash=?");
  get.bind(1, th);
  if (!get.step() || get.text(0) != body) return std::nullopt;
  return std::make_pair(*split, th);
}

void Store::migrate() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  exec("BEGIN IMMEDIATE");
  try {
    refuse_newer_schema(db_, "main", path_);  // again under the lock: a newer tessera may have migrated it since
    exec(kSchemaV1);
    exec("INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', '1')");
    auto has_column = [&](const char* table, const char* column) {
      Stmt s(db_, fmt::format("SELECT 1 FROM pragma_table_info('{}') WHERE name='{}'", table, column).c_str());
      return s.step();
    };
    if (schema_version() < 2) {
      exec(kSchemaV2Exchanges);
      if (!has_column("candidates", "exchange_id"))
        exec("ALTER TABLE candidates ADD COLUMN exchange_id INTEGER REFERENCES exchanges(id)");
      if (!has_column("candidates", "plan")) exec("ALTER TABLE candidates ADD COLUMN plan TEXT");
      exec("UPDATE meta SET value='2' WHERE key='schema_version'");
    }
    // Version 3: what a candidate printed while it was judged, per evaluation (nullable
    // columns added in place; v2 readers ignore them).
    if (schema_version() < 3) {
      if (!has_column("evaluations", "printed")) exec("ALTER TABLE evaluations ADD COLUMN printed TEXT");
      if (!has_column("evaluations", "printed_bytes")) exec("ALTER TABLE evaluations ADD COLUMN printed_bytes INTEGER");
      exec("UPDATE meta SET value='3' WHERE key='schema_version'");
    }
    // Version 4: a rendered candidate is its variant prefix plus its template's text,
    // and the template text is kept once (see split_rendered).
    if (schema_version() < 4) {
      exec(kSchemaV4Templates);
      if (!has_column("sources", "template_hash")) exec("ALTER TABLE sources ADD COLUMN template_hash TEXT");
      share_template_texts();
      exec("UPDATE meta SET value='4' WHERE key='schema_version'");
    }
    static_assert(kSchemaVersion == 4, "a new schema version needs its migration step above");
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

long long Store::begin_run(const RunInfo& r) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_,
         "INSERT INTO runs(operator, started, strategy, proposer, arch, device, host, budget, settings, status) "
         "VALUES(?,?,?,?,?,?,?,?,?,'running')");
  s.bind(1, r.op).bind(2, now_iso()).bind(3, r.strategy).bind(4, r.proposer).bind(5, r.arch).bind(6, r.device);
  s.bind(7, r.host).bind(8, r.budget).bind(9, r.settings);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

void Store::finish_run(long long run_id, const std::string& status, double busy) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_, "UPDATE runs SET finished=?, status=?, gpu_busy_fraction=? WHERE id=?");
  s.bind(1, now_iso()).bind(2, status).bind(3, busy).bind(4, run_id);
  s.step();
}

void Store::set_run_per_gpu(long long run_id, const nlohmann::json& per_gpu) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  exec("BEGIN IMMEDIATE");
  try {
    std::string text;
    {
      Stmt get(db_, "SELECT settings FROM runs WHERE id=?");
      get.bind(1, run_id);
      if (get.step()) text = get.text(0);
    }
    nlohmann::json settings = nlohmann::json::parse(text.empty() ? "{}" : text, nullptr, false);
    if (!settings.is_object()) settings = {{"previous_settings", text}};
    settings["per_gpu"] = per_gpu;
    {
      Stmt put(db_, "UPDATE runs SET settings=? WHERE id=?");
      put.bind(1, settings.dump()).bind(2, run_id);
      put.step();
    }
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

long long Store::add_candidate(const CandidateInfo& c, const std::string& source) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  exec("BEGIN IMMEDIATE");
  try {
    bool known = false;
    {
      Stmt has(db_, "SELECT 1 FROM sources WHERE hash=?");
      has.bind(1, c.source_hash);
      known = has.step();
    }
    if (!known) {
      auto split = keep_template_text(source);
      Stmt src(db_, "INSERT INTO sources(hash, text, template_hash) VALUES(?, ?, ?)");
      src.bind(1, c.source_hash).bind(2, split ? split->first : source);
      if (split)
        src.bind(3, split->second);
      else
        src.bind(3, nullptr);
      src.step();
    }
    Stmt ins(db_,
             "INSERT OR IGNORE INTO candidates(operator, template, params, source_hash, arch, origin, parent, run_id, "
             "created, exchange_id, plan) VALUES(?,?,?,?,?,?,?,?,?,?,?)");
    ins.bind(1, c.op).bind(2, c.template_name).bind(3, c.params_json).bind(4, c.source_hash).bind(5, c.arch);
    ins.bind(6, c.origin).bind(7, c.parent).bind(8, c.run_id).bind(9, now_iso()).bind(10, c.exchange_id);
    if (c.plan_json.empty())
      ins.bind(11, nullptr);
    else
      ins.bind(11, c.plan_json);
    ins.step();
    Stmt q(db_, "SELECT id FROM candidates WHERE operator=? AND source_hash=? AND arch=?");
    q.bind(1, c.op).bind(2, c.source_hash).bind(3, c.arch);
    q.step();
    long long id = q.i64(0);
    if (!c.plan_json.empty()) {  // a known source judged again: it keeps the plan of its latest judging
      Stmt up(db_, "UPDATE candidates SET plan=? WHERE id=? AND (plan IS NULL OR plan<>?)");
      up.bind(1, c.plan_json).bind(2, id).bind(3, c.plan_json);
      up.step();
    }
    exec("COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<CandidateInfo> Store::candidate(long long id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_,
         "SELECT id, operator, template, params, source_hash, arch, origin, parent, run_id, created, exchange_id, plan "
         "FROM candidates WHERE id=?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  CandidateInfo c;
  c.id = s.i64(0);
  c.op = s.text(1);
  c.template_name = s.text(2);
  c.params_json = s.text(3);
  c.source_hash = s.text(4);
  c.arch = s.text(5);
  c.origin = s.text(6);
  if (!s.is_null(7)) c.parent = s.i64(7);
  c.run_id = s.i64(8);
  c.created = s.text(9);
  if (!s.is_null(10)) c.exchange_id = s.i64(10);
  c.plan_json = s.text(11);
  return c;
}

std::optional<std::string> Store::source(const std::string& hash) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_,
         "SELECT s.text, s.template_hash, t.text FROM sources s LEFT JOIN template_texts t ON t.hash = s.template_hash "
         "WHERE s.hash=?");
  s.bind(1, hash);
  if (!s.step()) return std::nullopt;
  if (s.is_null(1)) return s.text(0);
  if (s.is_null(2)) throw StoreError(fmt::format("source {}: template text {} is missing", hash, s.text(1)));
  return s.text(0) + s.text(2);
}

void Store::add_compile(long long cid, const CompileInfo& c) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_,
         "INSERT INTO compiles(candidate_id, ok, seconds, log, registers, spill_bytes, smem, cache_key, created) "
         "VALUES(?,?,?,?,?,?,?,?,?)");
  s.bind(1, cid).bind(2, c.ok ? 1 : 0).bind(3, c.seconds).bind(4, c.log).bind(5, c.registers).bind(6, c.spill_bytes);
  s.bind(7, c.smem).bind(8, c.cache_key).bind(9, now_iso());
  s.step();
}

std::optional<CompileInfo> Store::last_compile(long long cid) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_,
         "SELECT ok, seconds, log, registers, spill_bytes, smem, cache_key FROM compiles WHERE candidate_id=? ORDER BY "
         "id DESC LIMIT 1");
  s.bind(1, cid);
  if (!s.step()) return std::nullopt;
  CompileInfo c;
  c.ok = s.i64(0) != 0;
  c.seconds = s.f64(1);
  c.log = s.text(2);
  c.registers = static_cast<int>(s.i64(3));
  c.spill_bytes = static_cast<int>(s.i64(4));
  c.smem = static_cast<int>(s.i64(5));
  c.cache_key = s.text(6);
  return c;
}

long long Store::add_evaluation(const EvaluationInfo& e) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  exec("BEGIN IMMEDIATE");
  try {
    Stmt s(db_,
           "INSERT INTO evaluations(candidate_id, run_id, device, driver, host, spec_hash, status, message, "
           "geomean_speedup, max_rel_l2, roofline_fraction, seconds, clock_before, clock_after, report, created, "
           "printed, printed_bytes) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    s.bind(1, e.candidate_id).bind(2, e.run_id).bind(3, e.device).bind(4, e.driver).bind(5, e.host);
    s.bind(6, e.spec_hash).bind(7, e.status).bind(8, e.message).bind(9, e.geomean_speedup).bind(10, e.max_rel_l2);
    s.bind(11, e.roofline_fraction).bind(12, e.seconds).bind(13, e.clock_before).bind(14, e.clock_after);
    s.bind(15, e.report_json).bind(16, now_iso()).bind(17, e.printed).bind(18, e.printed_bytes);
    s.step();
    long long id = sqlite3_last_insert_rowid(db_);
    for (auto& r : e.shapes) {
      Stmt sr(db_,
              "INSERT INTO shape_results(evaluation_id, shape, cand_median_ms, cand_min_ms, cand_p90_ms, cand_samples, "
              "base_median_ms, base_samples, speedup, floor_ms, roofline_fraction, rel_l2) "
              "VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
      sr.bind(1, id).bind(2, r.shape).bind(3, r.cand_median_ms).bind(4, r.cand_min_ms).bind(5, r.cand_p90_ms);
      sr.bind(6, r.cand_samples).bind(7, r.base_median_ms).bind(8, r.base_samples).bind(9, r.speedup);
      sr.bind(10, r.floor_ms).bind(11, r.roofline_fraction).bind(12, r.rel_l2);
      sr.step();
    }
    exec("COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

namespace {
const char* kEvalCols =
    "id, candidate_id, run_id, device, driver, host, spec_hash, status, message, geomean_speedup, max_rel_l2, "
    "roofline_fraction, seconds, clock_before, clock_after, report, printed, printed_bytes";

}  // namespace

std::optional<EvaluationInfo> Store::last_evaluation(long long cid, const std::string& device,
                                                     const std::string& spec_hash) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::string sql = fmt::format(
      "SELECT {} FROM evaluations WHERE candidate_id=? AND device=? AND spec_hash=? ORDER BY id DESC LIMIT 1",
      kEvalCols);
  Stmt s(db_, sql.c_str());
  s.bind(1, cid).bind(2, device).bind(3, spec_hash);
  if (!s.step()) return std::nullopt;
  return read_eval(db_, s);
}

std::vector<EvaluationInfo> Store::evaluations(long long cid) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::string sql = fmt::format("SELECT {} FROM evaluations WHERE candidate_id=? ORDER BY id", kEvalCols);
  Stmt s(db_, sql.c_str());
  s.bind(1, cid);
  std::vector<EvaluationInfo> out;
  while (s.step()) out.push_back(read_eval(db_, s));
  return out;
}

std::map<std::string, double> Store::baseline_medians(const std::string& op, const std::string& device,
                                                      const std::string& spec_hash) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_,
         "SELECT r.shape, r.base_median_ms FROM shape_results r JOIN evaluations e ON e.id = r.evaluation_id "
         "JOIN candidates c ON c.id = e.candidate_id WHERE c.operator=? AND e.device=? AND e.spec_hash=? "
         "AND e.status='ok' AND r.base_median_ms > 0");
  s.bind(1, op).bind(2, device).bind(3, spec_hash);
  std::map<std::string, std::vector<double>> seen;
  while (s.step()) seen[s.text(0)].push_back(s.f64(1));
  std::map<std::string, double> out;
  for (auto& [shape, xs] : seen) {
    std::sort(xs.begin(), xs.end());
    size_t n = xs.size();
    out[shape] = n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
  }
  return out;
}

std::string Store::status_of(long long cid) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_, "SELECT status FROM evaluations WHERE candidate_id=? ORDER BY id DESC LIMIT 1");
  s.bind(1, cid);
  if (s.step()) return s.text(0);
  auto c = last_compile(cid);
  if (!c) return "proposed";
  return c->ok ? "compiled" : "compile_error";
}

std::vector<LeaderboardRow> Store::leaderboard(const std::string& op, const std::string& status_filter, int limit,
                                               const std::string& device) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  // The latest evaluation of each candidate (on the model); ranked by speedup among those timed.
  std::string sql = fmt::format(
      "SELECT c.id, c.template, c.params, e.status, e.device, e.created, c.origin, e.geomean_speedup, e.max_rel_l2, "
      "e.roofline_fraction, e.id, c.parent, e.run_id FROM candidates c JOIN evaluations e ON e.id = (SELECT id FROM "
      "evaluations WHERE candidate_id=c.id {} ORDER BY id DESC LIMIT 1) WHERE c.operator=? {} ORDER BY "
      "(e.status='ok') DESC, e.geomean_speedup DESC LIMIT ?",
      device.empty() ? "" : "AND device=?", status_filter.empty() ? "" : "AND e.status=?");
  Stmt s(db_, sql.c_str());
  int i = 1;
  if (!device.empty()) s.bind(i++, device);
  s.bind(i++, op);
  if (!status_filter.empty()) s.bind(i++, status_filter);
  s.bind(i++, static_cast<long long>(limit));
  std::vector<LeaderboardRow> out;
  std::vector<long long> eval_ids;
  while (s.step()) {
    LeaderboardRow r = leaderboard_row(s);
    eval_ids.push_back(s.i64(10));
    out.push_back(r);
  }
  for (size_t k = 0; k < out.size(); ++k) out[k].shapes = read_shape_rows(db_, eval_ids[k]);
  return out;
}

long long Store::add_exchange(const ExchangeRecord& x) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_,
         "INSERT INTO exchanges(run_id, turn, provider, model, fingerprint, request, response, finish_reason, "
         "prompt_tokens, completion_tokens, latency_s, elapsed_s, http_status, attempts, error, error_kind, outcome, "
         "created) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, x.run_id).bind(2, x.turn).bind(3, x.provider).bind(4, x.model).bind(5, x.fingerprint);
  s.bind(6, x.request_json).bind(7, x.response).bind(8, x.finish_reason).bind(9, x.prompt_tokens);
  s.bind(10, x.completion_tokens).bind(11, x.latency_s).bind(12, x.elapsed_s).bind(13, x.http_status);
  s.bind(14, x.attempts).bind(15, x.error).bind(16, x.error_kind).bind(17, x.outcome_json);
  s.bind(18, x.created.empty() ? now_iso() : x.created);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

void Store::set_exchange_outcome(long long id, const std::string& outcome_json) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_, "UPDATE exchanges SET outcome=? WHERE id=?");
  s.bind(1, outcome_json).bind(2, id);
  s.step();
}

namespace {
const char* kExchangeCols =
    "id, run_id, turn, provider, model, fingerprint, request, response, finish_reason, prompt_tokens, "
    "completion_tokens, latency_s, elapsed_s, http_status, attempts, error, error_kind, outcome, created";

ExchangeRecord read_exchange(Stmt& s) {
  ExchangeRecord x;
  x.id = s.i64(0);
  x.run_id = s.i64(1);
  x.turn = static_cast<int>(s.i64(2));
  x.provider = s.text(3);
  x.model = s.text(4);
  x.fingerprint = s.text(5);
  x.request_json = s.text(6);
  x.response = s.text(7);
  x.finish_reason = s.text(8);
  x.prompt_tokens = s.i64(9);
  x.completion_tokens = s.i64(10);
  x.latency_s = s.f64(11);
  x.elapsed_s = s.f64(12);
  x.http_status = static_cast<int>(s.i64(13));
  x.attempts = static_cast<int>(s.i64(14));
  x.error = s.text(15);
  x.error_kind = s.text(16);
  x.outcome_json = s.text(17);
  x.created = s.text(18);
  return x;
}
}  // namespace

std::optional<ExchangeRecord> Store::exchange(long long id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_, fmt::format("SELECT {} FROM exchanges WHERE id=?", kExchangeCols).c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_exchange(s);
}

std::vector<ExchangeRecord> Store::exchanges(long long run_id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_, fmt::format("SELECT {} FROM exchanges WHERE run_id=? ORDER BY id", kExchangeCols).c_str());
  s.bind(1, run_id);
  std::vector<ExchangeRecord> out;
  while (s.step()) out.push_back(read_exchange(s));
  return out;
}

std::optional<long long> Store::latest_run_with_exchanges() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_, "SELECT run_id FROM exchanges ORDER BY id DESC LIMIT 1");
  if (!s.step() || s.is_null(0)) return std::nullopt;
  return s.i64(0);
}

void Store::put_ceilings(const DeviceCeilings& c) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(db_,
         "INSERT OR REPLACE INTO devices(name, driver, host, measured, copy_bytes_per_s, bf16_flops_per_s) "
         "VALUES(?,?,?,?,?,?)");
  s.bind(1, c.name).bind(2, c.driver).bind(3, c.host).bind(4, c.measured.empty() ? now_iso() : c.measured);
  s.bind(5, c.copy_bytes_per_s).bind(6, c.bf16_flops_per_s);
  s.step();
}

std::optional<DeviceCeilings> Store::ceilings(const std::string& name, const std::string& driver) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  Stmt s(
      db_,
      "SELECT name, driver, host, measured, copy_bytes_per_s, bf16_flops_per_s FROM devices WHERE name=? AND driver=?");
  s.bind(1, name).bind(2, driver);
  if (!s.step()) return std::nullopt;
  DeviceCeilings c;
  c.name = s.text(0);
  c.driver = s.text(1);
  c.host = s.text(2);
  c.measured = s.text(3);
  c.copy_bytes_per_s = s.f64(4);
  c.bf16_flops_per_s = s.f64(5);
  return c;
}

}  // namespace tessera::store
