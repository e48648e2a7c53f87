// agent/llm/proposal.h — reading a model's answer into proposals. An answer holds
// one or more proposals, each a ```cuda block followed by a ```json block:
//   - a full kernel: the JSON is {"name"?, "launch": [...], "scratch"?: [...]}
//     (a bare array is taken as "launch"), in the format of docs/spec-format.md;
//   - a template: the JSON also has "params" {"NAME": [values]} and optionally
//     "constraints" and "arch"; the search then tunes it (hybrid mode).
// Parsing never throws: what cannot be read becomes an error message written for
// the model (render_parse_feedback sends it back on the next turn).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::llm {

enum class ProposalKind { Kernel, Template };

struct Proposal {
  ProposalKind kind = ProposalKind::Kernel;
  std::string name;       // from the JSON, else "proposal-<n>"
  std::string rationale;  // the prose just before the source block (shortened)
  std::string source;
  // Normalized launch steps: {"kernel", "grid": [3 strings], "block": [3 strings],
  // "smem": string, "args": [strings]}; and scratch buffers {"name", "dtype", "size"}.
  nlohmann::json launch = nlohmann::json::array();
  nlohmann::json scratch = nlohmann::json::array();
  std::map<std::string, std::vector<long long>> params;  // templates only
  std::vector<std::string> constraints;                  // templates only
  std::vector<std::string> arch;                         // optional
  int source_line = 0;                                   // line of the ```cuda fence in the answer

  std::vector<std::string> kernel_names() const;
  // {"launch", "scratch"} (+ "params", "constraints", "arch" for a template): the
  // form a spec template entry takes, for the store and the plan loader.
  nlohmann::json plan_json() const;
};

struct ParseOptions {
  size_t max_proposals = 8;
  std::string finish_reason;  // the reply's, to explain a truncated answer
};

struct ParseResult {
  std::vector<Proposal> proposals;
  std::vector<std::string> errors;  // one line each, written for the model
  bool ok() const { return errors.empty() && !proposals.empty(); }
};

ParseResult parse_proposals(std::string_view answer, const ParseOptions& options = {}) noexcept;

}  // namespace tessera::llm
