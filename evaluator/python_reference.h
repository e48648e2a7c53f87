// evaluator/python_reference.h — the judge's client of the float64 Python reference
// process (evaluator/python/reference_server.py, embedded in the binary at build time).
//
// An operator imported from a FlashInfer Trace definition is judged against the
// definition's own PyTorch `run`, executed in float64: floating inputs upcast, and every
// floating dtype the code asks for kept at float64. One process per worker, started by
// `start` and reused; requests are synchronous (the calling thread blocks until the
// reply or the timeout). Reference outputs are cached on disk under
// <cache root>/reference/<XXH3-128 key>/ (cache root as codegen::Compiler's: $TESSERA_CACHE,
// else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera); the cache has no size cap.
// What lives elsewhere: drawing the inputs and comparing candidates (evaluator/judge.cpp).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "spec/spec.h"

namespace tessera::evaluator {

// One positional argument of `run`: a tensor (raw row-major bytes of `dtype` at `data`),
// a scalar (`value`, passed as int for integer dtypes, else float) or none (Python None).
struct PythonTensor {
  std::string name;
  std::string kind = "tensor";  // tensor | scalar | none
  spec::DType dtype = spec::DType::f32;
  std::vector<long long> shape;
  const void* data = nullptr;
  size_t bytes = 0;
  double value = 0;
};

class PythonReferenceError : public std::runtime_error {
 public:
  enum class Kind {
    raised,        // the reference (or baseline) raised, or the request was refused; the process lives on
    process_died,  // the process exited or was killed; every later call throws this too
    timeout,       // no reply in time; the process was killed
  };
  PythonReferenceError(Kind kind, const std::string& what, std::string traceback = {})
      : std::runtime_error(what), kind(kind), traceback(std::move(traceback)) {}
  Kind kind;
  std::string traceback;  // Python's, for kind raised (also inside what())
};

struct ReferenceRun {
  std::map<std::string, std::vector<double>> outputs;  // by output name, row-major
  std::map<std::string, double> as_written_rel_l2;     // with as_written: ||as written - float64|| / ||float64||
  std::map<std::string, double> as_written_max_abs;    //   (+inf where not finite)
  double seconds = 0;                                  // Python's time in run; 0 on a cache hit
  bool cached = false;
};

class PythonReference {
 public:
  // The interpreter: $TESSERA_PYTHON, else python3 on PATH; checked first (Python 3.8+,
  // `import torch`, the CUDA device). Null with `why` saying what is missing.
  // device: "cpu", "cuda" or "cuda:N" (torch's numbering: the CUDA ordinal).
  static std::unique_ptr<PythonReference> start(const std::string& device, std::string* why);
  ~PythonReference();  // closes the request pipe (the server exits), removes the temporary folder
  PythonReference(const PythonReference&) = delete;
  PythonReference& operator=(const PythonReference&) = delete;

  // Reads the definition, execs its `reference` (and `baseline`'s run when given).
  // Throws PythonReferenceError naming the definition's path, with the traceback.
  const std::vector<std::string>& load(const std::filesystem::path& definition,
                                       const std::filesystem::path& baseline = {});

  // The loaded reference in float64 on `inputs` (positional, in `run`'s order);
  // `outputs`: name and shape of each, in the definition's order. With as_written, also
  // run as written (float64 inputs, no float64 mode) and compared.
  ReferenceRun run(const std::vector<PythonTensor>& inputs,
                   const std::vector<std::pair<std::string, std::vector<long long>>>& outputs, bool as_written);

  // The baseline (baseline.py's run if loaded, else the reference as written) at the
  // inputs' native dtypes, on a cold L2 (cuda; on cpu: wall clock, no flush). Sample
  // times in ms; `what` (if given) says which baseline it was.
  std::vector<double> time_baseline(const std::vector<PythonTensor>& inputs, long long l2_bytes, int min_samples,
                                    int max_samples, double target_rse, double max_seconds, std::string* what);

  // The narrowing casts of the loaded reference, as "line N: text" (from Python's ast).
  const std::vector<std::string>& narrowing() const { return narrowing_; }

  void set_timeout(double seconds) { timeout_s_ = seconds; }  // per request (time_baseline: plus max_seconds)
  bool alive() const { return pid_ > 0; }
  const std::string& interpreter() const { return python_; }
  const std::filesystem::path& cache_dir() const { return cache_root_; }

 private:
  PythonReference() = default;
  void spawn(const std::filesystem::path& script);
  nlohmann::json request(const nlohmann::json& req, double timeout_s);
  void send_line(const std::string& line);
  std::string read_line(double timeout_s);
  [[noreturn]] void die(PythonReferenceError::Kind kind, const std::string& how);
  std::filesystem::path scratch();
  nlohmann::json input_specs(const std::vector<PythonTensor>& inputs);
  void clear_inputs();

  std::string python_, device_, python_version_;
  std::filesystem::path cache_root_, scratch_;
  std::filesystem::path definition_;
  std::string definition_bytes_, server_hash_;
  std::vector<std::string> narrowing_;
  std::vector<std::filesystem::path> input_files_;
  double timeout_s_ = 600;
  pid_t pid_ = -1;
  int to_server_ = -1, from_server_ = -1;
  std::string buffer_, dead_;  // dead_: how the process ended, once it has
};

}  // namespace tessera::evaluator
