// importer/definition.h — a FlashInfer Trace definition and its workloads, as read
// and checked by `tessera import` (docs/import.md).
//
// A definition (definitions/<op_type>/<name>.json) names its axes (const with a value,
// or var), its inputs and outputs (a shape as a list of axis names, or null for a
// scalar; a dtype), and a PyTorch reference: Python source defining run(...), called
// positionally in the order of `inputs`. A workload (one JSON line of
// workloads/<op_type>/<name>.jsonl) gives the var axes' values and, per input, random
// data, a scalar's value, or a safetensors blob holding the input's entries.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tessera::importer {

struct Axis {
  std::string name;
  bool is_const = false;
  long long value = 0;  // const axes
  std::string description;
};

struct TensorDef {
  std::string name;
  std::string dtype;                              // the format's name: bfloat16, float16, float32, int32, int64, ...
  std::optional<std::vector<std::string>> shape;  // axis names; nullopt: a scalar
  bool optional = false;
  std::string description;
};

struct Definition {
  std::filesystem::path file;
  std::string name, op_type, description;
  std::vector<std::string> tags;
  std::vector<Axis> axes;  // in the file's order
  std::vector<TensorDef> inputs, outputs;
  std::vector<std::string> constraints;
  std::string reference;        // Python source
  nlohmann::ordered_json json;  // the file as read

  const Axis* axis(const std::string& n) const;
  const TensorDef* input(const std::string& n) const;
};

// Reads and checks a definition. Throws ImportError naming the file, the field and
// what was expected for: an unknown dtype, an axis used but not declared, a var axis
// used only by outputs, a reference without run, a reference that does not parse
// (checked with python3's ast module when python3 is at hand; `parse_note` then says
// whether it was), and every malformed field.
Definition read_definition(const std::filesystem::path& file, std::string* parse_note = nullptr);

struct WorkloadInput {
  std::string type;            // random, scalar, safetensors
  double value = 0;            // scalar
  std::filesystem::path path;  // safetensors (as written: relative to the dataset's root)
  std::string tensor_key;
};

struct Workload {
  std::string uuid;
  std::map<std::string, long long> axes;  // the var axes
  std::map<std::string, WorkloadInput> inputs;
};

// Reads workloads.jsonl lines for `def`; each must give every var axis (a non-negative
// integer) and nothing else; ImportError names the file and the line otherwise.
std::vector<Workload> read_workloads(const std::filesystem::path& file, const Definition& def);

// The integer entries of tensor `key` in a safetensors file (I32, I64, I16, U8, I8, BOOL).
std::vector<long long> read_safetensors_ints(const std::filesystem::path& file, const std::string& key);

struct ImportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The tessera dtype of a format dtype ("bf16", ...); throws ImportError naming `where`
// for a dtype the format has but tessera does not yet support, and for unknown ones.
std::string tessera_dtype(const std::string& format_dtype, const std::string& where);

}  // namespace tessera::importer
