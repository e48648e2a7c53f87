// evaluator/plan_runner.h — a program's launch plan run on a workspace: the inputs of one
// (shape, seed) drawn on the device, the outputs and scratch of one run, and the runner
// that binds every argument (tensors, symbols, scalars, parameters, TMA tensor maps),
// raises shared-memory limits and launches on the main and side streams. A builtin
// (cuBLAS) or a Python program (an imported operator's reference) runs in its place.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "evaluator/cublas.h"
#include "evaluator/device.h"
#include "spec/spec.h"

namespace tessera::evaluator {

class PythonSide;  // evaluator/judge_python.h

// A compiled program ready to run: its launch plan plus the cubin (or a builtin).
struct LoadedProgram {
  spec::Program program;
  std::map<std::string, long long> params;
  std::shared_ptr<Module> module;  // null for a builtin or a Python program
};

// The inputs of one (shape, seed).
struct Workspace {
  spec::Shape shape;
  spec::Bindings b;
  std::map<std::string, Buffer> inputs;
  std::map<std::string, long long> elems;
};

// Outputs and scratch of one program run.
struct OutputSet {
  std::map<std::string, Buffer> bufs;
  std::map<std::string, spec::DType> dtype;
};

// The judge's seed mixer (SplitMix64's finalizer over a and b): per tensor, per seed.
unsigned long long seed_mix(unsigned long long a, unsigned long long b);

// The operator's inputs at shape `s` drawn from `seed`: floating and random-integer
// inputs by the builtins' generator kernels, index inputs on the host (spec/index_init.h).
std::unique_ptr<Workspace> make_workspace(Device& dev, Module& builtins, const spec::Operator& op, const spec::Shape& s,
                                          unsigned long long seed);

class PlanRunner {
 public:
  PlanRunner(Device& dev, const spec::Operator& op, Cublas* cublas, PythonSide* python)
      : dev_(dev), op_(op), cublas_(cublas), python_(python) {}
  ~PlanRunner();
  PlanRunner(const PlanRunner&) = delete;
  PlanRunner& operator=(const PlanRunner&) = delete;

  // Output and scratch buffers for a run of p (outputs in float64 for a reference).
  OutputSet make_outputs(const LoadedProgram& p, const Workspace& ws, bool f64);
  void poison(OutputSet& o);  // every byte 0xFF (NaN in every float type)
  spec::Bindings bindings(const LoadedProgram& p, const Workspace& ws) const;
  // Enqueues the program's launches (a builtin's call, a Python reference's run).
  void run(const LoadedProgram& p, const Workspace& ws, OutputSet& outs);

 private:
  // One launch step at a shape (f nullptr: the step does not run there).
  struct Step {
    CUfunction f = nullptr;
    int grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    long long smem = 0;
  };
  // (128 bytes, 64-byte aligned, per argument: a tensor map is passed by value)
  struct alignas(64) ArgStorage {
    unsigned char bytes[128];
  };
  std::vector<Step> resolve(const LoadedProgram& p, const spec::Bindings& b) const;
  void marshal(const spec::KernelLaunch& k, const LoadedProgram& p, const Workspace& ws, const OutputSet& outs,
               const spec::Bindings& b, std::vector<ArgStorage>& storage, std::vector<void*>& ptrs) const;
  bool run_special(const LoadedProgram& p, const Workspace& ws, OutputSet& outs);
  // The CUtensorMap of a "tmap:" argument over an input or output buffer of this run.
  CUtensorMap tensor_map(const spec::TensorMapArg& tm, const Workspace& ws, const OutputSet& outs,
                         const spec::Bindings& b, const std::string& kernel) const;

  Device& dev_;
  const spec::Operator& op_;
  Cublas* cublas_;
  PythonSide* python_;
  CUevent fork_ = nullptr, join_ = nullptr;  // (side launches: see run)
};

}  // namespace tessera::evaluator
