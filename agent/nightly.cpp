// agent/nightly.cpp — job-file parsing with precise messages, and the nightly
// steps per operator (re-check, then search).
#include "agent/nightly.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "evaluator/device.h"
#include "evaluator/driver.h"
#include "search/strategy.h"
#include "spec/spec.h"

namespace tessera::agent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string type_name(const json& v) {
  if (v.is_string()) return fmt::format("the string \"{}\"", v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return "the number " + v.dump();
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  return "an object";
}

class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    throw JobError(fmt::format("{}: {}{}{}", origin_, path, path.empty() ? "" : ": ", msg));
  }

  void keys(const json& obj, const std::string& path, const std::set<std::string>& known) const {
    if (!obj.is_object()) fail(path.empty() ? "(top level)" : path, "expected an object, got " + type_name(obj));
    for (auto& [k, _] : obj.items()) {
      if (known.count(k)) continue;
      std::string list;
      for (auto& n : known) list += (list.empty() ? "" : ", ") + n;
      fail(path.empty() ? k : path + "." + k, fmt::format("unknown key (known here: {})", list));
    }
  }

  std::string str(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string, got " + type_name(v));
    return v.get<std::string>();
  }
  long long integer(const json& v, const std::string& path, long long lo, long long hi) const {
    if (!v.is_number_integer()) fail(path, "expected an integer, got " + type_name(v));
    long long x = v.get<long long>();
    if (x < lo || x > hi) fail(path, fmt::format("{} is out of range [{}, {}]", x, lo, hi));
    return x;
  }
  double number(const json& v, const std::string& path, double lo, double hi, bool open_lo) const {
    if (!v.is_number()) fail(path, "expected a number, got " + type_name(v));
    double x = v.get<double>();
    if (x < lo || (open_lo && x == lo) || x > hi)
      fail(path, fmt::format("{} is out of range {}{}, {}]", v.dump(), open_lo ? "(" : "[", lo, hi));
    return x;
  }
  bool boolean(const json& v, const std::string& path) const {
    if (!v.is_boolean()) fail(path, "expected true or false, got " + type_name(v));
    return v.get<bool>();
  }

  GpuSelection gpus(const json& v, const std::string& path) const {
    std::string g = str(v, path);
    try {
      return parse_gpu_selection(g);
    } catch (const std::invalid_argument&) {
      fail(path, fmt::format("\"{}\" is not all, none or a list of GPU ordinals like \"0,1\", each GPU once", g));
    }
  }

  void budget(const json& v, const std::string& path, NightlyOperator& op) const {
    keys(v, path, {"evaluations", "seconds"});
    if (!v.contains("evaluations") && !v.contains("seconds")) fail(path, "give evaluations, seconds or both");
    if (v.contains("evaluations"))
      op.evaluations = integer(v["evaluations"], path + ".evaluations", 0, 100000000);
    else
      op.evaluations = 100000;  // bounded by the time
    if (v.contains("seconds")) op.seconds = number(v["seconds"], path + ".seconds", 0, 1e9, true);
  }

  Proposer proposer(const json& v, const std::string& path) const {
    std::string p = str(v, path);
    try {
      return parse_proposer(p);
    } catch (const std::invalid_argument&) {
      fail(path, fmt::format("unknown proposer '{}' (search, llm, hybrid)", p));
    }
  }

  std::string strategy(const json& v, const std::string& path) const {
    std::string s = str(v, path);
    auto names = search::strategy_names();
    if (std::find(names.begin(), names.end(), s) == names.end()) {
      std::string list;
      for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
      fail(path, fmt::format("unknown strategy '{}' (known: {})", s, list));
    }
    return s;
  }

  // Settings an operator inherits from the job's "defaults" and may override.
  void op_settings(const json& v, const std::string& path, NightlyOperator& op) const {
    if (v.contains("budget")) budget(v["budget"], path + ".budget", op);
    if (v.contains("proposer")) op.proposer = proposer(v["proposer"], path + ".proposer");
    if (v.contains("strategy")) op.strategy = strategy(v["strategy"], path + ".strategy");
    if (v.contains("template")) op.template_name = str(v["template"], path + ".template");
    if (v.contains("top")) op.top = static_cast<int>(integer(v["top"], path + ".top", 0, 1000));
  }

 private:
  std::string origin_;
};

// "line L, column C" of a byte offset, for JSON syntax errors.
std::string where(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < std::min(byte, text.size()); ++i) {
    if (text[i] == '\n')
      ++line, col = 1;
    else
      ++col;
  }
  return fmt::format("line {}, column {}", line, col);
}

unsigned long long todays_seed() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  return static_cast<unsigned long long>((tm.tm_year + 1900) * 10000 + (tm.tm_mon + 1) * 100 + tm.tm_mday);
}

}  // namespace

NightlyJob parse_job(const std::string& text, const std::string& origin) {
  Parser p(origin);
  json j;
  try {
    j = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (json::parse_error& e) {
    std::string what = e.what();
    if (auto k = what.find("syntax error"); k != std::string::npos) what = what.substr(k);
    throw JobError(fmt::format("{}: not valid JSON at {} ({})", origin, where(text, e.byte ? e.byte - 1 : 0), what));
  }
  p.keys(j, "",
         {"operators", "db", "gpus", "arch", "require_gpu", "report_dir", "recheck", "seed", "defaults", "comment"});
  NightlyJob job;
  job.source = origin;
  if (j.contains("db")) job.db = p.str(j["db"], "db");
  if (j.contains("gpus")) job.gpus = p.gpus(j["gpus"], "gpus");
  if (j.contains("arch")) job.arch = p.str(j["arch"], "arch");
  if (j.contains("require_gpu")) job.require_gpu = p.boolean(j["require_gpu"], "require_gpu");
  if (j.contains("report_dir")) job.report_dir = p.str(j["report_dir"], "report_dir");
  if (j.contains("seed")) job.seed = static_cast<unsigned long long>(p.integer(j["seed"], "seed", 0, 1LL << 62));
  NightlyOperator defaults;
  if (j.contains("recheck")) {
    auto& r = j["recheck"];
    p.keys(r, "recheck", {"top", "noise_threshold", "z", "per_shape"});
    if (r.contains("per_shape")) job.per_shape = p.boolean(r["per_shape"], "recheck.per_shape");
    if (r.contains("top")) defaults.top = static_cast<int>(p.integer(r["top"], "recheck.top", 0, 1000));
    if (r.contains("noise_threshold"))
      job.noise.threshold = p.number(r["noise_threshold"], "recheck.noise_threshold", 0, 1, false);
    if (r.contains("z")) job.noise.z = p.number(r["z"], "recheck.z", 0, 100, true);
  }
  if (j.contains("defaults")) {
    p.keys(j["defaults"], "defaults", {"budget", "proposer", "strategy", "top"});
    p.op_settings(j["defaults"], "defaults", defaults);
  }
  if (!j.contains("operators")) p.fail("operators", "missing (a list of operator names or objects)");
  auto& ops = j["operators"];
  if (!ops.is_array() || ops.empty()) p.fail("operators", "expected a non-empty array, got " + type_name(ops));
  auto known = spec::list_operators(spec::targets_dir());
  std::set<std::string> seen;
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string path = fmt::format("operators[{}]", i);
    NightlyOperator op = defaults;
    if (ops[i].is_string()) {
      op.name = ops[i].get<std::string>();
    } else if (ops[i].is_object()) {
      p.keys(ops[i], path, {"name", "budget", "proposer", "strategy", "template", "top"});
      if (!ops[i].contains("name")) p.fail(path, "missing \"name\"");
      op.name = p.str(ops[i]["name"], path + ".name");
      p.op_settings(ops[i], path, op);
    } else {
      p.fail(path, "expected an operator name or an object, got " + type_name(ops[i]));
    }
    if (std::find(known.begin(), known.end(), op.name) == known.end()) {
      std::string list;
      for (auto& n : known) list += (list.empty() ? "" : ", ") + n;
      p.fail(path, fmt::format("unknown operator '{}' (known: {})", op.name, list));
    }
    if (!seen.insert(op.name).second) p.fail(path, fmt::format("operator '{}' is listed twice", op.name));
    job.operators.push_back(op);
  }
  return job;
}

NightlyJob load_job(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw JobError(fmt::format("{}: cannot read the job file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_job(ss.str(), path);
}

bool NightlyResult::regressed() const {
  for (auto& o : operators)
    if (o.recheck.regressed()) return true;
  return false;
}

bool NightlyResult::failed() const {
  if (!failures.empty()) return true;
  for (auto& o : operators)
    if (!o.failures.empty()) return true;
  return false;
}

int NightlyResult::exit_code() const {
  if (failed()) return nightly_exit::failure;
  if (regressed()) return nightly_exit::regression;
  return nightly_exit::ok;
}

NightlyResult run_nightly(const NightlyJob& job, bool quiet) {
  NightlyResult res;
  unsigned long long seed = job.seed ? *job.seed : todays_seed();
  if (job.require_gpu && job.gpus.kind != GpuSelection::Kind::none) {
    std::string why;
    int n = 0;
    if (auto drv = evaluator::Driver::load(&why)) {
      try {
        n = evaluator::device_count(*drv);
      } catch (std::exception& e) {
        why = e.what();
      }
    }
    if (n == 0) res.failures.push_back(fmt::format("require_gpu: no GPU here ({})", why.empty() ? "none found" : why));
  } else if (job.require_gpu) {
    res.failures.push_back("require_gpu is set but gpus is \"none\"");
  }
  for (auto& op : job.operators) {
    NightlyOperatorResult r;
    r.name = op.name;
    std::cout << fmt::format("== {} ==\n", op.name) << std::flush;
    // 1. Re-check the champion and the top N.
    if (op.top > 0) {
      try {
        RecheckOptions ro;
        ro.op = op.name;
        ro.db = job.db;
        ro.gpus = job.gpus;
        ro.arch = job.arch;
        ro.top = op.top;
        ro.per_shape = job.per_shape;
        ro.noise = job.noise;
        ro.seed = seed;
        ro.quiet = quiet;
        r.recheck = recheck(ro);
        r.rechecked = true;
        if (r.recheck.code != 0) r.failures.push_back("re-check: " + r.recheck.error);
        if (!r.recheck.skipped.empty()) r.skipped.push_back("re-check: " + r.recheck.skipped);
        for (auto& v : r.recheck.items)
          std::cout << fmt::format("re-check #{} (rank {}): {}{}{}\n", v.candidate_id, v.rank, v.verdict,
                                   v.regression ? " — REGRESSION" : "", v.note.empty() ? "" : " — " + v.note);
      } catch (std::exception& e) {
        r.failures.push_back(std::string("re-check: ") + e.what());
      }
    } else {
      r.skipped.push_back("re-check: top is 0");
    }
    // 2. Go on searching from the stored history.
    if (op.evaluations > 0) {
      try {
        OptimizeOptions oo;
        oo.op = op.name;
        oo.db = job.db;
        oo.gpus = job.gpus;
        oo.arch = job.arch;
        oo.budget = static_cast<size_t>(op.evaluations);
        if (op.seconds) oo.time_limit_s = *op.seconds;
        oo.strategy = op.strategy;
        oo.proposer = op.proposer;
        oo.template_name = op.template_name;
        oo.seed = seed;
        oo.quiet = quiet;
        r.search_code = optimize(oo);
        if (r.search_code != 0) r.failures.push_back(fmt::format("search: optimize exited with {}", r.search_code));
      } catch (std::exception& e) {
        r.failures.push_back(std::string("search: ") + e.what());
      }
    } else {
      r.skipped.push_back("search: budget of 0 evaluations");
    }
    for (auto& s : r.skipped) std::cout << "skipped: " << s << "\n";
    for (auto& f : r.failures) std::cout << "FAILED: " << f << "\n";
    res.operators.push_back(std::move(r));
  }
  return res;
}

}  // namespace tessera::agent
