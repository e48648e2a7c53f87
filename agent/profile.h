// agent/profile.h — `tessera profile`: a stored candidate run through the judge's launch
// plan on one shape, in a worker started under a profiler or a sanitizer (or, for sass,
// its cubin disassembled), with the tool's report kept in a folder beside what was run
// (docs/profile.md). The launch plan is the spec's, run by the worker's plan runner
// (evaluator/worker_profile.h): no hand-copied launch code. The store is only read.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace tessera::agent {

enum class ProfileTool { ncu, memcheck, racecheck, synccheck, initcheck, sass };
ProfileTool parse_profile_tool(const std::string& word);  // std::invalid_argument naming the choices
const char* profile_tool_name(ProfileTool t);

struct ProfileOptions {
  std::string op;
  std::string db = "runs/tessera.db";
  long long candidate = 0;
  ProfileTool tool = ProfileTool::ncu;
  std::string shape;  // a benchmark or validation shape's name; empty: the first benchmark shape
  std::string out;    // empty: <the database's folder>/profiles/<op>-c<ID>-<tool>-<date>
  int gpu = 0;
  int runs = 1;                        // plan runs profiled after the warm-up
  std::string arch;                    // sass only: default the candidate's
  double timeout_s = 900;              // for the worker's run under the tool
  std::vector<std::string> tool_args;  // appended to the tool's own options
};

// Where tools are looked for: $TESSERA_TOOL_DIR alone when it is set (tests put fake
// tools there), else every folder of $PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin.
std::vector<std::filesystem::path> tool_search_dirs();
std::optional<std::filesystem::path> find_tool(const std::string& name, const std::vector<std::filesystem::path>& dirs);

// ncu's --kernel-name filter for a program: "regex:^(k1|k2)$" over its plan's kernels.
std::string kernel_name_filter(const spec::Program& p);

// The errors compute-sanitizer counted in its log (the larger of "ERROR SUMMARY: N
// errors" and racecheck's "(N errors, M warnings)"); -1 when the log has no summary.
int sanitizer_errors(const std::string& log);

// One kernel of ncu's details page, from its Speed Of Light section: its launches, their
// durations summed (ms), and DRAM and SM throughput (% of peak, averaged over the launches
// weighted by duration; -1 where the page has no such line).
struct KernelTime {
  std::string kernel;
  int launches = 0;
  double ms = 0;
  double dram_pct = -1;
  double sm_pct = -1;
};

// The kernels of a details page (`ncu --import R --page details`) in order of first launch;
// kernels without a Duration line (a section set without Speed Of Light) are left out.
std::vector<KernelTime> kernel_times(const std::string& details);

// Returns a process exit code: 0 ok, 1 failure (no tool, the tool or the worker
// failed), 2 usage (unknown operator, candidate or shape), 3 the sanitizer found errors.
int profile(const ProfileOptions& o);

}  // namespace tessera::agent
