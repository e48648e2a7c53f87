// export/export.cpp — `tessera export`: which candidates, their compiled code for each
// architecture, and the manifest, kernels and sources every format shares. The formats
// themselves are format_*.cpp.
#include "export/export.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>

#include "codegen/compiler.h"
#include "export/cpp_runtime.h"
#include "store/report_queries.h"
#include "store/store.h"

namespace tessera::exporter {

namespace fs = std::filesystem;
using nlohmann::json;

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

namespace {

// `git describe` of the tree this run reads its operators from (targets_dir()'s parent: the
// checkout in use, which on a GPU machine is a copy, not the tree the binary was built in).
std::string source_commit() {
  std::string cmd =
      fmt::format("git -C '{}' describe --always --dirty 2>/dev/null", spec::targets_dir().parent_path().string());
  std::array<char, 128> buf{};
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    while (fgets(buf.data(), buf.size(), f)) out += buf.data();
    pclose(f);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out.empty() ? "unknown" : out;
}

// The figures of the candidate's latest ok evaluation (on the GPU model `device` where it is
// not empty and the candidate was timed there: the one the champions were chosen on), as the
// manifest states them.
json figures(store::Store& db, long long id, const std::string& device, std::string* spec_hash) {
  auto evals = db.evaluations(id);
  for (auto it = evals.rbegin(); it != evals.rend(); ++it) {
    if (it->status != "ok" || (!device.empty() && it->device != device)) continue;
    json shapes = json::array();
    for (auto& s : it->shapes)
      shapes.push_back({{"shape", s.shape},
                        {"median_ms", s.cand_median_ms},
                        {"baseline_ms", s.base_median_ms},
                        {"speedup", s.speedup},
                        {"roofline_fraction", s.roofline_fraction},
                        {"rel_l2", s.rel_l2}});
    if (spec_hash && spec_hash->empty()) *spec_hash = it->spec_hash;
    json r = json::parse(it->report_json.empty() ? "{}" : it->report_json, nullptr, false);
    const auto judged = std::count_if(evals.begin(), evals.end(), [&](const store::EvaluationInfo& e) {
      return e.status == "ok" && e.device == it->device;
    });
    return {{"device", it->device},
            {"judged", judged},  // ok evaluations on this GPU model: 1, a search's one timing
            {"driver", it->driver},
            {"host", it->host},
            {"run", it->run_id},
            {"geomean_speedup", it->geomean_speedup},
            {"max_rel_l2", it->max_rel_l2},
            {"roofline_fraction", it->roofline_fraction},
            {"clock_mhz", {it->clock_before, it->clock_after}},
            {"shapes", shapes}};
  }
  return device.empty() ? json::object() : figures(db, id, "", spec_hash);  // (a --candidate timed elsewhere)
}

// The chosen candidates: the champion first, then each shape's champion not yet chosen.
// (on the GPU model `device`: timings compare only within one)
std::vector<long long> choose(store::Store& db, const ExportOptions& o, const std::string& device,
                              std::map<std::string, long long>* per_shape) {
  std::vector<long long> ids;
  auto rows = db.leaderboard(o.op, "ok", 1 << 30, device);
  if (o.candidate) {
    auto c = db.candidate(*o.candidate);
    if (!c || c->op != o.op)
      throw std::runtime_error(fmt::format("no candidate #{} of operator {} in {}", *o.candidate, o.op, o.db));
    ids.push_back(*o.candidate);
  } else {
    if (rows.empty())
      throw std::runtime_error(
          fmt::format("no candidate of {} is ok in {}: run `tessera optimize {}` first, or name "
                      "one with --candidate",
                      o.op, o.db, o.op));
    ids.push_back(rows[0].candidate_id);
  }
  if (!o.per_shape) return ids;
  for (const auto& c : store::per_shape_champions(rows)) {
    (*per_shape)[c.shape] = c.candidate_id;
    if (std::find(ids.begin(), ids.end(), c.candidate_id) == ids.end()) ids.push_back(c.candidate_id);
  }
  return ids;
}

// The candidate's launch plan: its template in the spec, or the plan stored with it.
spec::Program program_of(const spec::Operator& op, const store::CandidateInfo& c) {
  if (!c.plan_json.empty()) {
    json j = json::parse(c.plan_json);
    j["name"] = c.template_name;
    return spec::program_from_json(j, op.dir, false);
  }
  const spec::Program* t = op.find_template(c.template_name);
  if (!t)
    throw std::runtime_error(fmt::format("candidate #{}: template '{}' is not in {} any more", c.id, c.template_name,
                                         (op.dir / "spec.json").string()));
  return *t;
}

// Cubins for every requested architecture the template supports (a note for the
// others), and PTX for the lowest one's virtual architecture.
void compile_candidate(PackedCandidate& pc, const std::vector<std::string>& archs,
                       const std::vector<fs::path>& includes, json* unavailable) {
  codegen::Compiler compiler;
  for (auto& arch : archs) {
    auto& allowed = pc.program.arch;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), arch) == allowed.end()) {
      (*unavailable)[arch] = fmt::format("template '{}' supports {} only", pc.template_name, fmt::join(allowed, ", "));
      continue;
    }
    auto r = compiler.compile({pc.source, pc.name + ".cu", arch, includes, {}});
    if (!r.ok) {
      (*unavailable)[arch] = "NVRTC: " + r.log.substr(0, 400);
      continue;
    }
    pc.images.push_back({arch, r.cubin});
  }
  if (pc.images.empty())
    throw std::runtime_error(
        fmt::format("candidate {} compiles for none of {}: {}", pc.name, fmt::join(archs, ", "), unavailable->dump()));
  std::string lowest = pc.images.front().arch;  // (archs are sorted by number)
  std::string digits = lowest.substr(3);
  if (!digits.empty() && digits.back() == 'a') digits.pop_back();
  for (std::string v : {"compute_" + digits, "compute_" + lowest.substr(3)}) {
    auto r = codegen::compile_ptx({pc.source, pc.name + ".cu", v, includes, {}});
    if (r.ok) {
      pc.ptx = r.cubin, pc.ptx_arch = v;
      break;
    }
  }
}

}  // namespace

ExportPackage build_package(const ExportOptions& o, const spec::Operator& op) {
  store::Store db(o.db);
  ExportPackage p;
  p.op = &op;
  p.tessera_commit = source_commit();
  p.created = store::now_iso();
  std::map<std::string, long long> per_shape;
  std::string note;
  const std::string device = store::leaderboard_device(db, o.op, o.device, &note);
  if (!note.empty()) std::cerr << "export: timings on " << note << "\n";
  std::vector<long long> ids = choose(db, o, device, &per_shape);
  std::vector<fs::path> includes = {op.dir, spec::targets_dir() / "common"};
  for (long long id : ids) {
    auto c = db.candidate(id);
    PackedCandidate pc;
    pc.id = id;
    pc.name = fmt::format("c{}", id);
    pc.template_name = c->template_name;
    json params = json::parse(c->params_json.empty() ? "{}" : c->params_json);
    for (auto& [k, v] : params.items()) pc.params[k] = v.get<long long>();
    pc.program = program_of(op, *c);
    pc.params = spec::complete_params(pc.program, pc.params);  // (parameters the template gained since)
    pc.source = db.source(c->source_hash).value_or("");
    if (pc.source.empty()) throw std::runtime_error(fmt::format("candidate #{}: its source is not in {}", id, o.db));
    if (pc.program.launch.size() > static_cast<size_t>(kMaxKernelsPerCandidate))
      throw std::runtime_error(fmt::format("candidate #{}: more than {} launches", id, kMaxKernelsPerCandidate));
    std::vector<std::string> archs = o.archs.empty() ? std::vector<std::string>{c->arch} : o.archs;
    std::sort(archs.begin(), archs.end(), [](const std::string& a, const std::string& b) {
      return std::stoi(a.substr(3)) < std::stoi(b.substr(3));  // sm_90a before sm_103a
    });
    if (p.archs.empty()) p.archs = archs;
    json unavailable = json::object();
    compile_candidate(pc, archs, includes, &unavailable);
    pc.figures = figures(db, id, device, &p.spec_hash);
    if (!unavailable.empty()) pc.figures["unavailable"] = unavailable;
    p.candidates.push_back(std::move(pc));
  }
  for (auto& s : op.benchmark_shapes) {
    auto it = per_shape.find(s.label());
    if (it == per_shape.end()) continue;
    DispatchRule r;
    r.shape = s.label();
    spec::Bindings b = op.bindings(s);
    for (auto& sym : op.symbols) r.symbols[sym] = static_cast<long long>(b.at(sym));
    r.candidate = static_cast<size_t>(std::find(ids.begin(), ids.end(), it->second) - ids.begin());
    p.dispatch.push_back(r);
  }
  return p;
}

void write_manifest(const ExportPackage& p, const fs::path& out) {
  json cands = json::array();
  for (auto& c : p.candidates) {
    json images = json::array();
    for (auto& im : c.images) images.push_back(im.arch);
    cands.push_back({{"name", c.name},
                     {"id", c.id},
                     {"template", c.template_name},
                     {"params", c.params},
                     {"archs", images},
                     {"ptx", c.ptx_arch},
                     {"kernels", json::array()},
                     {"figures", c.figures}});
    for (auto& k : c.program.launch) cands.back()["kernels"].push_back(k.kernel);
  }
  json rules = json::array();
  for (auto& r : p.dispatch)
    rules.push_back({{"shape", r.shape}, {"symbols", r.symbols}, {"candidate", p.candidates[r.candidate].name}});
  json tensors = json::array();
  for (auto& t : p.op->tensors)
    tensors.push_back({{"name", t.name},
                       {"dtype", spec::dtype_name(t.dtype)},
                       {"shape", t.shape},
                       {"role", t.output ? "output" : "input"}});
  json scalars = json::array();
  for (auto& s : p.op->scalars)
    scalars.push_back({{"name", s.name}, {"dtype", spec::dtype_name(s.dtype)}, {"expr", s.expr}});
  json m = {{"format", "tessera-export/1"},
            {"operator", p.op->name},
            {"description", p.op->description},
            {"spec_hash", p.spec_hash},
            {"tessera_commit", p.tessera_commit},
            {"created", p.created},
            {"archs", p.archs},
            {"symbols", p.op->symbols},
            {"tensors", tensors},
            {"scalars", scalars},
            {"candidates", cands},
            {"dispatch",
             {{"rule",
               "a call whose symbols all equal a rule's serves that rule's candidate; every other call the "
               "fallback (docs/export.md)"},
              {"fallback", p.candidates.at(0).name},
              {"rules", rules}}}};
  write_text(out / "manifest.json", m.dump(2) + "\n");
}

void write_kernels_and_sources(const ExportPackage& p, const fs::path& out) {
  for (auto& c : p.candidates) {
    for (auto& im : c.images) write_text(out / "kernels" / fmt::format("{}.{}.cubin", c.name, im.arch), im.cubin);
    if (!c.ptx.empty()) write_text(out / "kernels" / (c.name + ".ptx"), c.ptx);
    write_text(out / "src" / (c.name + ".cu"), c.source);
  }
  // What the sources include: the operator's own headers (its folder's and its subfolders',
  // such as kda's ops/, at the same relative paths) and the tile library.
  std::error_code ec;
  for (auto& e : fs::recursive_directory_iterator(p.op->dir, ec)) {
    if (!e.is_regular_file() || (e.path().extension() != ".cuh" && e.path().extension() != ".h")) continue;
    const fs::path to = out / "src" / fs::relative(e.path(), p.op->dir);
    fs::create_directories(to.parent_path());
    fs::copy_file(e.path(), to, fs::copy_options::overwrite_existing);
  }
  fs::path tile = spec::targets_dir() / "common" / "tile";
  if (fs::is_directory(tile))
    fs::copy(tile, out / "src" / "tile", fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

int run_export(const ExportOptions& o) {
  static const std::set<std::string> known = {"cpp", "torch", "flashinfer"};
  for (auto& f : o.formats)
    if (!known.count(f)) {
      std::cerr << fmt::format("tessera export: unknown format '{}' (cpp, torch, flashinfer)\n", f);
      return 2;
    }
  for (auto& a : o.archs)
    if (!codegen::arch_supported(a)) {
      std::cerr << fmt::format("tessera export: --arch {}: not an architecture NVRTC targets\n", a);
      return 2;
    }
  try {
    spec::Operator op = spec::load_operator(spec::targets_dir() / o.op);
    ExportPackage p = build_package(o, op);
    fs::path out(o.out);
    write_manifest(p, out);
    write_kernels_and_sources(p, out);
    std::set<std::string> formats(o.formats.begin(), o.formats.end());
    if (formats.count("cpp") || formats.count("torch")) write_cpp(p, out);  // (torch builds the cpp library)
    if (formats.count("torch")) write_torch(p, out);
    if (formats.count("flashinfer")) write_flashinfer(p, out);
    std::cout << fmt::format(
        "exported {} ({} candidate{}: {}) for {} to {}\n", o.op, p.candidates.size(),
        p.candidates.size() == 1 ? "" : "s",
        [&] {
          std::string s;
          for (auto& c : p.candidates) s += (s.empty() ? "" : ", ") + c.name;
          return s;
        }(),
        fmt::join(p.archs, ", "), out.string());
    for (auto& c : p.candidates)
      if (c.figures.contains("unavailable"))
        for (auto& [arch, why] : c.figures["unavailable"].items())
          std::cout << fmt::format("  {} has no image for {}: {}\n", c.name, arch, why.get<std::string>());
    std::vector<std::string> once;  // a per-shape champion timed once may hold its shape by luck
    for (auto& c : p.candidates)
      if (c.figures.value("judged", 0) == 1) once.push_back(c.name);
    if (o.per_shape && !once.empty())
      std::cout << fmt::format("  judged once on {}: {} (`tessera recheck {} --per-shape` judges them again)\n",
                               p.candidates[0].figures.value("device", "its GPU"), fmt::join(once, ", "), o.op);
    return 0;
  } catch (std::exception& e) {
    std::cerr << "tessera export: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tessera::exporter
