// agent/recorded.cpp — from stored evaluations to a replayable Simulation.
#include "agent/recorded.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <ostream>

#include "agent/template_space.h"
#include "search/bench.h"
#include "search/strategy.h"

namespace tessera::agent {

using nlohmann::json;

namespace {

std::vector<search::Param> template_params(const spec::Program& tpl) {
  std::vector<search::Param> params;
  for (auto& name : tpl.param_order) {
    search::Param p{name, {}, {}};
    for (long long v : tpl.params.at(name)) {
      p.values.push_back(std::to_string(v));
      p.numeric.push_back(static_cast<double>(v));
    }
    params.push_back(p);
  }
  return params;
}

}  // namespace

std::map<std::string, std::vector<search::Record>> recorded_by_device(store::Store& db, const std::string& op,
                                                                      const spec::Program& tpl) {
  std::map<std::string, std::vector<search::Record>> by_device;
  for (auto& row : db.leaderboard(op, "", 1 << 30)) {
    if (row.template_name != tpl.name || row.status == "compiled" || row.status == "not_applicable") continue;
    // the candidate's latest evaluation on each GPU model (a candidate judged again on another
    // model stays a record of the first: warm start reads one model's history, docs/search.md)
    std::map<std::string, store::EvaluationInfo> latest;
    for (auto& e : db.evaluations(row.candidate_id))
      if (e.status != "compiled" && e.status != "not_applicable") latest.insert_or_assign(e.device, e);
    if (latest.empty()) continue;
    json pj = json::parse(row.params_json.empty() ? "{}" : row.params_json);
    search::Record rec;
    bool complete = true;
    for (auto& name : tpl.param_order) {
      if (!pj.contains(name)) {
        complete = false;
        break;
      }
      rec.values.push_back(std::to_string(pj[name].get<long long>()));
    }
    if (!complete) continue;  // recorded under an older parameter list
    auto comp = db.last_compile(row.candidate_id);
    for (auto& [device, e] : latest) {
      rec.outcome.ok = e.status == "ok" && e.geomean_speedup > 0;
      rec.outcome.cost = rec.outcome.ok ? 1.0 / e.geomean_speedup : 0;
      rec.outcome.failure = rec.outcome.ok ? "" : e.status;
      rec.outcome.seconds = e.seconds + (comp ? comp->seconds : 0);
      by_device[device].push_back(rec);
    }
  }
  return by_device;
}

RecordedSpace recorded_space(store::Store& db, const std::string& op, const spec::Program& tpl) {
  std::vector<search::Param> params = template_params(tpl);
  auto by_device = recorded_by_device(db, op, tpl);
  std::string device;
  size_t most = 0;
  for (auto& [d, recs] : by_device)
    if (recs.size() > most) most = recs.size(), device = d;
  if (most == 0)
    throw std::invalid_argument(fmt::format("no GPU-judged candidates of {} / {} in the database", op, tpl.name));
  return {search::Simulation(params, by_device[device]), device, most};
}

std::shared_ptr<const search::Prior> warm_start_prior(store::Store& db, const std::string& op, const spec::Program& tpl,
                                                      const search::Space& space, const std::string& device,
                                                      bool quiet) {
  std::string other;
  size_t most = 0;
  auto by_device = recorded_by_device(db, op, tpl);
  for (auto& [d, recs] : by_device) {
    size_t ok = std::count_if(recs.begin(), recs.end(), [](const search::Record& r) { return r.outcome.ok; });
    if (d != device && !d.empty() && ok >= kWarmStartFrom && recs.size() > most) most = recs.size(), other = d;
  }
  if (other.empty()) return nullptr;
  auto prior = std::make_shared<const search::Prior>(space, template_params(tpl), by_device[other],
                                                     fmt::format("{} ({} results)", other, most));
  if (!quiet)
    std::cerr << fmt::format("template '{}': warm start from {} results on {} (--no-warm-start: none)\n", tpl.name,
                             most, other);
  return prior;
}

int search_bench_recorded(const std::string& db_path, const std::string& op, const std::string& tpl_name, int repeats,
                          std::ostream& out, const std::vector<std::string>& only, size_t parallel) {
  if (!std::filesystem::exists(db_path)) {
    out << fmt::format("tessera: no database at {}\n", db_path);
    return 1;
  }
  store::Store db(db_path);
  spec::Operator spec_op = spec::load_operator(spec::targets_dir() / op);
  std::vector<std::string> strategies = search::bench_strategies(only);
  int done = 0;
  for (auto& tpl : spec_op.templates) {
    if (!tpl_name.empty() && tpl.name != tpl_name) continue;
    std::optional<RecordedSpace> rs;
    try {
      rs.emplace(recorded_space(db, op, tpl));
    } catch (std::invalid_argument& e) {
      out << e.what() << "\n";
      continue;
    }
    if (rs->candidates < 4) continue;
    std::string name = fmt::format("{}/{} on {} ({} recorded of {} valid)", op, tpl.name, rs->device, rs->candidates,
                                   template_space(tpl).valid_configs().size());
    auto rows = search::score_strategies(name, rs->simulation, strategies, repeats, 1, parallel);
    search::print_markdown(search::summarize(name, rs->simulation), rows, out);
    ++done;
  }
  if (!done) {
    out << fmt::format("tessera: nothing to replay for {} in {}\n", op, db_path);
    return 1;
  }
  return 0;
}

}  // namespace tessera::agent
