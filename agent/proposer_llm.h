// agent/proposer_llm.h — the LLM-driven proposer: a language model reads the
// operator, the best candidates so far with their measurements and the recent
// failures, and answers with kernels (source + launch plan) or templates (source +
// parameter space). Kernels are checked statically, compiled and judged like the
// search's candidates; templates are tuned by the search strategy (hybrid mode).
// Every exchange is stored; every candidate records its parent and its exchange.
//
// What lives here: the options the CLI fills, the narrow interface the optimize
// loop offers to a proposer (Loop), and the proposer itself. The client setup and
// the recording of exchanges are in llm_session.cpp, the prompt context (what the
// model sees) in proposer_llm_context.cpp, the turn loop in proposer_llm.cpp.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "search/space.h"
#include "spec/spec.h"

namespace tessera::store {
class Store;
}

namespace tessera::agent {

// `tessera optimize --llm-*`: empty or negative values leave the environment's
// TESSERA_LLM_* settings (docs/llm.md) in force.
struct LlmOptions {
  std::string provider;  // openai | anthropic (and the openai-compatible aliases)
  std::string base_url;
  std::string model;
  std::string key_env;       // the NAME of the variable holding the key
  long long max_calls = -1;  // model calls per run (0: no cap)
  std::string replay;        // recorded exchanges to serve instead of the network (.json or a database)
  std::string record;        // write this run's exchanges here (JSON, replayable)
  int proposals_per_turn = 3;
  size_t template_budget = 0;  // candidates per proposed template (0: a share of what is left)
  bool quiet = false;          // no per-turn lines on stderr
};

// How a candidate came to be: recorded with it in the store.
struct Lineage {
  std::string origin;  // "search:genetic", "llm", "llm-template:genetic"
  std::optional<long long> parent;
  std::optional<long long> exchange_id;
};

// What became of one candidate.
struct Judged {
  long long id = 0;
  std::string status;  // evaluator/report.h statuses ("compiled" without a GPU)
  std::string message;
  double speedup = 0;   // geometric mean, status ok only
  std::string printed;  // what the kernel printed while judged (raw; scrubbed when rendered)
};

// What the optimize loop offers a proposer (implemented by optimize.cpp's Session).
class Loop {
 public:
  virtual ~Loop() = default;
  // Records, compiles and judges the program once per configuration of `batch`
  // (a kernel without parameters: one empty configuration). The program's source
  // file must exist; programs not in spec.json travel to the workers as JSON.
  virtual std::vector<Judged> evaluate(const spec::Program& program, const std::vector<search::Config>& batch,
                                       const Lineage& lineage) = 0;
  // Records a candidate that never reaches the compiler (static checks, bad plan):
  // `name` becomes its template name, `plan_json` its stored plan.
  virtual Judged reject(const std::string& name, const std::string& source, const std::string& plan_json,
                        const Lineage& lineage, const std::string& status, const std::string& message) = 0;
  // Tunes a template with the run's search strategy for at most `budget` candidates.
  virtual std::vector<Judged> tune(const spec::Program& tpl, size_t budget, const Lineage& lineage) = 0;
  virtual size_t evaluated() const = 0;     // candidates recorded by this run so far
  virtual double seconds_left() const = 0;  // of the run's --time
  virtual long long run_id() const = 0;
  virtual const std::string& arch() const = 0;
  virtual bool timing() const = 0;                 // false: no GPU, candidates are only compiled
  virtual std::string device_summary() const = 0;  // for the prompt
  virtual std::string strategy() const = 0;
};

class LlmSession;

class LlmProposer {
 public:
  // Builds the client (HTTP or replay) from the options and the environment.
  // Returns null and sets *err (a message saying which flag or variable to set) when
  // no model, endpoint or key is configured: a usage error.
  static std::unique_ptr<LlmProposer> create(const LlmOptions& options, const std::string& db_path, std::string* err);
  ~LlmProposer();

  // Asks, checks, evaluates and refines until `budget` candidates were recorded by
  // the loop, the time is up, the model's caps are reached, or the model keeps
  // failing. Never throws for a model's misbehaviour.
  // With allow_templates (hybrid), the model may also answer with templates, which
  // the search then tunes; otherwise it is asked for complete kernels.
  void run(Loop& loop, const spec::Operator& op, store::Store& db, size_t budget, bool allow_templates);

  // "5 calls, 12034 tokens; 4 kernels, 1 template; stopped: ..." for the summary.
  std::string summary() const;
  // A short description of the endpoint for the run's settings (never the key).
  std::string describe() const;

 private:
  LlmProposer(std::unique_ptr<LlmSession> session, LlmOptions options, std::string proposals_dir);
  struct Turn;
  void evaluate_proposals(Loop& loop, const spec::Operator& op, Turn& turn, size_t budget_left);
  void learn_recorded_ids(const std::string& recorded_outcome, const nlohmann::json& outcome);
  std::unique_ptr<LlmSession> session_;
  LlmOptions options_;
  std::string proposals_dir_;  // where proposed sources are written (next to the database)
  size_t kernels_ = 0, templates_ = 0, unusable_answers_ = 0, failed_calls_ = 0;
  std::string stop_reason_;
  // A replay: the recording's candidate ids -> this run's, learnt turn by turn from
  // the recorded outcomes, so that an answer's "#id" names the same proposal here.
  std::map<long long, long long> recorded_ids_;
};

}  // namespace tessera::agent
