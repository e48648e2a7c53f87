// cli/nightly.cpp — `tessera nightly --config FILE`: runs the job file's
// re-checks and searches (agent/nightly.h), then writes the report and a
// machine-readable summary (REPORT_DIR/nightly.json).
// Exit status: 0 all good, 2 bad job file or flag, 3 a champion regressed,
// 4 a step failed (the report, a re-check, a search, no GPU while required).
#include "agent/nightly.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/reporting.h"
#include "store/report_queries.h"

namespace tessera::cli {

using nlohmann::json;

namespace {

// A re-check's verdict on one candidate, as nightly.json and `tessera recheck --json`
// write it (the latter adds the two evaluations compared).
json verdict_json(const agent::Recheck& v) {
  return {{"candidate", v.candidate_id},
          {"rank", v.rank},
          {"verdict", v.verdict},
          {"regression", v.regression},
          {"speedup_before", v.speedup_before},
          {"speedup_now", v.speedup_now},
          {"time_ratio", v.time_ratio},
          {"note", v.note}};
}

}  // namespace

int cmd_nightly(const NightlyFlags& f) {
  agent::NightlyJob job;
  try {
    job = agent::load_job(f.config);
  } catch (agent::JobError& e) {
    std::cerr << "tessera nightly: " << e.what() << "\n";
    return agent::nightly_exit::usage;
  }
  if (!f.db.empty()) job.db = f.db;
  if (!f.report_dir.empty()) job.report_dir = f.report_dir;
  if (f.gpus) job.gpus = *f.gpus;
  if (f.check) {
    std::cout << fmt::format("{}: {} operator(s), database {}, GPUs {}, report in {}\n", f.config, job.operators.size(),
                             job.db, agent::gpu_selection_name(job.gpus), job.report_dir);
    for (auto& o : job.operators)
      std::cout << fmt::format("  {}: re-check top {}, then {} evaluations{} ({} / {})\n", o.name, o.top, o.evaluations,
                               o.seconds ? fmt::format(" or {} s", *o.seconds) : "", agent::proposer_name(o.proposer),
                               o.strategy.empty() ? "default strategy" : o.strategy);
    return agent::nightly_exit::ok;
  }
  auto res = agent::run_nightly(job, f.quiet);
  std::vector<std::string> ops;
  for (auto& o : job.operators) ops.push_back(o.name);
  std::string report_error;
  try {
    store::Store db(job.db);
    std::vector<std::string> with_history;
    auto known = store::operators_in(db);
    for (auto& o : ops)
      if (std::find(known.begin(), known.end(), o) != known.end()) with_history.push_back(o);
    if (with_history.empty()) throw std::runtime_error("no operator of the job has any history");
    auto files = write_report(db, with_history, job.report_dir, "tessera nightly report");
    std::cout << fmt::format("report: {} and {}\n", files.html, files.markdown);
  } catch (std::exception& e) {
    report_error = e.what();
    res.failures.push_back("report: " + report_error);
  }
  json summary = {{"job", f.config}, {"db", job.db}, {"finished", store::now_iso()}, {"host", store::hostname()}};
  json jops = json::array();
  for (auto& o : res.operators) {
    json items = json::array();
    for (auto& v : o.recheck.items) items.push_back(verdict_json(v));
    jops.push_back({{"name", o.name},
                    {"recheck_run", o.recheck.run_id},
                    {"recheck_runs", o.recheck.runs},
                    {"device", o.recheck.device},
                    {"recheck", items},
                    {"search_exit", o.search_code},
                    {"skipped", o.skipped},
                    {"failures", o.failures}});
  }
  summary["operators"] = jops;
  summary["failures"] = res.failures;
  summary["regressed"] = res.regressed();
  summary["exit"] = res.exit_code();
  try {
    std::filesystem::create_directories(job.report_dir);
    std::ofstream(std::filesystem::path(job.report_dir) / "nightly.json") << summary.dump(2) << "\n";
  } catch (std::exception& e) {
    std::cerr << "tessera nightly: cannot write nightly.json: " << e.what() << "\n";
  }
  for (auto& fl : res.failures) std::cout << "FAILED: " << fl << "\n";
  int code = res.exit_code();
  std::cout << fmt::format("nightly: {}\n", code == 0   ? "all good"
                                            : code == 3 ? "REGRESSIONS (exit 3)"
                                                        : "FAILURES (exit 4)");
  return code;
}

}  // namespace tessera::cli

namespace tessera::cli {

// `tessera recheck OP`: the nightly re-check alone, of the top N or of named
// candidates: each judged again from its stored source and compared with its
// stored figure (agent/recheck.h). Exit 0 done, 3 the champion regressed, 1/2 errors.
int cmd_recheck(const RecheckFlags& f) {
  agent::RecheckOptions o;
  o.op = f.op;
  o.db = f.db;
  o.gpus = f.gpus;
  o.top = f.top;
  o.candidates = f.candidates;
  o.per_shape = f.per_shape;
  o.quiet = f.quiet || f.json;
  o.noise.threshold = f.noise_threshold;
  o.l2_flush = f.l2_flush;
  o.stopping_rule = f.stopping_rule;
  auto res = agent::recheck(o);
  if (res.code != 0) {
    std::cerr << "tessera recheck: " << res.error << "\n";
    return res.code;
  }
  if (f.json) {
    json items = json::array();
    for (auto& v : res.items) {
      json item = verdict_json(v);
      item["stored_evaluation"] = v.stored_evaluation;
      item["new_evaluation"] = v.new_evaluation;
      items.push_back(item);
    }
    std::cout << json{{"run", res.run_id},
                      {"runs", res.runs},
                      {"device", res.device},
                      {"skipped", res.skipped},
                      {"items", items}}
                     .dump(2)
              << "\n";
  } else {
    if (!res.skipped.empty()) std::cout << "skipped: " << res.skipped << "\n";
    if (res.runs.size() > 1)
      std::cout << fmt::format("{} re-check runs (#{}): the shapes' new champions judged again in each\n",
                               res.runs.size(), fmt::join(res.runs, ", #"));
    std::cout << fmt::format("{:>6} {:>4}  {:<18} {:>9} {:>9} {:>10}  {}\n", "id", "rank", "verdict", "before", "now",
                             "time now/", "note");
    for (auto& v : res.items)
      std::cout << fmt::format("{:>6} {:>4}  {:<18} {:>8.3f}x {:>8.3f}x {:>10.3f}  {}\n", v.candidate_id, v.rank,
                               v.verdict + (v.regression ? " !" : ""), v.speedup_before, v.speedup_now, v.time_ratio,
                               v.note.substr(0, 100));
  }
  return res.regressed() ? agent::nightly_exit::regression : 0;
}

}  // namespace tessera::cli
