// evaluator/report.h — what an evaluation of one candidate found, as data.
//
// Statuses form a small closed set (docs/statuses.md); the report travels from
// the worker to the agent as JSON and is stored per shape in the database.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::evaluator {

// The closed set of candidate statuses.
namespace status {
inline constexpr const char* ok = "ok";
inline constexpr const char* compiled = "compiled";  // compiled, not timed (no GPU)
inline constexpr const char* compile_error = "compile_error";
inline constexpr const char* not_applicable = "not_applicable";
inline constexpr const char* rejected_static = "rejected_static";
inline constexpr const char* resource_limit = "resource_limit";
inline constexpr const char* launch_error = "launch_error";
inline constexpr const char* wrong_result = "wrong_result";
inline constexpr const char* race = "race";
inline constexpr const char* out_of_bounds = "out_of_bounds";
inline constexpr const char* modified_input = "modified_input";
inline constexpr const char* crashed = "crashed";
inline constexpr const char* timeout = "timeout";
inline constexpr const char* impossible_speed = "impossible_speed";
// The worker put something other than this request's reply on its private channel
// (evaluator/channel.h); it was killed, and nothing it said was taken as a verdict.
inline constexpr const char* protocol_error = "protocol_error";
}  // namespace status
const std::vector<std::string>& all_statuses();
bool is_status(const std::string& s);

struct OutputError {
  std::string name;
  double rel_l2 = 0;
  double max_abs = 0;
  long long nonfinite = 0;
  bool pass = false;
};

struct ShapeCheck {
  std::string shape;
  unsigned long long seed = 0;
  std::vector<OutputError> outputs;
  bool pass = false;
  std::string status = status::ok;
  std::string message;
};

struct Timing {
  double median_ms = 0, min_ms = 0, p90_ms = 0, mean_ms = 0, rse = 0;
  int samples = 0;
};

struct ShapeTiming {
  std::string shape;
  Timing candidate, baseline;
  double speedup = 0;  // baseline median / candidate median
  ShapeCheck after;    // outputs of the last timed launch, checked again
  std::string method;  // "events", "graph", or why graph capture fell back to events
  // What ended the timing under its caps (stopping_rule.h): "rse" or "plateau"; reports
  // written before the choice existed lack it and were all "rse". (A Python baseline,
  // timed in the reference process, stops by its own relative standard error.)
  std::string stopping_rule = "rse";
  int batches = 0;            // batches of A/B rounds taken
  int batches_set_aside = 0;  // of them, taken while the baseline ran slow (batch_filter.h)
  // No batch came within 15 % of the baseline's usual time before the time cap: the
  // machine was disturbed throughout, and the figures are not comparable.
  bool disturbed = false;
};

struct EvalReport {
  std::string status = status::ok;
  std::string message;
  std::vector<ShapeCheck> checks;
  std::vector<ShapeTiming> timings;
  double geomean_speedup = 0;
  double max_rel_l2 = 0;  // worst over validation
  double clock_mhz_before = 0, clock_mhz_after = 0;
  double temperature_c_before = 0, temperature_c_after = 0;
  double seconds = 0;  // wall time the evaluation took in the worker
};

void to_json(nlohmann::json& j, const OutputError& o);
void from_json(const nlohmann::json& j, OutputError& o);
void to_json(nlohmann::json& j, const ShapeCheck& o);
void from_json(const nlohmann::json& j, ShapeCheck& o);
void to_json(nlohmann::json& j, const Timing& o);
void from_json(const nlohmann::json& j, Timing& o);
void to_json(nlohmann::json& j, const ShapeTiming& o);
void from_json(const nlohmann::json& j, ShapeTiming& o);
void to_json(nlohmann::json& j, const EvalReport& o);
void from_json(const nlohmann::json& j, EvalReport& o);

// Median, min, p90, mean and relative standard error of the mean.
Timing summarize(std::vector<double> samples_ms);

}  // namespace tessera::evaluator
