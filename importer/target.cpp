// importer/target.cpp — the operator `tessera import` writes for a definition: symbols,
// tensors and their input distributions, shapes, formulas, the Python reference and
// baseline; templates for known op_types come from importer/op_types.cpp.
#include "importer/target.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>

#include "importer/op_types.h"
#include "spec/index_init.h"

namespace tessera::importer {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

size_t format_size(const std::string& dtype) {
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "int64") return 8;
  return 2;
}

unsigned long long fnv(const std::string& s) {
  unsigned long long h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string product(const std::vector<std::string>& dims) {
  if (dims.empty()) return "1";
  std::string s;
  for (auto& d : dims) s += (s.empty() ? "" : "*") + d;
  return s;
}

// The relations the definition's constraints state: "X == T[-1].item()" (the last offset
// of T is axis X) and "L == C + 1" (axis L is one more than axis C).
struct Relations {
  std::map<std::string, std::string> last_of;   // tensor -> axis
  std::map<std::string, std::string> one_more;  // L -> C
};

Relations relations(const Definition& d) {
  Relations r;
  static const std::regex last1(R"(^\s*(\w+)\s*==\s*(\w+)\s*\[\s*-1\s*\]\s*\.item\(\)\s*$)");
  static const std::regex last2(R"(^\s*(\w+)\s*\[\s*-1\s*\]\s*\.item\(\)\s*==\s*(\w+)\s*$)");
  static const std::regex plus1(R"(^\s*(\w+)\s*==\s*(\w+)\s*\+\s*1\s*$)");
  std::smatch m;
  for (auto& c : d.constraints) {
    if (std::regex_match(c, m, last1) && d.axis(m[1]))
      r.last_of[m[2]] = m[1];
    else if (std::regex_match(c, m, last2) && d.axis(m[2]))
      r.last_of[m[1]] = m[2];
    else if (std::regex_match(c, m, plus1) && d.axis(m[1]) && d.axis(m[2]))
      r.one_more[m[1]] = m[2];
  }
  return r;
}

bool is_int(const std::string& dtype) {
  return dtype.rfind("int", 0) == 0;
}

// How an integer input is made: offsets rising to an axis, or indices below one.
ojson index_init(const Definition& d, const TensorDef& t, const Relations& rel) {
  const std::string& n = t.name;
  auto where = fmt::format("{}: field 'inputs.{}'", d.file.string(), n);
  if (!t.shape || t.shape->size() != 1)
    throw ImportError(where +
                      ": expected integer inputs to be 1-D offsets or indices (tessera cannot tell what this "
                      "one holds, and random integers would not be valid)");
  bool offsets =
      n.find("indptr") != std::string::npos || n.rfind("cu_seqlens", 0) == 0 || n.find("offsets") != std::string::npos;
  if (offsets) {
    auto it = rel.last_of.find(n);
    if (it == rel.last_of.end())
      throw ImportError(
          fmt::format("{}: expected a constraint 'AXIS == {}[-1].item()' saying what its last offset "
                      "equals",
                      where, n));
    ojson init = {{"dist", "offsets"}, {"last", it->second}};
    // Keys that cover their queries: kv offsets no shorter than the query offsets.
    if (n.rfind("kv_", 0) == 0) {
      std::string q = "qo_" + n.substr(3);
      if (d.input(q) && rel.last_of.count(q)) init["not_below"] = q;
    }
    return init;
  }
  if (n.find("indices") != std::string::npos) {
    for (auto& o : d.inputs)
      if (o.name.find("cache") != std::string::npos && o.shape && !o.shape->empty())
        return {{"dist", "indices"}, {"below", o.shape->front()}};
    if (d.axis("num_pages")) return {{"dist", "indices"}, {"below", "num_pages"}};
    throw ImportError(where + ": expected an index input to point into a '*cache*' input or below a num_pages axis");
  }
  throw ImportError(where +
                    ": expected integer inputs to be offsets (*indptr, cu_seqlens*, *offsets) or indices "
                    "(*indices): tessera cannot tell what this one holds");
}

// Floating inputs in their real ranges (docs/import.md, "Inputs").
ojson float_init(const Definition& d, const TensorDef& t) {
  const std::string& n = t.name;
  if (d.op_type == "rmsnorm" && n == "weight") return {{"dist", "uniform"}, {"low", 0.5}, {"high", 1.5}};
  if (d.op_type == "gdn") {
    if (n == "A_log") return {{"dist", "uniform"}, {"low", 0.0}, {"high", 2.77}};     // A in [1, 16]
    if (n == "dt_bias") return {{"dist", "uniform"}, {"low", -6.9}, {"high", -2.3}};  // dt in [1e-3, 0.1]
    if ((n == "q" || n == "k") && t.shape && !t.shape->empty()) {
      const Axis* a = d.axis(t.shape->back());
      double dim = a && a->is_const && a->value > 0 ? static_cast<double>(a->value) : 128.0;
      return {{"dist", "normal"}, {"mean", 0.0}, {"std", 1.0 / std::sqrt(dim)}};  // unit-norm rows, as l2-normed
    }
    if (n == "state") return {{"dist", "normal"}, {"mean", 0.0}, {"std", 0.1}};
  }
  return {{"dist", "normal"}, {"mean", 0.0}, {"std", 1.0}};
}

ojson tolerance(const Definition& d, const TensorDef& t) {
  std::string where = fmt::format("{}: field 'outputs.{}.dtype'", d.file.string(), t.name);
  if (t.dtype == "bfloat16") return {{"rel_l2", 1e-2}};
  if (t.dtype == "float16") return {{"rel_l2", 5e-3}};
  if (t.dtype == "float32") return {{"rel_l2", 2e-3}};
  throw ImportError(where + ": expected a floating output (tessera judges float32, float16 and bfloat16 outputs)");
}

// Values of the var axes for the synthesized shapes (no workloads, and "length 1").
struct Tier {
  long long count, total, free;
};

std::map<std::string, long long> synthesize(const Definition& d, const Relations& rel, Tier t) {
  std::set<std::string> totals, lens, counts;
  for (auto& [tensor, axis] : rel.last_of) {
    totals.insert(axis);
    if (const TensorDef* td = d.input(tensor); td && td->shape && td->shape->size() == 1)
      lens.insert(td->shape->front());
  }
  for (auto& [l, c] : rel.one_more)
    if (lens.count(l)) counts.insert(c);
  std::map<std::string, long long> v;
  for (auto& a : d.axes) {
    if (a.is_const) continue;
    if (lens.count(a.name))
      v[a.name] = t.count + 1;
    else if (counts.count(a.name))
      v[a.name] = t.count;
    else if (totals.count(a.name))
      v[a.name] = t.total;
    else
      v[a.name] = t.free;
  }
  return v;
}

struct ShapeRow {
  std::map<std::string, long long> axes;
  std::map<std::string, std::vector<long long>> fixed;  // index inputs fixed for this shape
  std::string origin;
  double bytes = 0;
};

}  // namespace

Located locate(const ImportOptions& o) {
  Located l;
  fs::path p = o.path;
  if (fs::is_directory(p) && fs::exists(p / "definition.json")) p = p / "definition.json";
  if (fs::is_directory(p)) {
    if (o.name.empty())
      throw ImportError(fmt::format("{}: a dataset folder: name the definition with --name", p.string()));
    for (auto& e : fs::recursive_directory_iterator(p / "definitions", fs::directory_options::skip_permission_denied))
      if (e.path().filename() == o.name + ".json") l.definition = e.path();
    if (l.definition.empty())
      throw ImportError(fmt::format("{}: no definitions/*/{}.json in this dataset", p.string(), o.name));
    l.root = p;
  } else {
    if (!fs::exists(p)) throw ImportError(p.string() + ": no such file or folder");
    l.definition = p;
    fs::path up = p.parent_path().parent_path();
    l.root = up.filename() == "definitions" ? up.parent_path() : p.parent_path();
  }
  l.definition = fs::absolute(l.definition);
  l.root = fs::absolute(l.root);
  std::string op_type = l.definition.parent_path().filename().string(), stem = l.definition.stem().string();
  std::vector<fs::path> tries = {l.root / "workloads" / op_type / (stem + ".jsonl"),
                                 l.definition.parent_path() / "workloads.jsonl",
                                 l.definition.parent_path() / (stem + ".jsonl")};
  if (!o.workloads.empty()) tries = {o.workloads};
  for (auto& t : tries)
    if (fs::exists(t)) {
      l.workloads = fs::absolute(t);
      break;
    }
  if (!o.workloads.empty() && l.workloads.empty()) throw ImportError(o.workloads.string() + ": no such workloads file");
  if (fs::exists(l.definition.parent_path() / "baseline.py")) l.baseline = l.definition.parent_path() / "baseline.py";
  return l;
}

namespace {

// The bytes a workload's tensors take (the rank by which benchmark shapes are picked).
double workload_bytes(const Definition& d, const std::map<std::string, long long>& axes) {
  double b = 0;
  for (auto* part : {&d.inputs, &d.outputs})
    for (auto& t : *part) {
      if (!t.shape) continue;
      double n = 1;
      for (auto& a : *t.shape) n *= static_cast<double>(axes.count(a) ? axes.at(a) : d.axis(a)->value);
      b += n * static_cast<double>(format_size(t.dtype));
    }
  return b;
}

// Fixed index data for a benchmark shape: the workload's blob when it is present under the
// dataset's root, else generated (valid for its axes) from the workload's uuid.
void fix_indices(const Located& where, const Definition& d, const Relations& rel,
                 const std::vector<const TensorDef*>& index_inputs, ShapeRow& row, const Workload* w, int* blobs_read,
                 int* blobs_missing) {
  spec::Bindings b;
  for (auto& [k, v] : row.axes) b[k] = static_cast<double>(v);
  for (auto& a : d.axes)
    if (a.is_const) b[a.name] = static_cast<double>(a.value);
  std::map<std::string, std::vector<long long>> made;
  for (auto* t : index_inputs) {
    long long n = 1;
    for (auto& a : *t->shape) n *= static_cast<long long>(b.at(a));
    if (w && w->inputs.count(t->name) && w->inputs.at(t->name).type == "safetensors") {
      fs::path blob = where.root / w->inputs.at(t->name).path;
      if (fs::exists(blob)) {
        made[t->name] = read_safetensors_ints(blob, w->inputs.at(t->name).tensor_key);
        ++*blobs_read;
        continue;
      }
      ++*blobs_missing;
    }
    spec::Tensor st;
    st.name = t->name;
    spec::Init in;
    ojson ij = index_init(d, *t, rel);
    in.dist = ij["dist"];
    in.last = ij.value("last", "");
    in.not_below = ij.value("not_below", "");
    in.below = ij.value("below", "");
    spec::Shape s;
    s.symbols = row.axes;
    made[t->name] = spec::generate_index(st, in, s, b, n, fnv(row.origin + t->name), made);
  }
  row.fixed = made;
}

// Benchmark and validation shapes (docs/import.md, "Shapes").
void shapes(const Located& where, const Definition& d, const std::vector<Workload>& wl, const Relations& rel,
            int max_bench, const std::vector<const TensorDef*>& index_inputs, ojson& spec,
            std::vector<std::string>& notes, const OpTraits& traits) {
  int blobs_missing = 0, blobs_read = 0;
  std::vector<ShapeRow> rows;
  std::set<std::map<std::string, long long>> seen;
  for (auto& w : wl) {
    if (!seen.insert(w.axes).second) continue;
    ShapeRow r{w.axes, {}, w.uuid, workload_bytes(d, w.axes)};
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.bytes < b.bytes; });
  std::vector<ShapeRow> bench, valid;
  if (rows.empty()) {
    notes.push_back(
        "no workloads: the shapes are synthesized (docs/import.md, \"Shapes\"); give real ones with "
        "--workloads");
    for (Tier t : {Tier{4, 4096, 64}, Tier{16, 16384, 1024}})
      bench.push_back({synthesize(d, rel, t), {}, fmt::format("synthesized-{}", t.count)});
  } else {
    size_t k = std::min<size_t>(rows.size(), static_cast<size_t>(std::max(1, max_bench)));
    std::set<size_t> pick;
    for (size_t i = 0; i < k; ++i) pick.insert(k == 1 ? rows.size() - 1 : i * (rows.size() - 1) / (k - 1));
    for (size_t i : pick) bench.push_back(rows[i]);
    if (rows.size() > k)
      notes.push_back(
          fmt::format("{} distinct workloads: {} benchmark shapes at evenly spaced ranks by bytes moved, "
                      "the smallest and the largest included",
                      rows.size(), bench.size()));
  }
  for (auto& r : bench) {
    const Workload* w = nullptr;
    for (auto& x : wl)
      if (x.uuid == r.origin) w = &x;
    if (!index_inputs.empty()) fix_indices(where, d, rel, index_inputs, r, w, &blobs_read, &blobs_missing);
  }
  if (blobs_missing)
    notes.push_back(
        fmt::format("{} index tensors of the benchmark workloads live in safetensors blobs that are not "
                    "here (the dataset's blobs are on Hugging Face): generated instead, valid for each "
                    "workload's axes, fixed per workload",
                    blobs_missing));
  if (blobs_read)
    notes.push_back(fmt::format("{} index tensors read from the workloads' safetensors blobs", blobs_read));
  // Validation: awkward sizes for one free axis; else length 1, the smallest and a middle workload.
  std::vector<std::string> vars;
  for (auto& a : d.axes)
    if (!a.is_const) vars.push_back(a.name);
  if (vars.size() == 1 && index_inputs.empty()) {
    long long top = rows.empty() ? 1000 : rows.back().axes.at(vars[0]);
    for (long long v : {1LL, 2LL, 3LL, 7LL, 33LL, 127LL, 257LL, 1000LL})
      if (v <= std::max(top, 257LL)) valid.push_back({{{vars[0], v}}, {}, "awkward"});
    if (!rows.empty()) valid.push_back(rows[rows.size() / 2]);
  } else {
    valid.push_back({synthesize(d, rel, {1, 1, 1}), {}, "length 1"});
    if (rows.empty()) {
      for (Tier t : {Tier{3, 37, 7}, Tier{5, 1000, 33}}) valid.push_back({synthesize(d, rel, t), {}, "synthesized"});
    } else {
      for (size_t i : std::set<size_t>{0, std::min<size_t>(1, rows.size() - 1), rows.size() / 2})
        valid.push_back(rows[i]);
    }
  }
  auto shape_json = [&](const ShapeRow& r, bool fixed) {
    ojson s = ojson::object();
    for (auto& [k, v] : r.axes) s[k] = v;
    if (fixed && !r.fixed.empty()) {
      ojson ov = ojson::object();
      for (auto& [k, v] : r.fixed) ov[k] = {{"dist", "values"}, {"values", v}};
      s["init_overrides"] = ov;
      if (traits.flops_of_indices) s["flops"] = traits.flops_of_indices(r.axes, r.fixed);
    }
    return s;
  };
  spec["validation_shapes"] = ojson::array();
  for (auto& r : valid) spec["validation_shapes"].push_back(shape_json(r, false));
  spec["benchmark_shapes"] = ojson::array();
  for (auto& r : bench) spec["benchmark_shapes"].push_back(shape_json(r, true));
}

// The scalar inputs: the workloads' value (they agree), else a default from the axes.
void scalar_inputs(const Definition& d, const std::vector<Workload>& wl, ojson& scalars,
                   std::vector<std::string>& notes) {
  for (auto& t : d.inputs) {
    if (t.shape) continue;
    if (is_int(t.dtype))
      throw ImportError(fmt::format("{}: field 'inputs.{}': expected a floating scalar", d.file.string(), t.name));
    std::set<float> values;
    for (auto& w : wl)
      if (w.inputs.count(t.name) && w.inputs.at(t.name).type == "scalar")
        values.insert(static_cast<float>(w.inputs.at(t.name).value));
    std::string expr;
    if (!values.empty()) {
      expr = fmt::format("{:.9g}", *values.begin());
      if (values.size() > 1)
        notes.push_back(fmt::format("input '{}' takes {} values across the workloads; tessera uses {}", t.name,
                                    values.size(), expr));
    } else if (t.name.find("scale") != std::string::npos && (d.axis("head_dim") || d.axis("head_size"))) {
      expr = fmt::format("1/sqrt({})", d.axis("head_dim") ? "head_dim" : "head_size");
      notes.push_back(fmt::format("input '{}': no workload gives it; tessera uses {}", t.name, expr));
    } else {
      expr = "1";
      notes.push_back(fmt::format("input '{}': no workload gives it; tessera uses 1", t.name));
    }
    scalars[t.name] = {{"dtype", "f32"}, {"expr", expr}};  // (kernels take a float; the reference a Python float)
  }
}

// The spec's tensors: the inputs with a shape (their init; index inputs kept aside for the
// shapes' relations), then the outputs with their tolerances.
ojson tensors_of(const Definition& d, const Relations& rel, std::vector<const TensorDef*>& index_inputs,
                 std::vector<std::string>& notes) {
  ojson tensors = ojson::array();
  for (auto& t : d.inputs) {
    if (!t.shape) continue;
    ojson j = {{"name", t.name},
               {"dtype", tessera_dtype(t.dtype, d.file.string() + ": field 'inputs." + t.name + ".dtype'")},
               {"shape", *t.shape},
               {"role", "input"}};
    if (is_int(t.dtype)) {
      j["init"] = index_init(d, t, rel);
      index_inputs.push_back(&t);
    } else {
      j["init"] = float_init(d, t);
    }
    if (t.optional) notes.push_back(fmt::format("input '{}' is optional: tessera always passes it", t.name));
    tensors.push_back(j);
  }
  for (auto& t : d.outputs)
    tensors.push_back({{"name", t.name},
                       {"dtype", tessera_dtype(t.dtype, d.file.string() + ": field 'outputs." + t.name + ".dtype'")},
                       {"shape", *t.shape},
                       {"role", "output"},
                       {"tolerance", tolerance(d, t)}});
  return tensors;
}

}  // namespace

ImportResult build_target(const Located& where, const Definition& d, const std::vector<Workload>& wl,
                          int max_benchmark_shapes) {
  ImportResult res;
  res.name = d.name;
  auto& notes = res.notes;
  const Relations rel = relations(d);
  ojson spec = ojson::object();
  spec["name"] = d.name;
  spec["description"] = fmt::format("{} (imported by tessera from the FlashInfer Trace definition {}, op_type {})",
                                    d.description.empty() ? d.name : d.description, d.name, d.op_type);
  OpTraits traits = op_traits(d);
  spec["figure_of_merit"] = traits.bandwidth_bound ? "bandwidth" : "time";
  spec["imported"] = {{"format", "flashinfer-trace"},
                      {"definition", "definition.json"},
                      {"workloads", where.workloads.empty() ? "" : "workloads.jsonl"},
                      {"op_type", d.op_type}};
  if (where.workloads.empty()) spec["imported"].erase("workloads");
  ojson symbols = ojson::array(), scalars = ojson::object();
  for (auto& a : d.axes) {
    if (a.is_const)
      scalars[a.name] = {{"dtype", "i64"}, {"expr", std::to_string(a.value)}};
    else
      symbols.push_back(a.name);
  }
  scalar_inputs(d, wl, scalars, notes);
  for (auto& [k, v] : traits.extra_scalars) scalars[k] = v;
  spec["symbols"] = symbols;
  spec["scalars"] = scalars;
  std::vector<const TensorDef*> index_inputs;
  ojson tensors = tensors_of(d, rel, index_inputs, notes);
  spec["tensors"] = tensors;
  shapes(where, d, wl, rel, max_benchmark_shapes, index_inputs, spec, notes, traits);
  spec["flops"] = traits.flops;
  std::string bytes;
  for (auto* part : {&d.inputs, &d.outputs})
    for (auto& t : *part)
      if (t.shape)
        bytes += (bytes.empty() ? "" : " + ") + fmt::format("{}*{}", format_size(t.dtype), product(*t.shape));
  spec["bytes"] = traits.bytes.empty() ? bytes : traits.bytes;
  if (traits.flops == "0") notes.push_back("op_type '" + d.op_type + "': no FLOP formula known, so only bytes count");
  spec["reference"] = {{"python", "definition.json"}};
  spec["baseline"] = {{"python", where.baseline.empty() ? "definition.json" : "baseline.py"}};
  notes.push_back(where.baseline.empty()
                      ? "baseline: the definition's reference at its native precision, timed in the reference process"
                      : "baseline: baseline.py's run, timed in the reference process");
  spec["templates"] = traits.templates;
  notes.insert(notes.end(), traits.notes.begin(), traits.notes.end());
  res.spec = spec;
  return res;
}

ImportResult import_definition(const ImportOptions& o) {
  Located where = locate(o);
  std::string parse_note;
  Definition d = read_definition(where.definition, &parse_note);
  std::vector<Workload> wl;
  if (!where.workloads.empty()) wl = read_workloads(where.workloads, d);
  ImportResult res = build_target(where, d, wl, o.max_benchmark_shapes);
  res.notes.insert(res.notes.begin(), parse_note);
  if (!o.name.empty() && o.name != d.name && !fs::is_directory(o.path)) {
    res.name = o.name;
    res.spec["name"] = o.name;
  }
  res.dir = o.out / res.name;
  fs::create_directories(res.dir);
  fs::copy_file(where.definition, res.dir / "definition.json", fs::copy_options::overwrite_existing);
  if (!where.workloads.empty())
    fs::copy_file(where.workloads, res.dir / "workloads.jsonl", fs::copy_options::overwrite_existing);
  if (!where.baseline.empty())
    fs::copy_file(where.baseline, res.dir / "baseline.py", fs::copy_options::overwrite_existing);
  for (auto& [name, from] : template_sources(res.spec)) {
    std::string text;
    {
      std::ifstream in(from);
      if (!in) throw ImportError(from.string() + ": the project template cannot be read");
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::ofstream out(res.dir / name);
    out << fmt::format("// (copied by `tessera import` from targets/{}/{}: edit it there and import again)\n",
                       from.parent_path().filename().string(), from.filename().string())
        << text;
  }
  std::ofstream(res.dir / "spec.json") << res.spec.dump(2) << "\n";
  return res;
}

}  // namespace tessera::importer
