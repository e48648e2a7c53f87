// cli/reporting.h — the `nightly`, `report` and `merge` subcommands, and the
// report writer the nightly job shares with `tessera report`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/gpu_selection.h"
#include "evaluator/l2_flush.h"
#include "evaluator/stopping_rule.h"
#include "store/store.h"

namespace tessera::cli {

struct ReportFiles {
  std::string markdown, html;
  std::vector<std::string> plots;  // SVG files next to the Markdown
};

// Writes DIR/report.md, DIR/report.html (self-contained: inline CSS and SVG, no
// script, no network) and DIR/plots/*.svg for the given operators (all with
// history when empty). Throws std::invalid_argument for an operator with no
// history in the database.
ReportFiles write_report(store::Store& db, std::vector<std::string> ops, const std::string& dir,
                         const std::string& title);

int cmd_report(const std::string& db, const std::vector<std::string>& ops, const std::string& out,
               const std::string& title);
int cmd_merge(const std::string& out, const std::vector<std::string>& shards, bool as_json);
struct NightlyFlags {
  std::string config, db, report_dir;
  std::optional<agent::GpuSelection> gpus;  // the job file's when not given
  bool quiet = false, check = false;
};
int cmd_nightly(const NightlyFlags& f);

struct RecheckFlags {
  std::string op, db;
  agent::GpuSelection gpus;
  int top = 1;
  std::vector<long long> candidates;
  double noise_threshold = 0.05;
  evaluator::L2Flush l2_flush = evaluator::L2Flush::write;
  evaluator::StoppingCriterion stopping_rule = evaluator::StoppingCriterion::rse;
  bool quiet = false, json = false;
  bool per_shape = false;  // each shape's champion, then the shapes' new champions (agent/recheck.h)
};
int cmd_recheck(const RecheckFlags& f);

}  // namespace tessera::cli
