// spec/spec.h — an operator, as read from targets/<op>/spec.json.
//
// Operators are data: tensors with dtype and shape expressions, init
// distributions, shape suites, tolerances, FLOP/byte formulas, the reference,
// the baseline and the tunable templates with their launch plans. This file
// holds the types; spec.cpp parses and checks them (docs/spec-format.md).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "spec/expr.h"

namespace tessera::spec {

enum class DType { bf16, f16, f32, f64, i32, i64 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);
const char* torch_dtype_name(DType t);    // PyTorch's: "bfloat16", "float16", ..., "int64"
DType parse_dtype(const std::string& s);  // throws

struct Init {
  std::string dist = "normal";  // normal, uniform, randint, cu_seqlens, offsets, indices, values
  double a = 0, b = 1;          // normal: mean, std; uniform/randint: low, high
  // offsets (integer tensors of n entries: 0 = o[0] <= o[1] <= .. <= o[n-1] = last, the
  // n-1 segment lengths drawn varied from the seed): `last` is an expression over the
  // shape's symbols; with `not_below` (another offsets input, earlier in the spec, of the
  // same length) every segment is at least as long as that tensor's (a key range that
  // covers its query range). indices: values in [0, below), distinct while they fit.
  std::string last, not_below, below;
  std::vector<long long> values;  // values: these exact entries (a shape's fixed index data)
};

struct Tolerance {
  double rel_l2 = 1e-2;
  std::optional<double> max_abs;
};

struct Tensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::string> shape;  // expressions over symbols
  bool output = false;
  Init init;
  Tolerance tol;
};

struct Scalar {
  std::string name;
  DType dtype = DType::f32;  // f32, f64 or i64
  std::string expr;
};

// One point of a shape suite: values of every symbol (+ optional seqlens, init overrides).
struct Shape {
  std::string name;
  std::map<std::string, long long> symbols;
  std::vector<long long> seqlens;
  std::map<std::string, Init> init_overrides;
  // The shape's FLOPs and bytes when the operator's formulas cannot know them (they
  // depend on an index tensor's contents, fixed for this shape by init_overrides).
  std::optional<double> flops, bytes;
  std::string label() const;  // name, or "M=..,N=.."
};

// Every launch expression (grid, block, smem, scratch sizes) and every integer argument
// may use the symbol SMS, the device's SM count (bound by the judge; an operator may not
// declare a symbol of that name). A launch is skipped at a shape where its `when` is 0
// or its grid has a dimension <= 0 (launched() below).
inline constexpr const char* kSmCountSymbol = "SMS";

struct KernelLaunch {
  std::string kernel;
  // Whether the step runs at a shape: an expression over the same names as the grid,
  // non-zero to run ("1", the default: always). A condition written once, such as
  // "D == 64" for a kernel that serves only that head size, instead of a grid multiplied by
  // 0 or 1.
  std::string when = "1";
  std::string grid[3] = {"1", "1", "1"};
  std::string block[3] = {"1", "1", "1"};
  std::string smem = "0";
  std::vector<std::string> args;
  // "main" (the default) or "side". A side launch goes to a second stream: it starts once
  // everything enqueued before it on the main stream has finished, runs beside the
  // launches that follow it there, and the program ends only when every side launch has
  // ended. The side stream has the greatest priority, so a side kernel launched first gets
  // its SMs first. Kernels that wait on each other across the two streams must leave each
  // other SMs through their own grids: nothing else keeps a waiting grid from holding them all.
  std::string stream = "main";
  // true: launched as a programmatic dependent of the kernel before it on the main stream
  // (CUDA's programmatic dependent launch, sm_90 and later): its blocks may be scheduled
  // while that kernel's last blocks still run, which hides the launch's latency. The kernel
  // must therefore wait (tile::grid_dependency_wait, PTX griddepcontrol.wait) before it
  // reads or writes anything the kernel before it touches; the wait returns once that grid
  // has completed and its memory is visible. Launched without the attribute (an export whose
  // runtime does not set it), the wait returns at once and the stream orders the two as
  // usual: the same results, only slower. Main stream only, never the first step.
  bool pdl = false;
};

// Whether `k` runs with these bindings: `when` non-zero and every grid dimension positive.
bool launched(const KernelLaunch& k, const Bindings& b);

// A launch argument "tmap:NAME:B0xB1x..:SW" is a TMA tensor map (the driver's 128-byte
// CUtensorMap, passed by value; in the kernel `const __grid_constant__ tile::tmap`, see
// targets/common/tile/tma.cuh) over the tensor NAME (an input or output of the operator):
// its dimensions are NAME's shape innermost first, the box is B0 x B1 x .. elements
// (innermost first, one per dimension, each 1..256), SW the smem swizzle in bytes (0, 32,
// 64 or 128; with SW > 0, B0 times the element size is at most SW). Reads outside the
// tensor give zeros.
struct TensorMapArg {
  std::string tensor;
  std::vector<int> box;
  int swizzle = 0;
};
// nullopt when `arg` does not start with "tmap:"; throws SpecError when it does but is
// malformed (the checks against the operator's tensors are validate_program's).
std::optional<TensorMapArg> parse_tensor_map_arg(const std::string& arg);

struct Scratch {
  std::string name;
  DType dtype = DType::f32;
  std::string size;  // element count expression
};

// A source file plus how to launch it: the reference, a source baseline, or a template.
struct Program {
  std::string name;
  std::filesystem::path source;                          // absolute
  std::vector<std::string> arch;                         // empty: every architecture
  std::map<std::string, std::vector<long long>> params;  // template parameters
  std::vector<std::string> param_order;                  // order as written
  std::vector<std::string> constraints;
  // Named expressions ("let": {"BESIDE": "PIPE == 1 && NSEQ*H <= SMS"}): a condition or a
  // size written once. Every constraint, launch expression (grid, block, smem, when) and
  // scratch size has them substituted, in parentheses, when the spec is read (a let may
  // use others; a cycle is an error), so what runs sees plain expressions. Kept here for
  // the record; a let's name may not be a symbol, scalar, tensor or parameter.
  std::map<std::string, std::string> lets;
  std::vector<KernelLaunch> launch;
  std::vector<Scratch> scratch;
  std::string builtin;  // e.g. "cublas_gemm" for a library baseline; then no source
  // A program in Python, run by the worker's reference process instead of a launch plan
  // (evaluator/python_reference.h): a FlashInfer Trace definition's JSON, whose `run` is
  // the reference (executed in float64) or, as a baseline, the same `run` at its native
  // precision; or, as a baseline, a .py file with its own `run` of the same signature.
  std::filesystem::path python;  // absolute; empty for a kernel program
};

struct Operator {
  std::string name;
  std::string description;
  // Where the sources, the includes and the files a spec names lie. For a suite that
  // extends another operator (`"extends"` in spec.json: another operator's everything with
  // its own benchmark shapes) that is the operator it extends; spec_dir is its own folder.
  std::filesystem::path dir;
  // The folder of this spec.json: what a worker loads the operator from (its
  // `operator_dir`), and the spec whose content names what the evaluations were judged under.
  std::filesystem::path spec_dir;
  std::string extends;  // the operator a suite extends ("" for an operator of its own)
  std::vector<std::string> symbols;
  std::vector<Scalar> scalars;
  std::vector<Tensor> tensors;
  std::vector<Shape> validation_shapes;
  std::vector<Shape> benchmark_shapes;
  std::string flops, bytes;
  std::string figure_of_merit = "time";  // "bandwidth" for memory-bound operators
  Program reference;
  Program baseline;
  std::vector<Program> templates;  // empty only for an imported operator (LLM proposals only)
  // Set for an operator made by `tessera import` (docs/import.md): the FlashInfer Trace
  // definition it came from (a copy in the target folder), its workloads, its op_type.
  struct Imported {
    std::filesystem::path definition, workloads;
    std::string op_type;
  };
  std::optional<Imported> imported;

  const Tensor* tensor(const std::string& name) const;
  const Program* find_template(const std::string& name) const;
  // Symbols of a shape plus derived ones (T, NSEQ from seqlens) and scalars.
  Bindings bindings(const Shape& s) const;
  // Number of elements of a tensor at a shape.
  long long elements(const Tensor& t, const Bindings& b) const;
  double flops_at(const Shape& s) const;
  double bytes_at(const Shape& s) const;
};

// Reads and checks targets/<dir>/spec.json. Errors (SpecError) name the file,
// the field (JSON path) and what was expected. A spec with `"extends": "../OTHER"` is a
// suite of another operator: OTHER's spec (which may not extend one itself) with this
// one's name, description and benchmark shapes, and nothing else (docs/spec-format.md).
Operator load_operator(const std::filesystem::path& dir);

// A launch program from JSON (same form as a template in spec.json). With
// require_source false, "source" may be absent (a proposed kernel held in memory).
Program program_from_json(const nlohmann::json& j, const std::filesystem::path& dir, bool require_source = false);
// The inverse, in the same form as a template in spec.json (what a worker's
// "candidate.program" and the store's candidates.plan hold). "source" is written
// as a file name only when the source lies directly in `dir` (the form
// program_from_json accepts); otherwise it is left out.
nlohmann::json program_to_json(const Program& p, const std::filesystem::path& dir = {});
// The launch plan that a candidate of template `t` with parameter values `values` is judged
// with, as the store keeps it with the candidate (candidates.plan), so that a re-check, a
// profile or an export launches it as it was judged after the template's plan has changed:
// program_to_json of `t` without its source and constraints, each parameter narrowed to the
// candidate's value.
nlohmann::json judged_plan(const Program& t, const std::map<std::string, long long>& values);
// A stored candidate's parameter values completed for template `t`: each parameter the
// template has gained since the candidate was recorded takes its first listed value, so a
// spec that adds a parameter lists first the value that launches as before it existed
// (docs/spec-format.md). Values `t` does not know are kept.
std::map<std::string, long long> complete_params(const Program& t, std::map<std::string, long long> values);
// Whether two programs launch alike: the same steps (kernels, grids, blocks, shared memory,
// arguments, streams, conditions), scratch buffers and architectures.
bool same_launches(const Program& a, const Program& b);
// Checks that a program's argument names and expressions resolve against the
// operator (what load_operator checks for its templates); throws SpecError naming
// `where` and the launch step. For programs from outside spec.json (LLM proposals).
void validate_program(const Operator& op, const Program& p, const std::string& where);

struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The folder holding the operators: $TESSERA_TARGETS, else ./targets if it
// exists, else the source tree's targets/.
std::filesystem::path targets_dir();
std::vector<std::string> list_operators(const std::filesystem::path& targets);

nlohmann::json shape_json(const Shape& s);

}  // namespace tessera::spec
