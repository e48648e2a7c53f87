// spec/spec.cpp — parsing and checking of targets/<op>/spec.json.
//
// Every error says which file, which field (as a JSON path like
// tensors[2].dtype) and what was expected, so a spec author can fix it without
// reading this code.
#include "spec/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>

namespace tessera::spec {

using nlohmann::json;
namespace fs = std::filesystem;

size_t dtype_size(DType t) {
  switch (t) {
    case DType::bf16:
    case DType::f16:
      return 2;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
  }
  return "?";
}

const char* torch_dtype_name(DType t) {
  switch (t) {
    case DType::bf16:
      return "bfloat16";
    case DType::f16:
      return "float16";
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::i32:
      return "int32";
    case DType::i64:
      return "int64";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  if (s == "bf16") return DType::bf16;
  if (s == "f16") return DType::f16;
  if (s == "f32") return DType::f32;
  if (s == "f64") return DType::f64;
  if (s == "i32") return DType::i32;
  if (s == "i64") return DType::i64;
  throw std::invalid_argument("unknown dtype '" + s + "' (expected bf16, f16, f32, f64, i32 or i64)");
}

std::string Shape::label() const {
  if (!name.empty()) return name;
  std::string s;
  for (auto& [k, v] : symbols) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  if (!seqlens.empty()) s += fmt::format(",seqs={}", seqlens.size());
  return s;
}

json shape_json(const Shape& s) {
  json j = json::object();
  if (!s.name.empty()) j["name"] = s.name;
  for (auto& [k, v] : s.symbols) j[k] = v;
  if (!s.seqlens.empty()) j["seqlens"] = s.seqlens;
  return j;
}

namespace {

// Reads fields from a JSON object, remembering where it is for error messages.
class Reader {
 public:
  Reader(const json& j, std::string file, std::string path) : j_(j), file_(std::move(file)), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& expected) const {
    throw SpecError(fmt::format("{}: field '{}': expected {}", file_, at(field), expected));
  }
  std::string at(const std::string& field) const { return path_.empty() ? field : path_ + "." + field; }
  bool has(const std::string& f) const { return j_.is_object() && j_.contains(f); }
  const json& raw(const std::string& f) const {
    if (!has(f)) fail(f, "to be present");
    return j_.at(f);
  }
  std::string str(const std::string& f, std::optional<std::string> def = std::nullopt) const {
    if (!has(f)) {
      if (def) return *def;
      fail(f, "a string (it is missing)");
    }
    const json& v = j_.at(f);
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return v.dump();
    fail(f, "a string, got " + std::string(v.type_name()));
  }
  double num(const std::string& f, std::optional<double> def = std::nullopt) const {
    if (!has(f)) {
      if (def) return *def;
      fail(f, "a number (it is missing)");
    }
    const json& v = j_.at(f);
    if (!v.is_number()) fail(f, "a number, got " + std::string(v.type_name()));
    return v.get<double>();
  }
  Reader child(const std::string& f) const { return Reader(raw(f), file_, at(f)); }
  Reader item(const std::string& f, size_t i) const {
    return Reader(j_.at(f).at(i), file_, fmt::format("{}[{}]", at(f), i));
  }
  size_t array_size(const std::string& f, bool required = true) const {
    if (!has(f)) {
      if (required) fail(f, "an array (it is missing)");
      return 0;
    }
    if (!j_.at(f).is_array()) fail(f, "an array, got " + std::string(j_.at(f).type_name()));
    return j_.at(f).size();
  }
  std::vector<std::string> str_list(const std::string& f) const {
    std::vector<std::string> out;
    size_t n = array_size(f);
    for (size_t i = 0; i < n; ++i) {
      const json& v = j_.at(f)[i];
      if (v.is_string())
        out.push_back(v.get<std::string>());
      else if (v.is_number())
        out.push_back(v.dump());
      else
        fail(fmt::format("{}[{}]", f, i), "a string or number");
    }
    return out;
  }
  const json& j() const { return j_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

 private:
  const json& j_;
  std::string file_;
  std::string path_;
};

// A constant is allowed only as a per-shape override (e.g. a zero initial
// state as one validation case); a tensor's own distribution is never constant.
Init read_init(const Reader& r, bool allow_constant = false) {
  Init in;
  in.dist = r.str("dist");
  if (in.dist == "normal") {
    in.a = r.num("mean", 0.0);
    in.b = r.num("std", 1.0);
    if (in.b <= 0) r.fail("std", "a positive standard deviation");
  } else if (in.dist == "uniform" || in.dist == "randint") {
    in.a = r.num("low");
    in.b = r.num("high");
    if (!(in.b > in.a)) r.fail("high", "a value above 'low' (never a constant input)");
  } else if (in.dist == "cu_seqlens") {
  } else if (in.dist == "offsets") {
    in.last = r.str("last");
    in.not_below = r.str("not_below", std::string());
  } else if (in.dist == "indices") {
    in.below = r.str("below");
  } else if (in.dist == "values" && allow_constant) {
    size_t n = r.array_size("values");
    for (size_t i = 0; i < n; ++i) {
      const json& v = r.j().at("values")[i];
      if (!v.is_number_integer()) r.fail(fmt::format("values[{}]", i), "an integer");
      in.values.push_back(v.get<long long>());
    }
  } else if (in.dist == "constant" && allow_constant) {
    in.a = r.num("value");
  } else {
    r.fail("dist", allow_constant
                       ? "one of normal, uniform, randint, cu_seqlens, offsets, indices, constant, values"
                       : "one of normal, uniform, randint, cu_seqlens, offsets, indices (constant and values "
                         "only in a shape's init_overrides)");
  }
  return in;
}

Shape read_shape(const Reader& r, const std::vector<std::string>& symbols, bool derive_t, bool derive_nseq) {
  Shape s;
  if (!r.j().is_object()) r.fail("", "a shape object like {\"M\": 128, \"N\": 256}");
  s.name = r.str("name", std::string());
  for (auto& [k, v] : r.j().items()) {
    if (k == "name") continue;
    if (k == "seqlens") {
      if (!v.is_array() || v.empty()) r.fail(k, "a non-empty array of sequence lengths");
      for (auto& x : v) {
        if (!x.is_number_integer() || x.get<long long>() < 0) r.fail(k, "non-negative integers");
        s.seqlens.push_back(x.get<long long>());
      }
      continue;
    }
    if (k == "init_overrides") {
      for (auto& [tn, tv] : v.items()) s.init_overrides[tn] = read_init(Reader(tv, r.file(), r.at(k + "." + tn)), true);
      continue;
    }
    if (k == "flops" || k == "bytes") {
      if (!v.is_number() || v.get<double>() < 0) r.fail(k, "a non-negative number (this shape's " + k + ")");
      (k == "flops" ? s.flops : s.bytes) = v.get<double>();
      continue;
    }
    if (std::find(symbols.begin(), symbols.end(), k) == symbols.end())
      r.fail(k, "one of the declared symbols (this name is not in 'symbols')");
    if (!v.is_number_integer()) r.fail(k, "an integer");
    s.symbols[k] = v.get<long long>();
  }
  if (!s.seqlens.empty()) {
    long long total = 0;
    for (auto x : s.seqlens) total += x;
    if (derive_t && !s.symbols.count("T")) s.symbols["T"] = total;
    if (derive_nseq && !s.symbols.count("NSEQ")) s.symbols["NSEQ"] = static_cast<long long>(s.seqlens.size());
    if (derive_t && s.symbols["T"] != total) r.fail("T", "the sum of seqlens");
  }
  for (auto& sym : symbols)
    if (!s.symbols.count(sym)) r.fail(sym, "a value for every declared symbol");
  return s;
}

}  // namespace

std::optional<TensorMapArg> parse_tensor_map_arg(const std::string& arg) {
  if (arg.rfind("tmap:", 0) != 0) return std::nullopt;
  auto bad = [&](const std::string& why) {
    return SpecError(fmt::format("tensor-map argument '{}': {} (the form is tmap:NAME:B0xB1x..:SWIZZLE)", arg, why));
  };
  const size_t a = 5, b = arg.find(':', a), c = b == std::string::npos ? b : arg.find(':', b + 1);
  if (b == std::string::npos || c == std::string::npos || arg.find(':', c + 1) != std::string::npos)
    throw bad("three fields after 'tmap:'");
  TensorMapArg t;
  t.tensor = arg.substr(a, b - a);
  if (t.tensor.empty()) throw bad("no tensor name");
  const std::string box = arg.substr(b + 1, c - b - 1), sw = arg.substr(c + 1);
  size_t pos = 0;
  while (pos <= box.size()) {
    size_t x = box.find('x', pos);
    if (x == std::string::npos) x = box.size();
    const std::string d = box.substr(pos, x - pos);
    if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos || d.size() > 3)
      throw bad("box sizes are integers");
    const int v = std::stoi(d);
    if (v < 1 || v > 256) throw bad("each box size is 1..256");
    t.box.push_back(v);
    pos = x + 1;
  }
  if (t.box.empty() || t.box.size() > 5) throw bad("1 to 5 box sizes");
  if (sw != "0" && sw != "32" && sw != "64" && sw != "128") throw bad("the swizzle is 0, 32, 64 or 128");
  t.swizzle = std::stoi(sw);
  return t;
}

namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// `e` with every identifier that names a let replaced by its expression in parentheses,
// repeatedly (lets may use lets); throws naming the let when they cycle.
std::string substitute_lets(const std::string& e, const std::map<std::string, std::string>& lets,
                            const std::function<void(const std::string&)>& fail, int depth = 0) {
  std::string out;
  bool any = false;
  for (size_t i = 0; i < e.size();) {
    if (!ident_start(e[i]) || (i > 0 && (ident_char(e[i - 1]) || e[i - 1] == '.'))) {
      out += e[i++];
      continue;
    }
    size_t j = i;
    while (j < e.size() && ident_char(e[j])) ++j;
    const std::string word = e.substr(i, j - i);
    if (auto it = lets.find(word); it != lets.end()) {
      if (depth > static_cast<int>(lets.size())) fail(word);
      out += "(" + it->second + ")";
      any = true;
    } else {
      out += word;
    }
    i = j;
  }
  return any ? substitute_lets(out, lets, fail, depth + 1) : out;
}

void apply_lets(Program& p, const Reader& r) {
  if (p.lets.empty()) return;
  const auto fail = [&](const std::string& name) { r.fail("let." + name, "an expression that does not use itself"); };
  const auto sub = [&](std::string& e) { e = substitute_lets(e, p.lets, fail); };
  for (auto& c : p.constraints) sub(c);
  for (auto& k : p.launch) {
    for (auto& g : k.grid) sub(g);
    for (auto& b : k.block) sub(b);
    sub(k.smem);
    sub(k.when);
  }
  for (auto& sc : p.scratch) sub(sc.size);
}

KernelLaunch read_launch(const Reader& r) {
  KernelLaunch k;
  k.kernel = r.str("kernel");
  for (const char* f : {"grid", "block"}) {
    if (!r.has(f)) continue;
    auto v = r.str_list(f);
    if (v.empty() || v.size() > 3) r.fail(f, "1 to 3 expressions");
    for (size_t i = 0; i < v.size(); ++i) (std::string(f) == "grid" ? k.grid : k.block)[i] = v[i];
  }
  k.smem = r.str("smem", std::string("0"));
  k.when = r.str("when", std::string("1"));
  k.args = r.str_list("args");
  k.stream = r.str("stream", std::string("main"));
  if (k.stream != "main" && k.stream != "side") r.fail("stream", "\"main\" or \"side\"");
  if (r.has("pdl")) {
    if (!r.raw("pdl").is_boolean()) r.fail("pdl", "true or false");
    k.pdl = r.raw("pdl").get<bool>();
    if (k.pdl && k.stream != "main")
      r.fail("pdl", "false on the side stream (a programmatic dependent launch follows a kernel of the main stream)");
  }
  return k;
}

Program read_program(const Reader& r, const fs::path& dir, bool is_template, bool require_source = true) {
  Program p;
  p.name = r.str("name", std::string(is_template ? "" : "main"));
  if (is_template && p.name.empty()) r.fail("name", "a template name");
  if (r.has("builtin")) {
    p.builtin = r.str("builtin");
    if (p.builtin != "cublas_gemm") r.fail("builtin", "one of: cublas_gemm");
    return p;
  }
  if (r.has("python") && !is_template) {
    std::string py = r.str("python");
    if (py.find("..") != std::string::npos || py.empty() || py[0] == '/')
      r.fail("python", "a file name inside the target folder");
    p.python = dir / py;
    if (!fs::exists(p.python)) r.fail("python", "an existing file (" + p.python.string() + " not found)");
    if (p.python.extension() != ".json" && p.python.extension() != ".py")
      r.fail("python", "a FlashInfer Trace definition (.json) or a baseline (.py) with a run function");
    return p;
  }
  std::string src = r.str("source", require_source ? std::nullopt : std::optional<std::string>(""));
  if (src.find("..") != std::string::npos || (!src.empty() && src[0] == '/'))
    r.fail("source", "a file name inside the target folder");
  if (!src.empty()) p.source = dir / src;
  if (require_source && !fs::exists(p.source))
    r.fail("source", "an existing file (" + p.source.string() + " not found)");
  if (r.has("arch")) p.arch = r.str_list("arch");
  if (r.has("params")) {
    const json& pj = r.raw("params");
    if (!pj.is_object()) r.fail("params", "an object of name -> list of values");
    for (auto& [name, vals] : pj.items()) {
      if (!vals.is_array() || vals.empty()) r.fail("params." + name, "a non-empty list of integers");
      std::vector<long long> v;
      for (auto& x : vals) {
        if (!x.is_number_integer()) r.fail("params." + name, "integers");
        v.push_back(x.get<long long>());
      }
      p.params[name] = v;
      p.param_order.push_back(name);
    }
  }
  if (r.has("constraints")) p.constraints = r.str_list("constraints");
  if (r.has("let")) {
    const json& lj = r.raw("let");
    if (!lj.is_object()) r.fail("let", "an object of name -> expression");
    for (auto& [name, e] : lj.items()) {
      if (!ident_start(name[0]) || !std::all_of(name.begin(), name.end(), ident_char))
        r.fail("let." + name, "a name (letters, digits, _)");
      if (!e.is_string()) r.fail("let." + name, "an expression (a string)");
      if (p.params.count(name) || name == kSmCountSymbol)
        r.fail("let." + name, "a name that is not a parameter or SMS");
      p.lets[name] = e.get<std::string>();
    }
  }
  size_t n = r.array_size("launch");
  if (n == 0) r.fail("launch", "at least one kernel");
  for (size_t i = 0; i < n; ++i) p.launch.push_back(read_launch(r.item("launch", i)));
  if (p.launch[0].pdl)
    r.item("launch", 0).fail("pdl", "false on the first step (it depends on no kernel of the program)");
  size_t ns = r.array_size("scratch", false);
  for (size_t i = 0; i < ns; ++i) {
    Reader s = r.item("scratch", i);
    Scratch sc;
    sc.name = s.str("name");
    try {
      sc.dtype = parse_dtype(s.str("dtype"));
    } catch (std::invalid_argument& e) {
      s.fail("dtype", "bf16, f16, f32, f64, i32 or i64");
    }
    sc.size = s.str("size");
    p.scratch.push_back(sc);
  }
  apply_lets(p, r);
  return p;
}

// Checks that a program's expressions and argument names resolve.
void check_program(const Operator& op, const Program& p, const std::string& file, const std::string& where) {
  if (!p.builtin.empty() || !p.python.empty()) return;
  Bindings b = op.bindings(op.benchmark_shapes.empty() ? op.validation_shapes.at(0) : op.benchmark_shapes.at(0));
  for (auto& [name, vals] : p.params) b[name] = static_cast<double>(vals.front());
  b[kSmCountSymbol] = 132;  // (a representative SM count, for the checks only: the judge binds the device's)
  std::set<std::string> names = {kSmCountSymbol};
  for (auto& t : op.tensors) names.insert(t.name);
  for (auto& s : p.scratch) {
    names.insert(s.name);
    std::string err;
    if (!check(s.size, b, &err)) throw SpecError(fmt::format("{}: {}.scratch '{}': {}", file, where, s.name, err));
  }
  for (auto& s : op.scalars) names.insert(s.name);
  for (auto& s : op.symbols) names.insert(s);
  for (auto& [name, _] : p.params) names.insert(name);
  for (auto& [name, _] : p.lets)
    if (names.count(name))
      throw SpecError(
          fmt::format("{}: {}.let.{}: a name that is not a symbol, scalar, tensor or parameter", file, where, name));
  for (size_t i = 0; i < p.launch.size(); ++i) {
    auto& k = p.launch[i];
    for (auto& a : k.args) {
      std::optional<TensorMapArg> tm;
      try {
        tm = parse_tensor_map_arg(a);
      } catch (const SpecError& e) {
        throw SpecError(fmt::format("{}: {}.launch[{}].args: {}", file, where, i, e.what()));
      }
      if (tm) {
        const Tensor* t = nullptr;
        for (auto& x : op.tensors)
          if (x.name == tm->tensor) t = &x;
        std::string why;
        if (!t)
          why = "is not a tensor of the operator";
        else if (tm->box.size() != t->shape.size())
          why = fmt::format("gives {} box sizes for a tensor of rank {}", tm->box.size(), t->shape.size());
        else if (t->dtype == DType::i64 && tm->swizzle)
          why = "swizzles 8-byte elements";
        else if ((tm->box[0] * dtype_size(t->dtype)) % 16)
          why = "has an innermost box row that is not a multiple of 16 bytes";
        else if (tm->swizzle && static_cast<int>(tm->box[0] * dtype_size(t->dtype)) > tm->swizzle)
          why = fmt::format("has an innermost box row wider than its {}-byte swizzle", tm->swizzle);
        if (!why.empty())
          throw SpecError(fmt::format("{}: {}.launch[{}].args: tensor map '{}' {}", file, where, i, a, why));
        continue;
      }
      if (!names.count(a))
        throw SpecError(
            fmt::format("{}: {}.launch[{}].args: '{}' is not a tensor, scratch buffer, symbol, scalar or parameter",
                        file, where, i, a));
    }
    std::vector<std::string> exprs = {k.grid[0],  k.grid[1],  k.grid[2], k.block[0],
                                      k.block[1], k.block[2], k.smem,    k.when};
    for (auto& e : exprs) {
      std::string err;
      if (!check(e, b, &err)) throw SpecError(fmt::format("{}: {}.launch[{}]: {}", file, where, i, err));
    }
  }
  for (auto& c : p.constraints) {
    std::string err;
    if (!check(c, b, &err)) throw SpecError(fmt::format("{}: {}.constraints: {}", file, where, err));
  }
}

// The index distributions' expressions evaluate, and their partners exist, at shape `s`.
void check_index_inits(const Operator& op, const Shape& s, const Bindings& b, const std::string& file) {
  std::set<std::string> offsets_before;
  for (auto& t : op.tensors) {
    if (t.output) continue;
    Init in = t.init;
    if (auto it = s.init_overrides.find(t.name); it != s.init_overrides.end()) in = it->second;
    bool index = in.dist == "offsets" || in.dist == "indices" || in.dist == "values" || in.dist == "cu_seqlens";
    if (index && t.dtype != DType::i32 && t.dtype != DType::i64)
      throw SpecError(fmt::format("{}: tensor '{}': {} entries need dtype i32 or i64", file, t.name, in.dist));
    std::string err;
    if (in.dist == "offsets" && !check(in.last, b, &err))
      throw SpecError(fmt::format("{}: tensor '{}'.init.last at shape {}: {}", file, t.name, s.label(), err));
    if (in.dist == "indices" && !check(in.below, b, &err))
      throw SpecError(fmt::format("{}: tensor '{}'.init.below at shape {}: {}", file, t.name, s.label(), err));
    if (in.dist == "offsets" && !in.not_below.empty() && !offsets_before.count(in.not_below))
      throw SpecError(
          fmt::format("{}: tensor '{}'.init.not_below: expected an offsets input listed before it, got '{}'", file,
                      t.name, in.not_below));
    if (in.dist == "values" && static_cast<long long>(in.values.size()) != op.elements(t, b))
      throw SpecError(fmt::format("{}: shape {}: init_overrides.{}: {} values for a tensor of {} entries", file,
                                  s.label(), t.name, in.values.size(), op.elements(t, b)));
    if (in.dist == "offsets") offsets_before.insert(t.name);
  }
}

}  // namespace

Program program_from_json(const json& j, const fs::path& dir, bool require_source) {
  return read_program(Reader(j, "(program)", ""), dir, true, require_source);
}

void validate_program(const Operator& op, const Program& p, const std::string& where) {
  check_program(op, p, "(program)", where);
}

json program_to_json(const Program& p, const fs::path& dir) {
  json j = {{"name", p.name}};
  if (!p.builtin.empty()) {
    j["builtin"] = p.builtin;
    return j;
  }
  if (!p.python.empty()) {
    j["python"] = p.python.filename().string();
    return j;
  }
  if (!p.source.empty() && !dir.empty() && p.source.parent_path() == dir) j["source"] = p.source.filename().string();
  if (!p.arch.empty()) j["arch"] = p.arch;
  if (!p.params.empty()) {
    json params = json::object();
    for (auto& [name, values] : p.params) params[name] = values;
    j["params"] = params;
  }
  if (!p.constraints.empty()) j["constraints"] = p.constraints;
  json launch = json::array();
  for (auto& k : p.launch) {
    launch.push_back({{"kernel", k.kernel},
                      {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                      {"block", {k.block[0], k.block[1], k.block[2]}},
                      {"smem", k.smem},
                      {"args", k.args}});
    if (k.stream != "main") launch.back()["stream"] = k.stream;
    if (k.when != "1") launch.back()["when"] = k.when;
    if (k.pdl) launch.back()["pdl"] = true;  // (absent when false: plans judged before it stay alike)
  }
  j["launch"] = launch;
  if (!p.scratch.empty()) {
    json scratch = json::array();
    for (auto& s : p.scratch) scratch.push_back({{"name", s.name}, {"dtype", dtype_name(s.dtype)}, {"size", s.size}});
    j["scratch"] = scratch;
  }
  return j;
}

json judged_plan(const Program& t, const std::map<std::string, long long>& values) {
  json j = program_to_json(t);
  j.erase("source");
  j.erase("constraints");
  json params = json::object();
  for (auto& [name, v] : values) params[name] = json::array({v});
  if (!params.empty()) j["params"] = params;
  return j;
}

std::map<std::string, long long> complete_params(const Program& t, std::map<std::string, long long> values) {
  for (auto& [name, listed] : t.params)
    if (!listed.empty()) values.emplace(name, listed.front());
  return values;
}

bool same_launches(const Program& a, const Program& b) {
  auto launches = [](const Program& p) {
    json j = program_to_json(p);
    return json{{"launch", j.value("launch", json::array())},
                {"scratch", j.value("scratch", json::array())},
                {"arch", j.value("arch", json::array())}};
  };
  return launches(a) == launches(b);
}

const Tensor* Operator::tensor(const std::string& n) const {
  for (auto& t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}

const Program* Operator::find_template(const std::string& n) const {
  for (auto& t : templates)
    if (t.name == n) return &t;
  return nullptr;
}

bool launched(const KernelLaunch& k, const Bindings& b) {
  if (k.when != "1" && eval_int(k.when, b) == 0) return false;
  for (const auto& g : k.grid)
    if (eval_int(g, b) <= 0) return false;
  return true;
}

Bindings Operator::bindings(const Shape& s) const {
  Bindings b;
  for (auto& [k, v] : s.symbols) b[k] = static_cast<double>(v);
  for (auto& sc : scalars) b[sc.name] = eval(sc.expr, b);
  return b;
}

long long Operator::elements(const Tensor& t, const Bindings& b) const {
  long long n = 1;
  for (auto& e : t.shape) n *= eval_int(e, b);
  return n;
}

double Operator::flops_at(const Shape& s) const {
  if (s.flops) return *s.flops;
  return flops.empty() ? 0 : eval(flops, bindings(s));
}
double Operator::bytes_at(const Shape& s) const {
  if (s.bytes) return *s.bytes;
  return bytes.empty() ? 0 : eval(bytes, bindings(s));
}

namespace {

json read_spec_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw SpecError(fmt::format("{}: cannot be read (does the operator exist?)", file.string()));
  try {
    return json::parse(in);
  } catch (json::parse_error& e) {
    throw SpecError(fmt::format("{}: not valid JSON: {}", file.string(), e.what()));
  }
}

// A suite's spec.json (`"extends"` present) over the spec it extends: the base's JSON with
// the suite's name, description and benchmark shapes. Sets *base_dir to the base's folder.
json apply_extends(const json& j, const fs::path& file, fs::path* base_dir) {
  Reader r(j, file.string(), "");
  for (auto& [key, v] : j.items())
    if (key != "extends" && key != "name" && key != "description" && key != "benchmark_shapes")
      r.fail(key, "only extends, name, description and benchmark_shapes in a suite (the rest is the base's)");
  const std::string rel = r.str("extends");
  *base_dir = fs::weakly_canonical(file.parent_path() / rel);
  const fs::path base_file = *base_dir / "spec.json";
  if (!fs::exists(base_file)) r.fail("extends", "an operator's folder (" + base_file.string() + " not found)");
  json merged = read_spec_json(base_file);
  if (!merged.is_object() || merged.contains("extends"))
    r.fail("extends", "an operator that extends none (" + base_file.string() + " does)");
  merged["name"] = r.str("name");
  merged["description"] = r.str("description", std::string());
  if (!r.has("benchmark_shapes")) r.fail("benchmark_shapes", "the suite's shapes (a suite is its shapes)");
  merged["benchmark_shapes"] = j.at("benchmark_shapes");
  return merged;
}

// The spec's scalars (name -> {dtype, expr}), in the file's order.
void read_scalars(const Reader& r, const fs::path& file, Operator& op) {
  if (!r.has("scalars")) return;
  for (auto& [name, v] : r.raw("scalars").items()) {
    Reader s(v, file.string(), "scalars." + name);
    Scalar sc;
    sc.name = name;
    try {
      sc.dtype = parse_dtype(s.str("dtype", std::string("f32")));
    } catch (std::invalid_argument&) {
      s.fail("dtype", "f32, f64 or i64");
    }
    sc.expr = s.str("expr");
    op.scalars.push_back(sc);
  }
}

// One entry of tensors[]: its name (unique among `seen`), dtype, shape, role and tolerance or init.
Tensor read_tensor(const Reader& t, std::set<std::string>& seen) {
  Tensor tn;
  tn.name = t.str("name");
  if (!seen.insert(tn.name).second) t.fail("name", "a unique tensor name ('" + tn.name + "' repeats)");
  try {
    tn.dtype = parse_dtype(t.str("dtype"));
  } catch (std::invalid_argument&) {
    t.fail("dtype", "bf16, f16, f32, f64, i32 or i64");
  }
  tn.shape = t.str_list("shape");
  std::string role = t.str("role");
  if (role != "input" && role != "output") t.fail("role", "'input' or 'output'");
  tn.output = role == "output";
  if (tn.output) {
    if (t.has("tolerance")) {
      Reader tol = t.child("tolerance");
      tn.tol.rel_l2 = tol.num("rel_l2");
      if (tol.has("max_abs")) tn.tol.max_abs = tol.num("max_abs");
    } else {
      t.fail("tolerance", "an object {\"rel_l2\": ..} for every output");
    }
  } else {
    if (!t.has("init")) t.fail("init", "an init distribution for every input");
    tn.init = read_init(t.child("init"));
  }
  return tn;
}

// validation_shapes and benchmark_shapes, each with at least one shape.
void read_shapes(const Reader& r, Operator& op) {
  bool derive_t = std::count(op.symbols.begin(), op.symbols.end(), "T") > 0;
  bool derive_n = std::count(op.symbols.begin(), op.symbols.end(), "NSEQ") > 0;
  for (const char* suite : {"validation_shapes", "benchmark_shapes"}) {
    size_t n = r.array_size(suite);
    if (n == 0) r.fail(suite, "at least one shape");
    for (size_t i = 0; i < n; ++i) {
      Shape s = read_shape(r.item(suite, i), op.symbols, derive_t, derive_n);
      (std::string(suite) == "validation_shapes" ? op.validation_shapes : op.benchmark_shapes).push_back(s);
    }
  }
}

// Every expression that depends only on shapes must evaluate at every shape.
void check_shape_expressions(const Operator& op, const fs::path& file) {
  for (auto* suite : {&op.validation_shapes, &op.benchmark_shapes}) {
    for (auto& s : *suite) {
      Bindings b;
      try {
        b = op.bindings(s);
      } catch (std::exception& e) {
        throw SpecError(fmt::format("{}: scalars at shape {}: {}", file.string(), s.label(), e.what()));
      }
      for (auto& t : op.tensors) {
        for (size_t d = 0; d < t.shape.size(); ++d) {
          std::string err;
          if (!check(t.shape[d], b, &err))
            throw SpecError(fmt::format("{}: tensors '{}'.shape[{}]: {}", file.string(), t.name, d, err));
        }
        if (op.elements(t, b) < 0)
          throw SpecError(
              fmt::format("{}: tensor '{}' has a negative size at shape {}", file.string(), t.name, s.label()));
      }
      for (auto* f : {&op.flops, &op.bytes}) {
        std::string err;
        if (!check(*f, b, &err)) throw SpecError(fmt::format("{}: flops/bytes: {}", file.string(), err));
      }
      check_index_inits(op, s, b, file.string());
    }
  }
}

// The "imported" object: the FlashInfer Trace files (inside `dir`) the operator came from.
Operator::Imported read_imported(const Reader& im, const fs::path& dir) {
  Operator::Imported imp;
  imp.op_type = im.str("op_type", std::string());
  for (auto [field, path] : {std::pair{"definition", &imp.definition}, std::pair{"workloads", &imp.workloads}}) {
    std::string f = im.str(field, std::string());
    if (f.empty()) continue;
    if (f.find("..") != std::string::npos || f[0] == '/') im.fail(field, "a file name inside the target folder");
    *path = dir / f;
    if (!fs::exists(*path)) im.fail(field, "an existing file (" + path->string() + " not found)");
  }
  if (imp.definition.empty()) im.fail("definition", "the FlashInfer Trace definition the operator came from");
  return imp;
}

// reference, baseline and templates (read, not yet checked against the operator).
void read_programs(const Reader& r, const fs::path& dir, Operator& op) {
  op.reference = read_program(r.child("reference"), dir, false);
  if (!op.reference.builtin.empty()) r.fail("reference", "a source reference (a built-in cannot be the judge)");
  if (!op.reference.python.empty() && op.reference.python.extension() != ".json")
    r.fail("reference.python", "a FlashInfer Trace definition (.json): its run is the reference");
  op.baseline = read_program(r.child("baseline"), dir, false);
  if (!op.baseline.python.empty() && op.reference.python.empty())
    r.fail("baseline.python", "a Python reference too (the reference process times a Python baseline)");
  size_t ntp = r.array_size("templates", !op.imported);
  if (ntp == 0 && !op.imported) r.fail("templates", "at least one template");
  for (size_t i = 0; i < ntp; ++i) {
    Program p = read_program(r.item("templates", i), dir, true);
    if (op.find_template(p.name)) r.item("templates", i).fail("name", "a unique template name");
    op.templates.push_back(p);
  }
}

}  // namespace

Operator load_operator(const fs::path& dir_in) {
  const fs::path spec_dir = fs::absolute(dir_in);
  fs::path dir = spec_dir;  // where the sources are: the base's folder for a suite
  fs::path file = spec_dir / "spec.json";
  json j = read_spec_json(file);
  if (!j.is_object()) Reader(j, file.string(), "").fail("(top level)", "an object");
  Operator op;
  if (j.contains("extends")) {
    j = apply_extends(j, file, &dir);
    op.extends = dir.filename().string();
  }
  Reader r(j, op.extends.empty() ? file.string() : fmt::format("{} (extending {})", file.string(), op.extends), "");
  op.dir = dir;
  op.spec_dir = spec_dir;
  op.name = r.str("name");
  op.description = r.str("description", std::string());
  op.symbols = r.str_list("symbols");
  if (std::count(op.symbols.begin(), op.symbols.end(), kSmCountSymbol))
    r.fail("symbols", fmt::format("names other than {} (the device's SM count, bound by the judge)", kSmCountSymbol));
  op.figure_of_merit = r.str("figure_of_merit", std::string("time"));
  if (op.figure_of_merit != "time" && op.figure_of_merit != "bandwidth")
    r.fail("figure_of_merit", "'time' or 'bandwidth'");
  read_scalars(r, file, op);
  size_t nt = r.array_size("tensors");
  std::set<std::string> seen;
  for (size_t i = 0; i < nt; ++i) op.tensors.push_back(read_tensor(r.item("tensors", i), seen));
  read_shapes(r, op);
  op.flops = r.str("flops");
  op.bytes = r.str("bytes");
  check_shape_expressions(op, file);
  if (r.has("imported")) op.imported = read_imported(r.child("imported"), dir);
  read_programs(r, dir, op);
  check_program(op, op.reference, file.string(), "reference");
  check_program(op, op.baseline, file.string(), "baseline");
  for (size_t i = 0; i < op.templates.size(); ++i)
    check_program(op, op.templates[i], file.string(), fmt::format("templates[{}]", i));
  return op;
}

fs::path targets_dir() {
  if (const char* e = std::getenv("TESSERA_TARGETS")) return e;
  if (fs::exists("targets") && fs::is_directory("targets")) return fs::absolute("targets");
  return fs::path(TESSERA_SOURCE_DIR) / "targets";
}

std::vector<std::string> list_operators(const fs::path& targets) {
  std::vector<std::string> out;
  if (!fs::exists(targets)) return out;
  for (auto& e : fs::directory_iterator(targets))
    if (e.is_directory() && fs::exists(e.path() / "spec.json")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tessera::spec
