// agent/recorded.h — tessera's own recorded runs as a search::Simulation, so a
// strategy can be replayed and scored on real measurements from the history
// (e.g. runs/recorded/h200-2026-11-30.db) without a GPU.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "search/prior.h"
#include "search/simulation.h"
#include "spec/spec.h"
#include "store/store.h"

namespace tessera::agent {

struct RecordedSpace {
  search::Simulation simulation;
  std::string device;     // the GPU model the measurements come from
  size_t candidates = 0;  // candidates of the template with a GPU verdict
};

// One Record per candidate of `tpl` whose latest evaluation is a GPU verdict
// (not 'compiled' or 'not_applicable'), on the GPU model with the most of them:
// cost = 1 / geomean speedup when ok, the status as the failure otherwise;
// simulated seconds = compile + evaluation seconds. The space holds the
// recorded configurations only. Throws std::invalid_argument when none exist.
RecordedSpace recorded_space(store::Store& db, const std::string& op, const spec::Program& tpl);

// The latest GPU verdict of each candidate of `tpl`, as Records, per GPU model
// (candidates recorded under an older parameter list are left out).
std::map<std::string, std::vector<search::Record>> recorded_by_device(store::Store& db, const std::string& op,
                                                                      const spec::Program& tpl);

// A search of `tpl` on `device` starts from what another GPU model taught: the
// recorded results of `tpl` on the model other than `device` with the most of them
// (at least kWarmStartFrom successes), ranked, as a search::Prior over `space`;
// null when the store holds none. Says where it comes from on stderr unless quiet.
constexpr size_t kWarmStartFrom = 8;
std::shared_ptr<const search::Prior> warm_start_prior(store::Store& db, const std::string& op, const spec::Program& tpl,
                                                      const search::Space& space, const std::string& device,
                                                      bool quiet);

// `tessera search-bench --db FILE --operator OP [--template T]`.
int search_bench_recorded(const std::string& db, const std::string& op, const std::string& tpl, int repeats,
                          std::ostream& out, const std::vector<std::string>& only = {}, size_t parallel = 1);

}  // namespace tessera::agent
