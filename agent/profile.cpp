// agent/profile.cpp — `tessera profile` (profile.h): the stored candidate and its shape,
// the tool and its command line, the worker started under it (or the disassembler run on
// the cubin), and the report folder: the tool's output, profile.json (what was run, with
// which command), command.txt and the rendered source.
#include "agent/profile.h"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "codegen/compiler.h"
#include "codegen/render.h"
#include "evaluator/judge.h"
#include "evaluator/worker_client.h"
#include "store/store.h"

namespace tessera::agent {

namespace fs = std::filesystem;
using nlohmann::json;

ProfileTool parse_profile_tool(const std::string& word) {
  if (word == "ncu") return ProfileTool::ncu;
  if (word == "memcheck") return ProfileTool::memcheck;
  if (word == "racecheck") return ProfileTool::racecheck;
  if (word == "synccheck") return ProfileTool::synccheck;
  if (word == "initcheck") return ProfileTool::initcheck;
  if (word == "sass") return ProfileTool::sass;
  throw std::invalid_argument(
      fmt::format("unknown tool '{}' (ncu, memcheck, racecheck, synccheck, initcheck or sass)", word));
}

const char* profile_tool_name(ProfileTool t) {
  switch (t) {
    case ProfileTool::ncu:
      return "ncu";
    case ProfileTool::memcheck:
      return "memcheck";
    case ProfileTool::racecheck:
      return "racecheck";
    case ProfileTool::synccheck:
      return "synccheck";
    case ProfileTool::initcheck:
      return "initcheck";
    case ProfileTool::sass:
      return "sass";
  }
  return "?";
}

std::vector<fs::path> tool_search_dirs() {
  if (const char* d = std::getenv("TESSERA_TOOL_DIR"); d && *d) return {d};
  std::vector<fs::path> dirs;
  if (const char* p = std::getenv("PATH")) {
    std::stringstream ss(p);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) dirs.emplace_back(d);
  }
  if (const char* h = std::getenv("CUDA_HOME"); h && *h) dirs.push_back(fs::path(h) / "bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  return dirs;
}

std::optional<fs::path> find_tool(const std::string& name, const std::vector<fs::path>& dirs) {
  for (auto& d : dirs) {
    fs::path p = d / name;
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) return fs::absolute(p);
  }
  return std::nullopt;
}

std::string kernel_name_filter(const spec::Program& p) {
  std::set<std::string> seen;
  std::string alts;
  for (auto& k : p.launch) {
    if (!seen.insert(k.kernel).second) continue;
    std::string escaped;
    for (char ch : k.kernel) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') escaped += '\\';
      escaped += ch;
    }
    if (!alts.empty()) alts += '|';
    alts += escaped;
  }
  return "regex:^(" + alts + ")$";
}

int sanitizer_errors(const std::string& log) {
  static const std::regex summary(R"(ERROR SUMMARY: (\d+) error)");
  static const std::regex hazards(R"(RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error)");
  int n = -1;
  for (auto* re : {&summary, &hazards})
    for (std::sregex_iterator it(log.begin(), log.end(), *re), end; it != end; ++it)
      n = std::max(n, std::stoi((*it)[1].str()));
  return n;
}

namespace {

// A metric's value on a details page ("750,618", "42.44"), in the unit's own scale.
double metric_value(const std::string& v) {
  std::string digits;
  for (char c : v)
    if (c != ',') digits += c;
  return std::stod(digits);
}

// A duration's unit as ncu prints it (2023 and later: ns, us, ms, s; before: nsecond,
// usecond, msecond, second), in milliseconds; -1 for another (that launch is left out of the
// table rather than the report failing after it was written).
double unit_ms(const std::string& unit) {
  if (unit == "ns" || unit == "nsecond") return 1e-6;
  if (unit == "us" || unit == "usecond") return 1e-3;
  if (unit == "ms" || unit == "msecond") return 1.0;
  if (unit == "s" || unit == "second") return 1e3;
  return -1;
}

}  // namespace

std::vector<KernelTime> kernel_times(const std::string& details) {
  static const std::regex launch(R"(^  (\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), )");
  static const std::regex metric(R"(^\s+(Duration|DRAM Throughput|Compute \(SM\) Throughput)\s+(\S+)\s+([\d,.]+)\s*$)");
  struct Sums {
    KernelTime k;
    double dram_ms = 0, sm_ms = 0, dram_w = 0, sm_w = 0;
  };
  std::vector<Sums> kernels;
  Sums* cur = nullptr;
  double dram = -1, sm = -1, ms = -1;
  const auto close = [&] {  // the launch read so far, into its kernel's sums
    if (!cur || ms < 0) return;
    ++cur->k.launches;
    cur->k.ms += ms;
    if (dram >= 0) cur->dram_ms += dram * ms, cur->dram_w += ms;
    if (sm >= 0) cur->sm_ms += sm * ms, cur->sm_w += ms;
  };
  std::istringstream in(details);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, launch)) {
      close();
      const std::string name = m[1].str();
      auto it = std::find_if(kernels.begin(), kernels.end(), [&](const Sums& s) { return s.k.kernel == name; });
      if (it == kernels.end()) {
        kernels.push_back({});
        kernels.back().k.kernel = name;
        it = kernels.end() - 1;
      }
      cur = &*it;
      dram = sm = ms = -1;
    } else if (cur && std::regex_match(line, m, metric)) {
      if (m[1] == "Duration") {
        if (const double u = unit_ms(m[2]); u > 0) ms = metric_value(m[3]) * u;
      } else if (m[1] == "DRAM Throughput")
        dram = metric_value(m[3]);
      else
        sm = metric_value(m[3]);
    }
  }
  close();
  std::vector<KernelTime> out;
  for (auto& s : kernels) {
    if (s.k.launches == 0) continue;
    if (s.dram_w > 0) s.k.dram_pct = s.dram_ms / s.dram_w;
    if (s.sm_w > 0) s.k.sm_pct = s.sm_ms / s.sm_w;
    out.push_back(s.k);
  }
  return out;
}

namespace {

// What the store holds of the candidate, and what runs it.
struct Stored {
  store::CandidateInfo info;
  std::string source;
  spec::Program program;
  bool from_spec = true;  // false: a proposed program, its plan stored with it
  json params = json::object();
};

std::string joined(const std::vector<fs::path>& dirs) {
  std::string s;
  for (auto& d : dirs) {
    if (!s.empty()) s += ", ";
    s += d.string();
  }
  return s;
}

int fail(int code, const std::string& what) {
  std::cerr << "tessera profile: " << what << "\n";
  return code;
}

// The candidate's source (a v4 store rebuilds the rendered text), parameters and program.
int load_stored(const ProfileOptions& o, const spec::Operator& op, Stored* s) {
  if (!fs::exists(o.db)) return fail(1, fmt::format("no database at {}", o.db));
  store::Store st(o.db);
  auto c = st.candidate(o.candidate);
  if (!c || c->op != o.op)
    return fail(2, c ? fmt::format("candidate #{} is a {} candidate, not {}", o.candidate, c->op, o.op)
                     : fmt::format("no candidate #{} in {}", o.candidate, o.db));
  s->info = *c;
  auto src = st.source(c->source_hash);
  if (!src) return fail(1, fmt::format("candidate #{}: its source {} is not in {}", o.candidate, c->source_hash, o.db));
  s->source = *src;
  if (!c->params_json.empty()) s->params = json::parse(c->params_json);
  const spec::Program* t = op.find_template(c->template_name);
  if (!c->plan_json.empty()) {  // the plan it was judged with (a proposed program's, or a template's)
    spec::Program stored = spec::program_from_json(json::parse(c->plan_json), op.dir);
    if (t && spec::same_launches(stored, *t)) {
      s->program = *t;
    } else {
      stored.name = c->template_name;
      s->program = std::move(stored);
      s->from_spec = false;
    }
  } else if (t) {
    s->program = *t;
  } else {
    return fail(1, fmt::format("candidate #{}: template '{}' is not in {}'s spec and no plan is stored with it",
                               o.candidate, c->template_name, o.op));
  }
  s->params = spec::complete_params(s->program, s->params.get<std::map<std::string, long long>>());
  return 0;
}

// --shape NAME among the benchmark and validation shapes; default the first benchmark shape.
int choose_shape(const ProfileOptions& o, const spec::Operator& op, spec::Shape* out) {
  std::vector<std::string> names;
  for (auto* suite : {&op.benchmark_shapes, &op.validation_shapes})
    for (auto& s : *suite) {
      if (o.shape.empty() || s.label() == o.shape) {
        *out = s;
        return 0;
      }
      names.push_back(s.label());
    }
  if (o.shape.empty()) return fail(2, fmt::format("{} has no shape to run", op.name));
  return fail(2, fmt::format("{} has no shape '{}' (its shapes: {})", op.name, o.shape, fmt::join(names, ", ")));
}

std::string shell_quote(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@") ==
                        std::string::npos)
    return w;
  std::string q = "'";
  for (char ch : w) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (auto& w : argv) {
    if (!s.empty()) s += ' ';
    s += shell_quote(w);
  }
  return s;
}

// Runs argv[0] with stdout and stderr into `out`; the exit status (127: it did not start).
int run_to_file(const std::vector<std::string>& argv, const fs::path& out) {
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = open("/dev/null", O_RDONLY);
    if (fd < 0 || in < 0) _exit(127);
    dup2(in, 0), dup2(fd, 1), dup2(fd, 2);
    std::vector<char*> args;
    for (auto& w : argv) args.push_back(const_cast<char*>(w.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string tail_of(const fs::path& f, size_t n = 1500) {
  std::string s = codegen::read_file(f.string());
  return s.size() > n ? "..." + s.substr(s.size() - n) : s;
}

// The tool's command line in front of the worker's (ncu, compute-sanitizer).
std::vector<std::string> launcher(const ProfileOptions& o, const fs::path& tool, const fs::path& dir,
                                  const spec::Program& p) {
  std::vector<std::string> a = {tool.string()};
  bool chose_sections = false;
  for (auto& w : o.tool_args) chose_sections |= w == "--set" || w == "--section" || w == "--metrics";
  if (o.tool == ProfileTool::ncu) {
    long long launches = static_cast<long long>(p.launch.size()) * o.runs;
    for (std::string w : {"--target-processes", "all", "--profile-from-start", "off", "--kernel-name"}) a.push_back(w);
    a.push_back(kernel_name_filter(p));
    a.insert(a.end(), {"--launch-count", std::to_string(launches)});
    if (!chose_sections) a.insert(a.end(), {"--set", "full"});
    a.insert(a.end(), {"--export", (dir / "report").string(), "--force-overwrite"});
  } else {
    a.insert(a.end(), {"--tool", profile_tool_name(o.tool), "--log-file",
                       (dir / (std::string(profile_tool_name(o.tool)) + ".txt")).string(), "--print-limit", "100"});
  }
  a.insert(a.end(), o.tool_args.begin(), o.tool_args.end());
  return a;
}

// The worker command: tessera's own, or $TESSERA_WORKER_CMD (the tests' fake worker).
std::string worker_exe() {
  const char* fake = std::getenv("TESSERA_WORKER_CMD");
  return fake && *fake ? fake : evaluator::self_exe();
}

codegen::CompileResult compile_candidate(const Stored& s, const spec::Operator& op, const std::string& arch) {
  codegen::Compiler compiler;
  return compiler.compile({s.source,
                           fmt::format("{}_{}.cu", op.name, s.info.template_name),
                           arch,
                           {op.dir, spec::targets_dir() / "common"},
                           {}});
}

// sass: the cubin, its disassembly and the ptxas resource lines; no GPU.
int profile_sass(const ProfileOptions& o, const spec::Operator& op, const Stored& s, const fs::path& tool,
                 const fs::path& dir, json* manifest) {
  bool objdump = tool.filename() == "cuobjdump";
  std::string arch = o.arch.empty() ? s.info.arch : o.arch;
  auto r = compile_candidate(s, op, arch);
  if (!r.ok) return fail(1, fmt::format("candidate #{} does not compile for {}:\n{}", o.candidate, arch, r.log));
  fs::path cubin = dir / "candidate.cubin";
  std::ofstream(cubin, std::ios::binary) << r.cubin;
  std::ofstream res(dir / "resources.txt");
  for (auto& [k, kr] : r.kernels)
    res << fmt::format("{}: {} registers, {} bytes spill stores, {} bytes spill loads, {} bytes stack, {} bytes smem\n",
                       k, kr.registers, kr.spill_stores, kr.spill_loads, kr.stack_frame, kr.static_smem);
  std::istringstream log(r.log);
  for (std::string line; std::getline(log, line);)
    if (line.find("ptxas") != std::string::npos) res << line << "\n";
  std::vector<std::string> argv = {tool.string()};
  argv.push_back(objdump ? "-sass" : "--print-code");
  argv.insert(argv.end(), o.tool_args.begin(), o.tool_args.end());
  argv.push_back(cubin.string());
  (*manifest)["arch"] = arch;
  (*manifest)["command"] = argv;
  std::ofstream(dir / "command.txt") << command_line(argv) << "\n";
  int st = run_to_file(argv, dir / "sass.txt");
  (*manifest)["exit_status"] = st;
  if (st != 0)
    return fail(1,
                fmt::format("{} exited with status {}: {}", tool.filename().string(), st, tail_of(dir / "sass.txt")));
  std::vector<std::string> kernels;
  for (auto& [k, _] : r.kernels) kernels.push_back(k);
  (*manifest)["kernels"] = kernels;
  std::cout << fmt::format("wrote {} (SASS of {} for {}) and {} (registers, spills, smem)\n",
                           (dir / "sass.txt").string(), fmt::join(kernels, ", "), arch,
                           (dir / "resources.txt").string());
  return 0;
}

// Where the time goes, kernel by kernel (ncu's Speed Of Light durations), printed and kept
// in the manifest as "kernel_times". ncu locks the clocks at base and serializes and replays
// the kernels: the shares carry over to a timed run, the times do not.
void print_kernel_times(const std::vector<KernelTime>& ks, json* manifest) {
  if (ks.empty()) return;
  double total = 0;
  int launches = 0;
  for (const auto& k : ks) total += k.ms, launches += k.launches;
  const auto pct = [](double v) { return v < 0 ? std::string("-") : fmt::format("{:.1f}", v); };
  std::cout << "where the time goes (ncu: clocks at base, kernels one at a time; the shares carry over, the "
               "times do not):\n";
  std::cout << fmt::format("{:<32} {:>8} {:>10} {:>7} {:>7} {:>7}\n", "kernel", "launches", "ms", "share", "DRAM %",
                           "SM %");
  json rows = json::array();
  for (const auto& k : ks) {
    const double share = total > 0 ? 100.0 * k.ms / total : 0;
    std::cout << fmt::format("{:<32} {:>8} {:>10.4f} {:>6.1f}% {:>7} {:>7}\n", k.kernel, k.launches, k.ms, share,
                             pct(k.dram_pct), pct(k.sm_pct));
    rows.push_back({{"kernel", k.kernel},
                    {"launches", k.launches},
                    {"ms", k.ms},
                    {"share", share / 100},
                    {"dram_pct", k.dram_pct < 0 ? json() : json(k.dram_pct)},
                    {"sm_pct", k.sm_pct < 0 ? json() : json(k.sm_pct)}});
  }
  std::cout << fmt::format("{:<32} {:>8} {:>10.4f}\n", "all", launches, total);
  (*manifest)["kernel_times"] = rows;
}

// What the tool left once the worker is gone: ncu's report (and its details page), a
// sanitizer's log and error count. The exit code of the whole command.
int read_report(const ProfileOptions& o, const fs::path& tool, const fs::path& dir, int status, json* manifest) {
  if (o.tool == ProfileTool::ncu) {
    fs::path rep = dir / "report.ncu-rep";
    if (!fs::exists(rep))
      return fail(1, fmt::format("ncu wrote no report ({} missing: did its filter {} match no kernel?); its output: {}",
                                 rep.string(), manifest->value("kernel_filter", ""), tail_of(dir / "tool-output.txt")));
    if (status != 0)
      return fail(1,
                  fmt::format("ncu exited with status {}; its output: {}", status, tail_of(dir / "tool-output.txt")));
    int st = run_to_file({tool.string(), "--import", rep.string(), "--page", "details"}, dir / "details.txt");
    if (st != 0)
      std::cerr << fmt::format("tessera profile: ncu --import exited with status {} ({})\n", st,
                               (dir / "details.txt").string());
    std::cout << fmt::format("wrote {} (open it in ncu-ui, or read {})\n", rep.string(),
                             (dir / "details.txt").string());
    if (st == 0) print_kernel_times(kernel_times(codegen::read_file((dir / "details.txt").string())), manifest);
    return 0;
  }
  fs::path log = dir / (std::string(profile_tool_name(o.tool)) + ".txt");
  int errors = fs::exists(log) ? sanitizer_errors(codegen::read_file(log.string())) : -1;
  (*manifest)["errors"] = errors;
  if (errors < 0)
    return fail(1, fmt::format("{} left no error summary in {} (exit status {}); its output: {}",
                               profile_tool_name(o.tool), log.string(), status, tail_of(dir / "tool-output.txt")));
  if (errors > 0) {
    std::cout << fmt::format("{}: {} error{} ({})\n", profile_tool_name(o.tool), errors, errors == 1 ? "" : "s",
                             log.string());
    return 3;
  }
  if (status != 0)
    return fail(1, fmt::format("compute-sanitizer exited with status {}; its output: {}", status,
                               tail_of(dir / "tool-output.txt")));
  std::cout << fmt::format("{}: no errors ({})\n", profile_tool_name(o.tool), log.string());
  return 0;
}

std::string reply_error(const evaluator::WorkerReply& r) {
  if (r.kind == evaluator::WorkerReply::Kind::ok) return r.body.value("error", "");
  std::string hint;
  if (r.detail.find("an internal command") != std::string::npos)
    hint = " (the worker did not find its channel: the tool closed fds 3 and 4 or dropped TESSERA_WORKER_SECRET)";
  return r.detail + hint;
}

// ncu and the sanitizers: the worker under the tool runs the plan; then its report.
int profile_on_worker(const ProfileOptions& o, const spec::Operator& op, const Stored& s, const spec::Shape& shape,
                      const fs::path& tool, const fs::path& dir, json* manifest) {
  std::vector<std::string> pre = launcher(o, tool, dir, s.program);
  std::vector<std::string> argv = pre;
  for (std::string w : {worker_exe(), std::string("worker"), std::string("--gpu"), std::to_string(o.gpu)})
    argv.push_back(w);
  (*manifest)["command"] = argv;
  std::ofstream(dir / "command.txt") << command_line(argv) << "\n";
  if (o.tool == ProfileTool::ncu) (*manifest)["kernel_filter"] = kernel_name_filter(s.program);
  evaluator::WorkerClient worker(worker_exe(), o.gpu, (dir / "tool-output.txt").string(), pre);
  int code = 0;
  auto hello = worker.request({{"type", "hello"}}, 300);
  if (hello.kind != evaluator::WorkerReply::Kind::ok || !hello.body.value("ok", false)) {
    code = fail(1, fmt::format("cannot profile on GPU {}: {}", o.gpu, reply_error(hello)));
  } else {
    std::string arch = hello.body["device"].value("arch", "sm_90a");
    (*manifest)["arch"] = arch;
    (*manifest)["device"] = hello.body["device"].value("name", "");
    auto r = compile_candidate(s, op, arch);
    if (!r.ok) {
      code = fail(1, fmt::format("candidate #{} does not compile for {}:\n{}", o.candidate, arch, r.log));
    } else {
      json cand = {{"cubin", codegen::Compiler().cubin_path(r.key).string()},
                   {"template", s.info.template_name},
                   {"params", s.params}};
      if (!s.from_spec) cand["program"] = spec::program_to_json(s.program);
      json req = {{"type", "profile"},      {"operator_dir", op.spec_dir.string()},
                  {"shape", shape.label()}, {"candidate", cand},
                  {"runs", o.runs},         {"seed", evaluator::JudgeSettings{}.bench_seed}};
      auto rep = worker.request(req, o.timeout_s);
      if (rep.kind == evaluator::WorkerReply::Kind::ok && rep.body.value("ok", false)) {
        (*manifest)["kernels"] = rep.body.value("kernels", json::array());
        (*manifest)["outside"] = rep.body.value("outside", json::array());
        for (auto& b : rep.body.value("outside", json::array()))
          std::cerr << fmt::format("tessera profile: the candidate wrote outside buffer '{}'\n", b.get<std::string>());
      } else {
        code = 1;
        (*manifest)["worker_error"] = reply_error(rep);
      }
    }
  }
  int status = worker.finish(300);
  (*manifest)["exit_status"] = status;
  if (!manifest->contains("worker_error")) {
    if (code != 0) return code;
    int rc = read_report(o, tool, dir, status, manifest);
    // A write just past a buffer lands in tessera's guard zone, inside the allocation,
    // where memcheck cannot see it: the worker's guard check counts it instead.
    if (rc == 0 && o.tool == ProfileTool::memcheck && !manifest->value("outside", json::array()).empty()) {
      std::cout << "memcheck: the candidate wrote outside its buffers (in tessera's guard zones)\n";
      return 3;
    }
    return rc;
  }
  std::string why = (*manifest)["worker_error"].get<std::string>();
  if (o.tool == ProfileTool::ncu) return fail(1, "the run under ncu failed: " + why);
  // A sanitizer's findings often end the run (a fault in the kernel): its log says what.
  if (read_report(o, tool, dir, status, manifest) == 3) {
    std::cerr << "tessera profile: the run under the sanitizer ended with: " << why << "\n";
    return 3;
  }
  return fail(1, "the run under the sanitizer failed: " + why);
}

// The tool's executable: ncu, compute-sanitizer, or for sass cuobjdump (else nvdisasm).
int locate_tool(ProfileTool t, fs::path* out) {
  auto dirs = tool_search_dirs();
  std::vector<std::string> names = t == ProfileTool::ncu    ? std::vector<std::string>{"ncu"}
                                   : t == ProfileTool::sass ? std::vector<std::string>{"cuobjdump", "nvdisasm"}
                                                            : std::vector<std::string>{"compute-sanitizer"};
  for (auto& n : names)
    if (auto p = find_tool(n, dirs)) {
      *out = *p;
      return 0;
    }
  return fail(1, fmt::format("{} not found; looked in {}", fmt::join(names, " or "), joined(dirs)));
}

fs::path default_dir(const ProfileOptions& o) {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return fs::path(o.db).parent_path() / "profiles" /
         fmt::format("{}-c{}-{}-{:%Y%m%d-%H%M%S}", o.op, o.candidate, profile_tool_name(o.tool), fmt::localtime(now));
}

}  // namespace

int profile(const ProfileOptions& o) {
  fs::path opdir = spec::targets_dir() / o.op;
  if (!fs::exists(opdir / "spec.json")) return fail(2, fmt::format("unknown operator '{}'", o.op));
  spec::Operator op = spec::load_operator(opdir);
  Stored s;
  if (int rc = load_stored(o, op, &s)) return rc;
  spec::Shape shape;
  if (o.tool != ProfileTool::sass)
    if (int rc = choose_shape(o, op, &shape)) return rc;
  fs::path tool;
  if (int rc = locate_tool(o.tool, &tool)) return rc;
  fs::path dir = o.out.empty() ? default_dir(o) : fs::path(o.out);
  fs::create_directories(dir);
  dir = fs::absolute(dir);
  std::ofstream(dir / "source.cu") << s.source;
  json manifest = {{"operator", o.op},         {"candidate", o.candidate},          {"template", s.info.template_name},
                   {"params", s.params},       {"tool", profile_tool_name(o.tool)}, {"created", store::now_iso()},
                   {"host", store::hostname()}};
  if (o.tool != ProfileTool::sass) {
    manifest["shape"] = spec::shape_json(shape);
    manifest["runs"] = o.runs;
    manifest["seed"] = evaluator::JudgeSettings{}.bench_seed;
  }
  std::cerr << fmt::format("profiling {} candidate #{} ({}{}) with {} into {}\n", o.op, o.candidate,
                           s.info.template_name, o.tool == ProfileTool::sass ? "" : ", shape " + shape.label(),
                           profile_tool_name(o.tool), dir.string());
  int rc = o.tool == ProfileTool::sass ? profile_sass(o, op, s, tool, dir, &manifest)
                                       : profile_on_worker(o, op, s, shape, tool, dir, &manifest);
  manifest["exit_code"] = rc;
  std::ofstream(dir / "profile.json") << manifest.dump(2) << "\n";
  return rc;
}

}  // namespace tessera::agent
