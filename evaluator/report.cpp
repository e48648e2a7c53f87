// evaluator/report.cpp — JSON forms of evaluation results, and sample statistics.
#include "evaluator/report.h"

#include <algorithm>
#include <cmath>

namespace tessera::evaluator {

const std::vector<std::string>& all_statuses() {
  static const std::vector<std::string> s = {status::ok,
                                             status::compiled,
                                             status::compile_error,
                                             status::not_applicable,
                                             status::rejected_static,
                                             status::resource_limit,
                                             status::launch_error,
                                             status::wrong_result,
                                             status::race,
                                             status::out_of_bounds,
                                             status::modified_input,
                                             status::crashed,
                                             status::timeout,
                                             status::impossible_speed,
                                             status::protocol_error};
  return s;
}

bool is_status(const std::string& s) {
  auto& a = all_statuses();
  return std::find(a.begin(), a.end(), s) != a.end();
}

using nlohmann::json;

void to_json(json& j, const OutputError& o) {
  j = {{"name", o.name}, {"rel_l2", o.rel_l2}, {"max_abs", o.max_abs}, {"nonfinite", o.nonfinite}, {"pass", o.pass}};
}
void from_json(const json& j, OutputError& o) {
  o.name = j.value("name", "");
  o.rel_l2 = j.value("rel_l2", 0.0);
  o.max_abs = j.value("max_abs", 0.0);
  o.nonfinite = j.value("nonfinite", 0LL);
  o.pass = j.value("pass", false);
}
void to_json(json& j, const ShapeCheck& o) {
  j = {{"shape", o.shape}, {"seed", o.seed},     {"outputs", o.outputs},
       {"pass", o.pass},   {"status", o.status}, {"message", o.message}};
}
void from_json(const json& j, ShapeCheck& o) {
  o.shape = j.value("shape", "");
  o.seed = j.value("seed", 0ULL);
  if (j.contains("outputs")) o.outputs = j.at("outputs").get<std::vector<OutputError>>();
  o.pass = j.value("pass", false);
  o.status = j.value("status", "");
  o.message = j.value("message", "");
}
void to_json(json& j, const Timing& o) {
  j = {{"median_ms", o.median_ms}, {"min_ms", o.min_ms}, {"p90_ms", o.p90_ms},
       {"mean_ms", o.mean_ms},     {"rse", o.rse},       {"samples", o.samples}};
}
void from_json(const json& j, Timing& o) {
  o.median_ms = j.value("median_ms", 0.0);
  o.min_ms = j.value("min_ms", 0.0);
  o.p90_ms = j.value("p90_ms", 0.0);
  o.mean_ms = j.value("mean_ms", 0.0);
  o.rse = j.value("rse", 0.0);
  o.samples = j.value("samples", 0);
}
void to_json(json& j, const ShapeTiming& o) {
  j = {{"shape", o.shape},
       {"candidate", o.candidate},
       {"baseline", o.baseline},
       {"speedup", o.speedup},
       {"after", o.after}};
  if (!o.method.empty()) j["method"] = o.method;
  if (!o.method.empty()) j["stopping_rule"] = o.stopping_rule;
  if (o.batches) {
    j["batches"] = o.batches;
    j["batches_set_aside"] = o.batches_set_aside;
  }
  if (o.disturbed) j["disturbed"] = true;
}
void from_json(const json& j, ShapeTiming& o) {
  o.shape = j.value("shape", "");
  if (j.contains("candidate")) o.candidate = j.at("candidate").get<Timing>();
  if (j.contains("baseline")) o.baseline = j.at("baseline").get<Timing>();
  o.speedup = j.value("speedup", 0.0);
  if (j.contains("after")) o.after = j.at("after").get<ShapeCheck>();
  o.method = j.value("method", "");
  o.stopping_rule = j.value("stopping_rule", "rse");
  o.batches = j.value("batches", 0);
  o.batches_set_aside = j.value("batches_set_aside", 0);
  o.disturbed = j.value("disturbed", false);
}
void to_json(json& j, const EvalReport& o) {
  j = {{"status", o.status},
       {"message", o.message},
       {"checks", o.checks},
       {"timings", o.timings},
       {"geomean_speedup", o.geomean_speedup},
       {"max_rel_l2", o.max_rel_l2},
       {"clock_mhz_before", o.clock_mhz_before},
       {"clock_mhz_after", o.clock_mhz_after},
       {"temperature_c_before", o.temperature_c_before},
       {"temperature_c_after", o.temperature_c_after},
       {"seconds", o.seconds}};
}
void from_json(const json& j, EvalReport& o) {
  o.status = j.value("status", "");
  o.message = j.value("message", "");
  if (j.contains("checks")) o.checks = j.at("checks").get<std::vector<ShapeCheck>>();
  if (j.contains("timings")) o.timings = j.at("timings").get<std::vector<ShapeTiming>>();
  o.geomean_speedup = j.value("geomean_speedup", 0.0);
  o.max_rel_l2 = j.value("max_rel_l2", 0.0);
  o.clock_mhz_before = j.value("clock_mhz_before", 0.0);
  o.clock_mhz_after = j.value("clock_mhz_after", 0.0);
  o.temperature_c_before = j.value("temperature_c_before", 0.0);
  o.temperature_c_after = j.value("temperature_c_after", 0.0);
  o.seconds = j.value("seconds", 0.0);
}

Timing summarize(std::vector<double> s) {
  Timing t;
  t.samples = static_cast<int>(s.size());
  if (s.empty()) return t;
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  t.min_ms = s.front();
  t.median_ms = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  t.p90_ms = s[std::min(n - 1, static_cast<size_t>(std::ceil(0.9 * n)) - 1)];
  double sum = 0;
  for (double x : s) sum += x;
  t.mean_ms = sum / n;
  if (n > 1) {
    double var = 0;
    for (double x : s) var += (x - t.mean_ms) * (x - t.mean_ms);
    var /= (n - 1);
    t.rse = std::sqrt(var / n) / t.mean_ms;
  }
  return t;
}

}  // namespace tessera::evaluator
