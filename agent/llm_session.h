// agent/llm_session.h — one run's connection to a language model: the client
// (HTTP from flags and environment, or a replay of recorded exchanges from a JSON
// file or a tessera database), the run's caps, and the recording of every exchange
// in the store (table `exchanges`) and, with --llm-record, in a replayable JSON
// file. The API key stays inside the HTTP client; nothing here ever sees it.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/llm/budget.h"
#include "agent/llm/client.h"
#include "agent/proposer_llm.h"

namespace tessera::store {
class Store;
}

namespace tessera::agent {

class LlmSession {
 public:
  // Returns null and sets *err when the options and environment name no usable
  // model (no model, a hosted endpoint without its key, a bad flag value, an
  // unreadable replay file).
  static std::unique_ptr<LlmSession> create(const LlmOptions& options, std::string* err);

  // Exchanges are written to `db` (run `run_id`) from now on.
  void attach(store::Store& db, long long run_id);

  struct Answer {
    bool ok = false;
    llm::Reply reply;
    std::string error;  // redacted
    std::optional<llm::LlmErrorKind> error_kind;
    long long exchange_id = 0;  // 0 when nothing was recorded
    // A replay: what the recording run made of this answer (JSON text, empty if
    // the recording did not say), to map its "#id"s to this run's candidates.
    std::string recorded_outcome;
  };
  // One call; recorded whatever happens. Never throws for the model's failures.
  Answer ask(const llm::Conversation& conversation, int turn);
  // What tessera made of an answer (proposals, parse errors, candidate ids): stored
  // with the exchange in the database and in the --llm-record file.
  void set_outcome(long long exchange_id, const nlohmann::json& outcome);

  std::string usage() const;     // "4 calls, 12034 tokens"
  std::string describe() const;  // "openai gpt-5 at https://..." or "replay of FILE (7 exchanges)"
  bool replaying() const { return replaying_; }

 private:
  LlmSession() = default;
  void record(const llm::Exchange& exchange, int turn, long long* id);
  void save_record();  // rewrite the --llm-record file, if any

  std::unique_ptr<llm::LlmClient> client_;
  std::shared_ptr<llm::RunBudget> budget_;
  std::string description_, model_, record_path_;
  bool replaying_ = false;
  long long max_calls_ = 0;  // enforced here for replays (the HTTP client has its budget)
  long long calls_ = 0, prompt_tokens_ = 0, completion_tokens_ = 0;
  std::optional<llm::Exchange> last_;
  std::vector<llm::Exchange> recorded_;
  std::map<long long, size_t> recorded_index_;  // exchange id in the store -> recorded_ index
  store::Store* db_ = nullptr;
  long long run_id_ = 0;
};

// Recorded exchanges of a tessera database: those of run `run_id`, or of the latest
// run that has any. Throws std::runtime_error when there are none.
std::vector<llm::Exchange> exchanges_from_store(const std::string& db_path, std::optional<long long> run_id);

}  // namespace tessera::agent
