// importer/op_types.cpp — known op_types (importer/op_types.h).
#include "importer/op_types.h"

#include <fmt/format.h>

#include <fstream>
#include <regex>

#include "spec/spec.h"

namespace tessera::importer {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// The project's templates the import reuses, by file.
const std::map<std::string, std::string>& project_files() {
  static const std::map<std::string, std::string> m = {
      {"rmsnorm_rows.cu", "rmsnorm"}, {"gemm_mma.cu", "gemm"}, {"gemm_wgmma.cu", "gemm"}, {"gemm_decode.cu", "gemm"}};
  return m;
}

// targets/<op> of the targets folder, else of the source tree tessera was built from.
fs::path project_dir(const std::string& op) {
  fs::path d = spec::targets_dir() / op;
  if (fs::exists(d / "spec.json")) return d;
  return fs::path(TESSERA_SOURCE_DIR) / "targets" / op;
}

std::string rename(const std::string& s, const std::map<std::string, std::string>& names) {
  static const std::regex word(R"([A-Za-z_][A-Za-z_0-9]*)");
  std::string out;
  auto it = std::sregex_iterator(s.begin(), s.end(), word);
  size_t at = 0;
  for (; it != std::sregex_iterator(); ++it) {
    out += s.substr(at, it->position() - at);
    auto f = names.find(it->str());
    out += f == names.end() ? it->str() : f->second;
    at = it->position() + it->length();
  }
  return out + s.substr(at);
}

// A template of targets/<op>/spec.json with its symbols and tensors renamed to the
// definition's and its kernels renamed by `kernel`.
ojson project_template(const std::string& op, const std::string& name, const std::map<std::string, std::string>& names,
                       const std::function<std::string(const std::string&)>& kernel) {
  fs::path file = project_dir(op) / "spec.json";
  std::ifstream in(file);
  if (!in) throw ImportError(file.string() + ": the project's " + op + " spec cannot be read");
  ojson s = ojson::parse(in);
  for (auto& t : s.at("templates")) {
    if (t.at("name") != name) continue;
    ojson out = t;
    for (auto& k : out.at("launch")) {
      k["kernel"] = kernel(k.at("kernel").get<std::string>());
      for (const char* f : {"grid", "block", "args"})
        if (k.contains(f))
          for (auto& e : k[f]) e = rename(e.get<std::string>(), names);
      if (k.contains("smem")) k["smem"] = rename(k["smem"].get<std::string>(), names);
      if (k.contains("when")) k["when"] = rename(k["when"].get<std::string>(), names);
    }
    if (out.contains("let"))
      for (auto& [_, e] : out["let"].items()) e = rename(e.get<std::string>(), names);
    if (out.contains("constraints"))
      for (auto& c : out["constraints"]) c = rename(c.get<std::string>(), names);
    if (out.contains("scratch"))
      for (auto& sc : out["scratch"]) sc["size"] = rename(sc["size"].get<std::string>(), names);
    return out;
  }
  throw ImportError(fmt::format("{}: no template '{}'", file.string(), name));
}

const TensorDef* only(const std::vector<TensorDef>& v, size_t i) {
  return i < v.size() ? &v[i] : nullptr;
}

bool shaped(const TensorDef* t, const std::vector<std::string>& dims, const std::string& dtype) {
  return t && t->shape && *t->shape == dims && t->dtype == dtype;
}

void rmsnorm(const Definition& d, OpTraits& tr) {
  tr.bandwidth_bound = true;
  const TensorDef* x = only(d.inputs, 0);
  if (!x || !x->shape || x->shape->size() != 2) return;
  const std::string B = (*x->shape)[0], H = (*x->shape)[1];
  const TensorDef* r = d.input("residual");
  const TensorDef* w = d.input("weight");
  bool fused = r != nullptr;
  tr.flops = fmt::format("{}*{}*{}", fused ? 5 : 4, B, H);
  std::smatch m;
  static const std::regex eps(R"((?:EPS|eps)\s*=\s*([0-9.]+(?:[eE][-+]?[0-9]+)?))");
  bool eps_found = std::regex_search(d.reference, m, eps);
  bool fits = x->dtype == "bfloat16" && shaped(w, {H}, "bfloat16") && d.outputs.size() == 1 &&
              shaped(&d.outputs[0], {B, H}, "bfloat16") && d.inputs.size() == (fused ? 3u : 2u) &&
              (!fused || shaped(r, {B, H}, "bfloat16")) && eps_found;
  if (!fits) {
    tr.notes.push_back(
        "rmsnorm: not the layout of tessera's rows template (bf16 [batch, hidden] rows, a bf16 weight, "
        "one bf16 output, an EPS constant in the reference): the LLM proposer alone searches it");
    return;
  }
  tr.extra_scalars["eps"] = {{"dtype", "f32"}, {"expr", m[1].str()}};
  std::map<std::string, std::string> names = {
      {"M", B}, {"N", H}, {"x", x->name}, {"w", w->name}, {"y", d.outputs[0].name}};
  ojson t = project_template("rmsnorm", "rows", names, [](const std::string& k) { return k; });
  if (fused) {
    auto& k = t["launch"][0];
    k["kernel"] = "rmsnorm_rows_residual";
    ojson args = k["args"];
    args.insert(args.begin() + 1, r->name);
    k["args"] = args;
    // (the residual kernel keeps the float sum of a row in shared memory: 4 bytes an element)
    k["smem"] = fmt::format("SMEM_ROW * ROWS * {} * 4", H);
    t["name"] = "rows_residual";
    t["params"]["RESIDUAL"] = {1};  // (rmsnorm_rows.cu builds the residual kernel)
  }
  t["source"] = "rmsnorm_rows.cu";
  tr.templates.push_back(t);
  tr.notes.push_back(fmt::format("rmsnorm: tuned with tessera's rows template{} (eps {} read from the reference)",
                                 fused ? " (its residual kernel)" : "", m[1].str()));
}

void gemm(const Definition& d, OpTraits& tr) {
  const TensorDef* a = only(d.inputs, 0);
  const TensorDef* b = only(d.inputs, 1);
  if (!a || !b || !a->shape || !b->shape || a->shape->size() != 2 || b->shape->size() != 2) return;
  const std::string M = (*a->shape)[0], K = (*a->shape)[1], N = (*b->shape)[0];
  tr.flops = fmt::format("2*{}*{}*{}", M, N, K);
  bool bt =
      d.reference.find(b->name + ".T") != std::string::npos || d.reference.find(b->name + ".t()") != std::string::npos;
  bool fits = d.inputs.size() == 2 && (a->dtype == "float16" || a->dtype == "bfloat16") &&
              shaped(b, {N, K}, a->dtype) && d.outputs.size() == 1 && shaped(&d.outputs[0], {M, N}, a->dtype) && bt;
  if (!fits) {
    tr.notes.push_back(
        "gemm: not C = A @ B.T with A [M, K], B [N, K] and C [M, N] of one 16-bit type: the LLM "
        "proposer alone searches it");
    return;
  }
  bool f16 = a->dtype == "float16";
  std::map<std::string, std::string> names = {{"M", M},       {"N", N},       {"K", K},
                                              {"a", a->name}, {"b", b->name}, {"c", d.outputs[0].name}};
  auto kernel = [f16](const std::string& k) { return f16 ? k + "_f16" : k; };
  const std::map<std::string, std::string> sources = {
      {"mma", "gemm_mma.cu"}, {"mma_splitk", "gemm_mma.cu"}, {"wgmma", "gemm_wgmma.cu"}, {"decode", "gemm_decode.cu"}};
  for (const char* name : {"mma", "mma_splitk", "wgmma", "decode"}) {
    ojson t = project_template("gemm", name, names, kernel);
    t["source"] = sources.at(name);
    if (f16) t["params"]["F16"] = {1};  // (every source builds the float16 kernels)
    tr.templates.push_back(t);
  }
  tr.notes.push_back(
      fmt::format("gemm: tuned with tessera's mma, mma_splitk, wgmma (sm_90a) and decode templates ({} kernels)",
                  f16 ? "float16" : "bfloat16"));
}

long long axis_value(const Definition& d, const std::map<std::string, long long>& axes, const std::string& a) {
  if (axes.count(a)) return axes.at(a);
  const Axis* x = d.axis(a);
  return x ? x->value : 0;
}

void gqa(const Definition& d, OpTraits& tr) {
  const TensorDef* q = d.input("q");
  if (!q || !q->shape || q->shape->size() < 3) return;
  const std::string H = (*q->shape)[q->shape->size() - 2], D = q->shape->back();
  if (d.op_type == "gqa_paged") {
    tr.bandwidth_bound = d.name.find("decode") != std::string::npos;
    const TensorDef* kc = d.input("k_cache");
    if (d.axis("num_kv_indices") && d.axis("page_size") && kc && kc->shape && kc->shape->size() == 4) {
      const std::string Hkv = (*kc->shape)[2];
      tr.flops = fmt::format("4*{}*{}*num_kv_indices*page_size", H, D);
      // q, o (bf16) and lse (f32) per query head; only the pages the indices name are read
      tr.bytes = fmt::format("{0}*{1}*{2}*4 + {0}*{1}*4 + 2*2*num_kv_indices*page_size*{3}*{2} + 4*num_kv_indices",
                             (*q->shape)[0], H, D, Hkv);
    }
    return;
  }
  const Definition* def = &d;
  tr.flops = fmt::format("4*{}*{}*total_q*total_kv/max(1, len_indptr-1)", H, D);  // (fallback: equal sequences)
  tr.flops_of_indices = [def, H, D](const std::map<std::string, long long>& axes,
                                    const std::map<std::string, std::vector<long long>>& fixed) {
    double pairs = 0;
    auto qi = fixed.find("qo_indptr"), ki = fixed.find("kv_indptr");
    if (qi == fixed.end() || ki == fixed.end()) return 0.0;
    bool causal = def->name.find("causal") != std::string::npos;
    for (size_t s = 0; s + 1 < qi->second.size() && s + 1 < ki->second.size(); ++s) {
      long long nq = qi->second[s + 1] - qi->second[s], nk = ki->second[s + 1] - ki->second[s];
      if (!causal) {
        pairs += static_cast<double>(nq) * static_cast<double>(nk);
        continue;
      }
      for (long long i = 0; i < nq; ++i) pairs += static_cast<double>(std::clamp(i + 1 + nk - nq, 0LL, nk));
    }
    return 4.0 * pairs * static_cast<double>(axis_value(*def, axes, H)) *
           static_cast<double>(axis_value(*def, axes, D));
  };
}

void gdn(const Definition& d, OpTraits& tr) {
  const TensorDef* v = d.input("v");
  const TensorDef* k = d.input("k");
  tr.bandwidth_bound = d.name.find("decode") != std::string::npos;
  if (!v || !k || !v->shape || !k->shape || v->shape->empty() || k->shape->empty()) return;
  // per token and value head: k.S, two rank-1 updates and q.S, each 2*K*V
  std::string s;
  for (auto& x : *v->shape) s += x + "*";
  tr.flops = "8*" + s + k->shape->back();
}

}  // namespace

OpTraits op_traits(const Definition& d) {
  OpTraits tr;
  if (d.op_type == "rmsnorm")
    rmsnorm(d, tr);
  else if (d.op_type == "gemm")
    gemm(d, tr);
  else if (d.op_type == "gqa_ragged" || d.op_type == "gqa_paged")
    gqa(d, tr);
  else if (d.op_type == "gdn")
    gdn(d, tr);
  if (tr.templates.empty())
    tr.notes.push_back(
        fmt::format("op_type '{}': no tessera template; `tessera optimize {} --proposer llm` (or "
                    "hybrid) searches it, shown the definition and its reference",
                    d.op_type, d.name));
  return tr;
}

std::vector<std::pair<std::string, fs::path>> template_sources(const ojson& spec) {
  std::vector<std::pair<std::string, fs::path>> out;
  for (auto& t : spec.at("templates")) {
    std::string src = t.value("source", "");
    auto it = project_files().find(src);
    if (it == project_files().end()) continue;
    bool dup = false;
    for (auto& [n, _] : out) dup |= n == src;
    if (!dup) out.push_back({src, project_dir(it->second) / src});
  }
  return out;
}

}  // namespace tessera::importer
