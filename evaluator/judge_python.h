// evaluator/judge_python.h — the judge's side of an operator whose reference (and maybe
// baseline) is Python: a FlashInfer Trace definition's `run`, executed by the worker's
// reference process (evaluator/python_reference.h) on the inputs the judge drew.
//
// The reference runs in float64 (floating inputs upcast, every floating dtype the code
// asks for kept at float64); the first time each shape is judged it also runs as written
// (the code's own casts to float32/bfloat16 kept), and the difference between the two
// goes to the worker's log: what judging against the code as written would have hidden.
// A Python baseline is timed in that process with the judge's cold-L2 method, once per
// benchmark shape and worker; the candidate alone is timed in the judge.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "evaluator/device.h"
#include "evaluator/python_reference.h"
#include "evaluator/report.h"
#include "spec/spec.h"

namespace tessera::evaluator {

class PythonSide {
 public:
  // Starts the reference process on the device and loads the definition (and a .py
  // baseline). Throws std::runtime_error saying exactly what is missing (no Python, no
  // torch, no such CUDA device) or, with its traceback, what the definition's code raised.
  PythonSide(const spec::Operator& op, const DeviceInfo& dev);

  // The float64 reference's outputs on `inputs` (device buffers in the spec's dtypes),
  // written into `outputs` (float64 device buffers, by output name).
  void reference(const spec::Shape& s, const spec::Bindings& b, const std::map<std::string, Buffer>& inputs,
                 std::map<std::string, Buffer>& outputs);

  // The baseline's times on `inputs` (cached per shape key) and what the baseline was.
  const Timing& baseline(const std::string& key, const spec::Bindings& b, const std::map<std::string, Buffer>& inputs,
                         int min_samples, int max_samples, double target_rse, double max_seconds);
  const std::string& baseline_what() const { return baseline_what_; }
  bool has_baseline() const { return has_baseline_; }

 private:
  void ensure();  // the process started and the definition loaded
  std::vector<PythonTensor> tensors(const spec::Bindings& b, const std::map<std::string, Buffer>& inputs,
                                    std::vector<std::vector<unsigned char>>& storage) const;
  const spec::Operator& op_;
  std::unique_ptr<PythonReference> ref_;
  std::string device_;
  std::vector<std::string> inputs_;                                        // the definition's input order
  std::vector<std::pair<std::string, std::vector<std::string>>> outputs_;  // name, shape expressions
  long long l2_bytes_ = 0;
  std::set<std::string> compared_;  // shapes whose as-written run was compared
  std::map<std::string, Timing> baseline_ms_;
  std::string baseline_what_;
  bool has_baseline_ = false;
};

}  // namespace tessera::evaluator
