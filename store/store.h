// store/store.h — tessera's history in SQLite: runs, candidates (with their
// sources, deduplicated by content hash; a rendered source is kept as its
// variant prefix plus its template's text, stored once), compile results, evaluations
// per shape, device ceilings, LLM exchanges. The leaderboard, resume and show
// are queries.
//
// WAL mode with a busy timeout; each evaluation is written in one transaction,
// so a killed process loses at most the candidate in flight.
#pragma once

#include <sqlite3.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tessera::store {

struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The newest schema this tessera reads and writes (store.cpp says what each version
// changed). A database's version is meta.schema_version.
inline constexpr int kSchemaVersion = 4;

// A database of a newer schema than kSchemaVersion: written by a newer tessera. What
// the newer version changed cannot be known here (v4 keeps the template part of a
// rendered source in another table, which a v3 reader would have taken for the whole
// text), so such a file is neither read nor written: the message names the file, its
// version and this tessera's. Older versions are migrated forward in place.
struct NewerSchema : StoreError {
  using StoreError::StoreError;
};

// Throws NewerSchema when the database attached as `schema` ("main", or a merge's
// "shard") is of a newer schema, or its version is not a number; `path` names it in
// the message. A database without meta (new, or not yet migrated) passes.
void refuse_newer_schema(sqlite3* db, const std::string& schema, const std::string& path);

struct RunInfo {
  std::string op, strategy, proposer, arch, device, host, settings;
  long long budget = 0;
};

struct CandidateInfo {
  long long id = 0;
  std::string op, template_name, params_json, source_hash, arch, origin, created;
  std::optional<long long> parent;
  long long run_id = 0;
  std::optional<long long> exchange_id;  // the LLM exchange that proposed it (schema v2)
  std::string plan_json;                 // the launch plan it was last judged with: a proposed program's
                                         // whole plan (schema v2), a template's narrowed to its parameters
                                         // (spec::judged_plan, since 2026-12-03; empty before)
};

// One call to a language model, successful or not (schema v2). Never holds a key:
// what reaches the store was redacted by the client.
struct ExchangeRecord {
  long long id = 0, run_id = 0;
  int turn = 0;
  std::string provider, model, fingerprint;
  std::string request_json;  // {"system", "messages": [{"role", "content"}]}
  std::string response, finish_reason;
  long long prompt_tokens = 0, completion_tokens = 0;
  double latency_s = 0, elapsed_s = 0;
  int http_status = 0, attempts = 0;
  std::string error, error_kind;  // set when the call failed
  std::string outcome_json;       // what tessera made of the answer: proposals, parse errors
  std::string created;
};

struct CompileInfo {
  bool ok = false;
  double seconds = 0;
  std::string log;
  int registers = 0, spill_bytes = 0, smem = 0;
  std::string cache_key;
};

struct ShapeRow {
  std::string shape;
  double cand_median_ms = 0, cand_min_ms = 0, cand_p90_ms = 0;
  int cand_samples = 0;
  double base_median_ms = 0;
  int base_samples = 0;
  double speedup = 0, floor_ms = 0, roofline_fraction = 0, rel_l2 = 0;
};

struct EvaluationInfo {
  long long candidate_id = 0, run_id = 0;
  std::string device, driver, host, status, message, spec_hash;
  double geomean_speedup = 0, max_rel_l2 = 0, roofline_fraction = 0, seconds = 0;
  double clock_before = 0, clock_after = 0;
  std::string report_json;
  // What the worker printed on stdout/stderr while judging (device printf, driver
  // messages): the first WorkerClient::kPrintedKeep bytes, and how many there were.
  std::string printed;
  long long printed_bytes = 0;
  std::vector<ShapeRow> shapes;
};

struct LeaderboardRow {
  long long candidate_id = 0;
  long long run_id = 0;  // the run of the evaluation shown (0 where a query does not say)
  std::string template_name, params_json, status, device, created, origin;
  std::optional<long long> parent;  // the candidate it was derived from (LLM lineage)
  double geomean_speedup = 0, max_rel_l2 = 0, roofline_fraction = 0;
  std::vector<ShapeRow> shapes;
};

// Each benchmark shape's champion among leaderboard rows (what `export --per-shape` packs
// and `leaderboard --per-shape` shows). A shape's speedup here is the run's steady
// baseline there (the median of the baseline medians of that run's rows) over the
// candidate's median: the baseline is timed again beside every candidate, and one of those
// timings a few per cent off would otherwise crown a slower kernel (seen on the H200,
// 2026-12-03: a baseline 3.4 % slow made a kernel 2.6 % slower than another the shape's
// champion). Rows of one run share one baseline figure; rows of different runs are compared
// through their runs' own. Shapes in the order the rows first report them.
struct ShapeChampion {
  std::string shape;
  long long candidate_id = 0, run_id = 0;
  std::string params_json;
  ShapeRow row;            // the champion's figures as stored (speedup: against its own baseline)
  double baseline_ms = 0;  // the run's steady baseline median at the shape
  double speedup = 0;      // baseline_ms / row.cand_median_ms
};
std::vector<ShapeChampion> per_shape_champions(const std::vector<LeaderboardRow>& rows);
// The geomean of the champions' speedups (what `export --per-shape` serves); 0 for none.
double per_shape_geomean(const std::vector<ShapeChampion>& champions);

struct DeviceCeilings {
  std::string name, driver, host, measured;
  double copy_bytes_per_s = 0, bf16_flops_per_s = 0;
};

class Store {
 public:
  // Opens (creating if needed) the database; refuses a file that is not one.
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  long long begin_run(const RunInfo& r);
  void finish_run(long long run_id, const std::string& status, double gpu_busy_fraction);
  // Per-GPU figures of a run, kept in its settings under "per_gpu" (the other
  // keys are left as they are): one {"gpu", "name", "evaluated", "busy"} per worker.
  void set_run_per_gpu(long long run_id, const nlohmann::json& per_gpu);

  // Inserts the source (if new) and the candidate (if new for this operator,
  // source and arch); returns the candidate's id either way.
  long long add_candidate(const CandidateInfo& c, const std::string& source);
  std::optional<CandidateInfo> candidate(long long id);
  std::optional<std::string> source(const std::string& hash);
  void add_compile(long long candidate_id, const CompileInfo& c);
  std::optional<CompileInfo> last_compile(long long candidate_id);
  // One transaction: the evaluation and its per-shape rows.
  long long add_evaluation(const EvaluationInfo& e);
  // Latest evaluation of a candidate on a device for a spec version (resume).
  std::optional<EvaluationInfo> last_evaluation(long long candidate_id, const std::string& device,
                                                const std::string& spec_hash);
  std::vector<EvaluationInfo> evaluations(long long candidate_id);
  // A candidate's latest status anywhere ("compiled" if only compiled).
  std::string status_of(long long candidate_id);
  // The baseline's usual median per shape label: the median over this operator's
  // `ok` evaluations on `device` under `spec_hash` (empty when there are none).
  std::map<std::string, double> baseline_medians(const std::string& op, const std::string& device,
                                                 const std::string& spec_hash);

  // Candidates by their latest evaluation (on the GPU model `device` where it is not empty:
  // timings compare only within one model), `ok` first, then by geomean speedup.
  std::vector<LeaderboardRow> leaderboard(const std::string& op, const std::string& status_filter, int limit,
                                          const std::string& device = "");

  // LLM exchanges (schema v2).
  long long add_exchange(const ExchangeRecord& x);
  void set_exchange_outcome(long long id, const std::string& outcome_json);
  std::optional<ExchangeRecord> exchange(long long id);
  std::vector<ExchangeRecord> exchanges(long long run_id);
  // The latest run that recorded exchanges (for replay from a database), if any.
  std::optional<long long> latest_run_with_exchanges();

  void put_ceilings(const DeviceCeilings& c);
  std::optional<DeviceCeilings> ceilings(const std::string& name, const std::string& driver);

  sqlite3* raw() { return db_; }
  int schema_version();

 private:
  void exec(const std::string& sql);
  void migrate();
  void share_template_texts();
  std::optional<std::pair<std::string, std::string>> keep_template_text(const std::string& text);
  sqlite3* db_ = nullptr;
  // One connection shared by the agent's threads (one per GPU worker, and the
  // compile pool): every public call holds this, so transactions never interleave.
  mutable std::recursive_mutex mu_;
  std::string path_;
};

std::string now_iso();
// The rendered prefix of a codegen::render output (through its "#line 1" line), or
// nothing when the text is not one.
std::optional<std::string> split_rendered(const std::string& text);
std::string hostname();

}  // namespace tessera::store
