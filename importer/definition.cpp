// importer/definition.cpp — reading and checking FlashInfer Trace definitions and
// workloads (importer/definition.h).
#include "importer/definition.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

namespace tessera::importer {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

[[noreturn]] void fail(const fs::path& file, const std::string& field, const std::string& expected) {
  throw ImportError(fmt::format("{}: field '{}': expected {}", file.string(), field, expected));
}

std::string str(const fs::path& file, const ojson& j, const std::string& key, const std::string& where, bool required) {
  if (!j.contains(key)) {
    if (required) fail(file, where + key, "a string (it is missing)");
    return "";
  }
  if (!j.at(key).is_string()) fail(file, where + key, std::string("a string, got ") + j.at(key).type_name());
  return j.at(key).get<std::string>();
}

TensorDef read_tensor(const fs::path& file, const std::string& where, const std::string& name, const ojson& v) {
  TensorDef t;
  t.name = name;
  if (!v.is_object()) fail(file, where, "an object with shape and dtype");
  if (!v.contains("shape")) fail(file, where + ".shape", "a list of axis names, or null for a scalar");
  if (!v.at("shape").is_null()) {
    if (!v.at("shape").is_array()) fail(file, where + ".shape", "a list of axis names, or null for a scalar");
    std::vector<std::string> s;
    for (size_t i = 0; i < v.at("shape").size(); ++i) {
      if (!v.at("shape")[i].is_string()) fail(file, fmt::format("{}.shape[{}]", where, i), "an axis name");
      s.push_back(v.at("shape")[i].get<std::string>());
    }
    t.shape = s;
  }
  t.dtype = str(file, v, "dtype", where + ".", true);
  t.optional = v.value("optional", false);
  t.description = v.value("description", "");
  return t;
}

// What python3's ast makes of the reference: "" when it parses and defines run with
// `nargs` positional parameters; else what is wrong. `checked` false: no python3.
std::string check_reference(const std::string& src, size_t nargs, bool* checked) {
  *checked = false;
  char tmpl[] = "/tmp/tessera-ref-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return "";
  {
    std::ofstream out(tmpl);
    out << src;
  }
  close(fd);
  static const char* script =
      "import ast,json,sys\n"
      "src=open(sys.argv[1]).read()\n"
      "try:\n t=ast.parse(src)\n"
      "except SyntaxError as e:\n print(json.dumps({'ok':False,'error':'line %s: %s' % (e.lineno, e.msg)})); "
      "sys.exit()\n"
      "runs=[n for n in t.body if isinstance(n, ast.FunctionDef) and n.name=='run']\n"
      "if not runs:\n print(json.dumps({'ok':False,'error':'no top-level function run(...)'})); sys.exit()\n"
      "a=runs[0].args\n"
      "print(json.dumps({'ok':True,'args':[x.arg for x in a.posonlyargs+a.args],'vararg':a.vararg is not None}))\n";
  // (the script goes through a file as well: quoting Python in a shell line is a trap)
  std::string script_file = std::string(tmpl) + ".py";
  {
    std::ofstream out(script_file);
    out << script;
  }
  std::string cmd = fmt::format("python3 '{}' '{}' 2>/dev/null", script_file, tmpl);
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    pclose(p);
  }
  fs::remove(tmpl);
  fs::remove(script_file);
  nlohmann::json r;
  try {
    r = nlohmann::json::parse(out);
  } catch (...) {
    return "";  // no python3 (or it failed to run): not checked
  }
  *checked = true;
  if (!r.value("ok", false)) return r.value("error", "does not parse");
  size_t got = r.at("args").size();
  if (!r.value("vararg", false) && got != nargs)
    return fmt::format("run takes {} positional parameters, the definition has {} inputs", got, nargs);
  return "";
}

}  // namespace

const Axis* Definition::axis(const std::string& n) const {
  for (auto& a : axes)
    if (a.name == n) return &a;
  return nullptr;
}

const TensorDef* Definition::input(const std::string& n) const {
  for (auto& t : inputs)
    if (t.name == n) return &t;
  return nullptr;
}

std::string tessera_dtype(const std::string& d, const std::string& where) {
  static const std::map<std::string, std::string> known = {
      {"float32", "f32"}, {"float16", "f16"}, {"bfloat16", "bf16"}, {"int32", "i32"}, {"int64", "i64"}};
  static const std::set<std::string> format_only = {"float8_e4m3fn", "float8_e5m2", "float4_e2m1",
                                                    "int16",         "int8",        "bool"};
  if (auto it = known.find(d); it != known.end()) return it->second;
  if (format_only.count(d))
    throw ImportError(
        fmt::format("{}: dtype '{}' is valid in the format but tessera does not support it yet "
                    "(supported: float32, float16, bfloat16, int32, int64)",
                    where, d));
  throw ImportError(
      fmt::format("{}: expected a dtype of the format (float32, float16, bfloat16, float8_e4m3fn, "
                  "float8_e5m2, float4_e2m1, int64, int32, int16, int8, bool), got '{}'",
                  where, d));
}

namespace {

// The "axes" object: each axis's type (const with a non-negative value, or var) and description.
void read_axes(const fs::path& file, const ojson& j, Definition& d) {
  if (!j.contains("axes") || !j.at("axes").is_object()) fail(file, "axes", "an object of axis name -> {type, value}");
  for (auto& [name, a] : j.at("axes").items()) {
    Axis ax;
    ax.name = name;
    std::string type = str(file, a, "type", "axes." + name + ".", true);
    if (type != "const" && type != "var")
      fail(file, "axes." + name + ".type", "\"const\" or \"var\", got '" + type + "'");
    ax.is_const = type == "const";
    if (ax.is_const) {
      if (!a.contains("value") || !a.at("value").is_number_integer() || a.at("value").get<long long>() < 0)
        fail(file, "axes." + name + ".value", "a non-negative integer (a const axis has a value)");
      ax.value = a.at("value").get<long long>();
    }
    ax.description = a.value("description", "");
    d.axes.push_back(ax);
  }
}

// dtypes, axes declared, var axes readable from the inputs, outputs not scalars.
void check_tensors(const fs::path& file, const Definition& d) {
  std::set<std::string> in_inputs;
  for (const char* part : {"inputs", "outputs"})
    for (auto& t : std::string(part) == "inputs" ? d.inputs : d.outputs) {
      std::string where = fmt::format("{}: field '{}.{}.dtype'", file.string(), part, t.name);
      tessera_dtype(t.dtype, where);
      if (!t.shape) continue;
      for (size_t i = 0; i < t.shape->size(); ++i) {
        const std::string& a = (*t.shape)[i];
        if (!d.axis(a))
          fail(file, fmt::format("{}.{}.shape[{}]", part, t.name, i),
               fmt::format("an axis declared in 'axes', got '{}'", a));
        if (std::string(part) == "inputs") in_inputs.insert(a);
      }
    }
  for (auto& a : d.axes)
    if (!a.is_const && !in_inputs.count(a.name)) {
      bool in_outputs = false;
      for (auto& t : d.outputs)
        if (t.shape && std::count(t.shape->begin(), t.shape->end(), a.name)) in_outputs = true;
      if (in_outputs)
        fail(file, "axes." + a.name,
             "a var axis that some input's shape uses (it appears only in outputs, so a kernel could not know it)");
    }
  for (auto& t : d.outputs)
    if (!t.shape) fail(file, "outputs." + t.name + ".shape", "a list of axis names (an output cannot be a scalar)");
}

// The reference: Python source defining run(...), parsed by python3's ast when there is one.
void read_reference(const fs::path& file, const ojson& j, Definition& d, std::string* parse_note) {
  if (!j.contains("reference") || !j.at("reference").is_string())
    fail(file, "reference", "Python source defining run(...) as a string");
  d.reference = j.at("reference").get<std::string>();
  if (d.reference.find("def run(") == std::string::npos)
    fail(file, "reference", "Python source defining run(...) (no 'def run(' in it)");
  bool checked = false;
  std::string why = check_reference(d.reference, d.inputs.size(), &checked);
  if (!why.empty()) fail(file, "reference", "Python source that parses and defines run(...): " + why);
  if (parse_note)
    *parse_note = checked ? "the reference parses (python3's ast) and run takes the inputs"
                          : "python3 was not found: the reference was not parsed here";
}

}  // namespace

Definition read_definition(const fs::path& file, std::string* parse_note) {
  std::ifstream in(file);
  if (!in) throw ImportError(file.string() + ": cannot be read");
  Definition d;
  d.file = file;
  try {
    d.json = ojson::parse(in);
  } catch (std::exception& e) {
    throw ImportError(fmt::format("{}: not valid JSON: {}", file.string(), e.what()));
  }
  const ojson& j = d.json;
  if (!j.is_object()) fail(file, "(top level)", "an object");
  d.name = str(file, j, "name", "", true);
  d.op_type = str(file, j, "op_type", "", true);
  d.description = str(file, j, "description", "", false);
  if (j.contains("tags") && j.at("tags").is_array())
    for (auto& t : j.at("tags"))
      if (t.is_string()) d.tags.push_back(t.get<std::string>());
  read_axes(file, j, d);
  for (const char* part : {"inputs", "outputs"}) {
    if (!j.contains(part) || !j.at(part).is_object() || j.at(part).empty())
      fail(file, part, "an object of name -> {shape, dtype} with at least one entry");
    for (auto& [name, v] : j.at(part).items())
      (std::string(part) == "inputs" ? d.inputs : d.outputs)
          .push_back(read_tensor(file, std::string(part) + "." + name, name, v));
  }
  if (j.contains("constraints") && j.at("constraints").is_array())
    for (auto& c : j.at("constraints"))
      if (c.is_string()) d.constraints.push_back(c.get<std::string>());
  check_tensors(file, d);
  read_reference(file, j, d, parse_note);
  return d;
}

std::vector<Workload> read_workloads(const fs::path& file, const Definition& def) {
  std::ifstream in(file);
  if (!in) throw ImportError(file.string() + ": cannot be read");
  std::vector<Workload> out;
  std::string line;
  for (int ln = 1; std::getline(in, line); ++ln) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto bad = [&](const std::string& field, const std::string& expected) {
      throw ImportError(fmt::format("{}:{}: field '{}': expected {}", file.string(), ln, field, expected));
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (std::exception& e) {
      bad("(line)", std::string("a JSON object: ") + e.what());
    }
    if (j.contains("definition") && j.at("definition").is_string() && j.at("definition") != def.name) continue;
    if (!j.contains("workload") || !j.at("workload").is_object()) bad("workload", "an object");
    const auto& w = j.at("workload");
    Workload wl;
    wl.uuid = w.value("uuid", fmt::format("line{}", ln));
    const auto& axes = w.contains("axes") ? w.at("axes") : nlohmann::json::object();
    for (auto& a : def.axes) {
      if (a.is_const) continue;
      if (!axes.contains(a.name) || !axes.at(a.name).is_number_integer() || axes.at(a.name).get<long long>() < 0)
        bad("workload.axes." + a.name, "a non-negative integer for every var axis");
      wl.axes[a.name] = axes.at(a.name).get<long long>();
    }
    for (auto& [k, _] : axes.items())
      if (!def.axis(k) || def.axis(k)->is_const) bad("workload.axes." + k, "only the definition's var axes");
    if (w.contains("inputs") && w.at("inputs").is_object())
      for (auto& [k, v] : w.at("inputs").items()) {
        if (!def.input(k)) bad("workload.inputs." + k, "an input of the definition");
        WorkloadInput wi;
        wi.type = v.value("type", "random");
        if (wi.type == "scalar") {
          if (!v.contains("value") || !v.at("value").is_number()) bad("workload.inputs." + k + ".value", "a number");
          wi.value = v.at("value").get<double>();
        } else if (wi.type == "safetensors") {
          wi.path = v.value("path", "");
          wi.tensor_key = v.value("tensor_key", k);
        } else if (wi.type != "random") {
          bad("workload.inputs." + k + ".type", "random, scalar or safetensors");
        }
        wl.inputs[k] = wi;
      }
    out.push_back(wl);
  }
  return out;
}

std::vector<long long> read_safetensors_ints(const fs::path& file, const std::string& key) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ImportError(file.string() + ": cannot be read");
  unsigned char len8[8];
  if (!in.read(reinterpret_cast<char*>(len8), 8)) throw ImportError(file.string() + ": not a safetensors file");
  uint64_t hl = 0;
  for (int b = 7; b >= 0; --b) hl = (hl << 8) | len8[b];
  if (hl > (1u << 26)) throw ImportError(file.string() + ": not a safetensors file (header too long)");
  std::string header(hl, '\0');
  in.read(header.data(), static_cast<std::streamsize>(hl));
  nlohmann::json h = nlohmann::json::parse(header, nullptr, false);
  if (h.is_discarded() || !h.contains(key)) throw ImportError(fmt::format("{}: no tensor '{}'", file.string(), key));
  std::string dt = h[key].value("dtype", "");
  auto off = h[key].at("data_offsets");
  size_t begin = off[0].get<size_t>(), end = off[1].get<size_t>();
  static const std::map<std::string, int> width = {{"I64", 8}, {"I32", 4}, {"I16", 2},
                                                   {"I8", 1},  {"U8", 1},  {"BOOL", 1}};
  if (!width.count(dt))
    throw ImportError(fmt::format("{}: tensor '{}' is {}, not an integer type", file.string(), key, dt));
  int w = width.at(dt);
  std::string data(end - begin, '\0');
  in.seekg(static_cast<std::streamoff>(8 + hl + begin));
  if (!in.read(data.data(), static_cast<std::streamsize>(data.size())))
    throw ImportError(fmt::format("{}: tensor '{}' is cut short", file.string(), key));
  std::vector<long long> v;
  for (size_t i = 0; i + w <= data.size(); i += w) {
    uint64_t u = 0;
    for (int b = w - 1; b >= 0; --b) u = (u << 8) | static_cast<unsigned char>(data[i + b]);
    long long x = static_cast<long long>(u);
    if (dt[0] == 'I' && w < 8 && (u >> (8 * w - 1)) & 1) x -= (1LL << (8 * w));  // sign
    v.push_back(x);
  }
  return v;
}

}  // namespace tessera::importer
