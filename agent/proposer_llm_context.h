// agent/proposer_llm_context.h — what the model sees, gathered from the operator
// folder, the tile library and the store: the fixed part of the prompt (spec,
// reference, tile API, device), reports of the best candidates (source, launch
// plan, per-shape times, error, roofline, compiler resources) and of failures, and
// the static-check options for the operator. Internal to the LLM proposer.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/llm/prompt.h"
#include "agent/llm/sanitize.h"
#include "agent/proposer_llm.h"
#include "spec/spec.h"

namespace tessera::store {
class Store;
}

namespace tessera::agent {

// Operator, reference, tile API, device and the directories a log may quote.
llm::PromptContext base_context(const spec::Operator& op, const Loop& loop, int proposals, const std::string& mode);

// The leading comment block of every targets/common/tile/*.cuh: the library's API.
std::string tile_api_summary();

// Includes of the target folder's headers and nothing else beyond the defaults.
llm::StaticCheckOptions static_check_options(const spec::Operator& op);

// The `n` best candidates of the operator for this architecture: timed ones by
// speedup; without a GPU, the most recent ones that compiled.
std::vector<llm::CandidateReport> best_reports(store::Store& db, const spec::Operator& op, const Loop& loop, size_t n);

// One candidate as the model should see it.
llm::CandidateReport candidate_report(store::Store& db, const spec::Operator& op, long long id);

// Where a failure happened, from its status ("compile_error" -> "compile").
std::string failure_stage(const std::string& status);
bool is_failure(const std::string& status);

// "#12" — how candidates are named to the model.
std::string candidate_ref(long long id);

// The candidate a proposal says it refines: the first "#<id>" in its explanation
// that names a candidate the model was shown. In a replay the answer's ids are the
// recording's: an id in `recorded` (recording -> this run) is translated first, so
// that the lineage does not depend on the ids the replay's database hands out.
std::optional<long long> parent_named_in(const std::string& text, const std::set<long long>& shown,
                                         const std::map<long long, long long>& recorded = {});

// A proposal name safe for file names and messages: [A-Za-z0-9_-], at most 40 chars.
std::string safe_name(const std::string& name, const std::string& fallback);

}  // namespace tessera::agent
