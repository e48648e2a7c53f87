// export/format_cpp.cpp — format cpp: DIR/cpp, a C ABI library over the CUDA driver
// API with the launch plans of the packed candidates turned into code (docs/export.md).
//
// The generated source holds, in this order: the driver's entry points (dlopen'ed at
// the first call), the per-context state (modules, functions, side stream), the kernel
// images as byte arrays, one launch function per candidate (its plan: grid, block,
// shared memory and scratch from the call's symbols, the arguments packed as the judge
// packs them, side launches forked and joined by events), the dispatch rule, and the
// four functions of the header. The pieces that do not depend on the package are
// fixed text (export/cpp_runtime.inc); this file writes the rest.
#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "export/cpp_runtime.h"
#include "export/expr_to_c.h"
#include "export/package.h"

namespace tessera::exporter {

namespace fs = std::filesystem;

void write_cpp_example(const ExportPackage& p, const fs::path& dir);  // format_cpp_example.cpp

namespace {

bool is_identifier(const std::string& s) {
  static const std::set<std::string> reserved = {"int",    "long",   "double",  "float", "char",     "void",   "const",
                                                 "struct", "return", "if",      "else",  "for",      "while",  "do",
                                                 "switch", "case",   "default", "break", "continue", "scratch"};
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return !reserved.count(s);
}

const char* tmap_type(spec::DType t) {
  switch (t) {
    case spec::DType::bf16:
      return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
    case spec::DType::f16:
      return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
    case spec::DType::f32:
      return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
    case spec::DType::f64:
      return "CU_TENSOR_MAP_DATA_TYPE_FLOAT64";
    case spec::DType::i32:
      return "CU_TENSOR_MAP_DATA_TYPE_INT32";
    case spec::DType::i64:
      return "CU_TENSOR_MAP_DATA_TYPE_INT64";
  }
  return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
}

std::string header(const ExportPackage& p) {
  const std::string n = c_name(p.op->name);
  std::string fields;
  for (auto& t : p.op->tensors)
    fields += fmt::format("  CUdeviceptr {}; /* {} {} [{}] */\n", t.name, t.output ? "output" : "input",
                          spec::dtype_name(t.dtype), fmt::join(t.shape, ", "));
  for (auto& s : p.op->symbols) fields += fmt::format("  long long {};\n", s);
  std::string guard = "TESSERA_" + n + "_H";
  for (auto& c : guard) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return fmt::format(R"GEN(/* tessera_{0}.h — {1}
 * Exported by tessera (commit {2}, {3}); the candidates and their figures are in
 * ../manifest.json, the C ABI in tessera's docs/export.md.
 * Tensors are contiguous device buffers in the dtypes and shapes given beside each. */
#ifndef {4}
#define {4}

#include <stddef.h>
#include <cuda.h>

#ifdef __cplusplus
extern "C" {{
#endif

typedef struct tessera_{0}_args {{
{5}  CUdeviceptr scratch; /* tessera_{0}_scratch_bytes(args) bytes (0 when that is 0) */
}} tessera_{0}_args;

enum {{ TESSERA_{6}_OK = 0, TESSERA_{6}_NO_GPU = 1, TESSERA_{6}_BAD_ARGUMENT = 2,
       TESSERA_{6}_CUDA_ERROR = 3, TESSERA_{6}_NO_IMAGE = 4 }};

/* Device memory the call needs beside its tensors. */
size_t tessera_{0}_scratch_bytes(const tessera_{0}_args* args);
/* Enqueues the operator on `stream` in the calling thread's current CUDA context.
   Returns 0, or an error code with tessera_{0}_error() (thread-local) saying why. */
int tessera_{0}_launch(const tessera_{0}_args* args, CUstream stream);
const char* tessera_{0}_error(void);
/* The candidate that serves a call with these symbols ("c42", as in the manifest). */
const char* tessera_{0}_candidate(const tessera_{0}_args* args);

#ifdef __cplusplus
}}
#endif
#endif
)GEN",
                     n, p.op->description, p.tessera_commit, p.created, guard, fields, [&] {
                       std::string u = n;
                       for (auto& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
                       return u;
                     }());
}

std::string bytes_array(const std::string& name, const std::string& data) {
  std::string out = fmt::format("static const unsigned char {}[{}] = {{", name, data.size() + 1);
  for (size_t i = 0; i < data.size(); ++i) {
    if (i % 24 == 0) out += "\n ";
    out += fmt::format(" {},", static_cast<unsigned>(static_cast<unsigned char>(data[i])));
  }
  return out + " 0};\n";  // (a trailing NUL: PTX is loaded as a string)
}

// The symbols, scalars and SMS of a call as doubles (v_<name>), for the expressions.
std::string bind_values(const ExportPackage& p) {
  std::string out;
  for (auto& s : p.op->symbols)
    out += fmt::format("  const double v_{0} = static_cast<double>(a->{0});\n  (void)v_{0};\n", s);
  out += "  const double v_SMS = static_cast<double>(cx.sms);\n  (void)v_SMS;\n";
  auto name = [&](const std::string& id) -> std::string {
    for (auto& s : p.op->symbols)
      if (s == id) return "v_" + id;
    for (auto& sc : p.op->scalars)
      if (sc.name == id) return "v_" + id;
    if (id == spec::kSmCountSymbol) return "v_SMS";
    throw std::runtime_error("spec expression names '" + id + "', which is no symbol or scalar");
  };
  for (auto& sc : p.op->scalars)
    out += fmt::format("  const double v_{} = {};\n  (void)v_{};\n", sc.name, expr_to_c(sc.expr, name), sc.name);
  return out;
}

struct Names {
  const ExportPackage& p;
  const PackedCandidate& c;
  std::string operator()(const std::string& id) const {
    if (auto it = c.params.find(id); it != c.params.end()) return fmt::format("{}.0", it->second);
    for (auto& s : p.op->symbols)
      if (s == id) return "v_" + id;
    for (auto& sc : p.op->scalars)
      if (sc.name == id) return "v_" + id;
    if (id == spec::kSmCountSymbol) return "v_SMS";
    throw std::runtime_error(
        fmt::format("candidate {}: expression names '{}', which is no symbol, scalar or parameter", c.name, id));
  }
};

// Offsets of the scratch buffers in the one scratch allocation (256-byte aligned).
std::string scratch_layout(const ExportPackage& p, const PackedCandidate& c) {
  Names names{p, c};
  std::string out = "  size_t off = 0;\n";
  for (auto& s : c.program.scratch)
    out += fmt::format(
        "  long long n_{0} = 0;\n  if (!tessera_count({1}, &n_{0})) return tessera_fail(2, \"scratch '{0}': size is "
        "not a "
        "count\");\n  const size_t at_{0} = off;\n  off = (off + static_cast<size_t>(n_{0}) * {2} + 255) / 256 * 256;\n"
        "  (void)at_{0};\n",
        s.name, expr_to_c(s.size, names), spec::dtype_size(s.dtype));
  return out;
}

// One launch argument packed into slot i of the argument storage.
std::string pack_argument(const ExportPackage& p, const PackedCandidate& c, const std::string& arg, size_t i,
                          const std::string& kernel) {
  Names names{p, c};
  if (auto tm = spec::parse_tensor_map_arg(arg)) {
    const spec::Tensor* t = p.op->tensor(tm->tensor);
    if (!t || t->shape.size() != tm->box.size())
      throw std::runtime_error(
          fmt::format("candidate {}: {}: tensor map over '{}' of the wrong rank", c.name, kernel, tm->tensor));
    std::string dims, box;
    for (size_t d = 0; d < t->shape.size(); ++d) {
      dims += fmt::format("{}, ", expr_to_c(t->shape[t->shape.size() - 1 - d], names));
      box += fmt::format("{}u, ", tm->box[d]);
    }
    return fmt::format(
        "    {{ const double dims[] = {{{0}}}; const unsigned box[] = {{{1}}};\n"
        "      if (int e = tessera_encode_tmap(cx, reinterpret_cast<CUtensorMap*>(slot[{2}].bytes), {3}, {4}, {5}, "
        "dims, box, "
        "{6}, a->{7})) return e; }}\n",
        dims, box, i, tmap_type(t->dtype), spec::dtype_size(t->dtype), t->shape.size(), tm->swizzle, tm->tensor);
  }
  if (p.op->tensor(arg)) return fmt::format("    tessera_put(slot[{}], a->{});\n", i, arg);
  for (auto& s : c.program.scratch)
    if (s.name == arg)
      return fmt::format("    tessera_put(slot[{}], static_cast<CUdeviceptr>(a->scratch + at_{}));\n", i, arg);
  if (auto it = c.params.find(arg); it != c.params.end())
    return fmt::format("    tessera_put(slot[{}], static_cast<long long>({}));\n", i, it->second);
  for (auto& sc : p.op->scalars)
    if (sc.name == arg) {
      if (sc.dtype == spec::DType::f32)
        return fmt::format("    tessera_put(slot[{}], static_cast<float>(v_{}));\n", i, arg);
      if (sc.dtype == spec::DType::f64)
        return fmt::format("    tessera_put(slot[{}], static_cast<double>(v_{}));\n", i, arg);
      return fmt::format("    tessera_put(slot[{}], static_cast<long long>(std::llround(v_{})));\n", i, arg);
    }
  for (auto& s : p.op->symbols)
    if (s == arg) return fmt::format("    tessera_put(slot[{}], static_cast<long long>(a->{}));\n", i, arg);
  if (arg == spec::kSmCountSymbol)
    return fmt::format("    tessera_put(slot[{}], static_cast<long long>(cx.sms));\n", i);
  throw std::runtime_error(fmt::format("candidate {}: kernel '{}': argument '{}' has no value", c.name, kernel, arg));
}

// The candidate's plan: every step's grid, block and shared memory first (and the
// kernels' shared-memory limits raised), then the launches, as the judge runs them.
std::string launch_function(const ExportPackage& p, const PackedCandidate& c, size_t index) {
  Names names{p, c};
  std::string out =
      fmt::format("static int tessera_launch_{}(const tessera_{}_args* a, CUstream stream, TesseraContext& cx) {{\n",
                  c.name, c_name(p.op->name));
  out += bind_values(p) + scratch_layout(p, c);
  out += "  if (off > 0 && !a->scratch) return tessera_fail(2, \"this call needs %zu bytes of scratch\", off);\n";
  out += fmt::format(
      "  TesseraModule* m = nullptr;\n  if (int e = tessera_module(cx, tessera_candidates[{0}], {0}, &m)) return e;\n",
      index);
  bool side = false;
  for (auto& k : c.program.launch) side = side || k.stream == "side";
  if (side) out += "  std::lock_guard<std::mutex> side_lock(cx.side_mu);\n";
  const auto& L = c.program.launch;
  out += fmt::format("  TesseraStep steps[{}];\n", std::max<size_t>(1, L.size()));
  for (size_t li = 0; li < L.size(); ++li) {
    auto& k = L[li];
    out += fmt::format("  {{ // {}\n", k.kernel);
    if (k.when != "1")  // (a step left out at this shape keeps its empty grid: not live)
      out += fmt::format("    if ({})\n", expr_to_c(k.when, names));
    out += "    {\n";
    for (int d = 0; d < 3; ++d)
      out += fmt::format(
          "    if (!tessera_count({}, &steps[{}].grid[{}]) || !tessera_count({}, &steps[{}].block[{}]))\n"
          "      return tessera_fail(2, \"kernel {}: grid or block is not a count at this shape\");\n",
          expr_to_c(k.grid[d], names), li, d, expr_to_c(k.block[d], names), li, d, k.kernel);
    out += fmt::format(
        "    if (!tessera_count({}, &steps[{}].smem)) return tessera_fail(2, \"kernel {}: shared memory is "
        "not a count\");\n    steps[{}].f = m->functions[{}];\n    }}\n  }}\n",
        expr_to_c(k.smem, names), li, k.kernel, li, li);
  }
  out += fmt::format("  if (int e = tessera_raise_smem(cx, steps, {})) return e;\n", L.size());
  out += "  bool forked = false;\n  (void)forked;\n";
  for (size_t li = 0; li < L.size(); ++li) {
    auto& k = L[li];
    out += fmt::format("  if (steps[{}].live()) {{\n    TesseraSlot slot[{}];\n    void* params[{}];\n", li,
                       std::max<size_t>(1, k.args.size()), std::max<size_t>(1, k.args.size()));
    for (size_t i = 0; i < k.args.size(); ++i) out += pack_argument(p, c, k.args[i], i, k.kernel);
    out += fmt::format("    for (int i = 0; i < {}; ++i) params[i] = slot[i].bytes;\n", k.args.size());
    if (k.stream == "side")
      out += fmt::format(
          "    if (!forked) {{\n      if (int e = tessera_fork(cx, stream)) return e;\n      forked = true;\n    }}\n"
          "    if (int e = tessera_run(steps[{}], cx.side, params)) return e;\n  }}\n",
          li);
    else
      out += fmt::format("    if (int e = tessera_run(steps[{}], stream, params{})) return e;\n  }}\n", li,
                         k.pdl ? ", true" : "");
  }
  out += "  if (forked) return tessera_join(cx, stream);\n  return 0;\n}\n\n";
  out += fmt::format("static size_t tessera_scratch_{}(const tessera_{}_args* a, TesseraContext& cx) {{\n", c.name,
                     c_name(p.op->name));
  std::string layout = scratch_layout(p, c);
  // (the layout's failure returns an int error: here an impossible size means 0)
  size_t pos;
  while ((pos = layout.find("return tessera_fail(2, ")) != std::string::npos) {
    size_t end = layout.find(");", pos);
    layout.replace(pos, end + 2 - pos, "return 0;");
  }
  out += bind_values(p) + layout + "  return off;\n}\n\n";
  return out;
}

std::string dispatch_function(const ExportPackage& p) {
  std::string out = fmt::format("static size_t tessera_select(const tessera_{}_args* a) {{\n", c_name(p.op->name));
  for (auto& r : p.dispatch) {
    std::string cond;
    for (auto& [sym, v] : r.symbols) cond += fmt::format("{}a->{} == {}LL", cond.empty() ? "" : " && ", sym, v);
    out += fmt::format("  if ({}) return {};  // {}\n", cond.empty() ? "false" : cond, r.candidate, r.shape);
  }
  return out + "  (void)a;\n  return 0;  // the overall champion\n}\n\n";
}

std::string source(const ExportPackage& p) {
  const std::string n = c_name(p.op->name);
  std::string out =
      fmt::format("// tessera_{}.cpp — generated by tessera export (commit {}, {}): operator {}, candidates", n,
                  p.tessera_commit, p.created, p.op->name);
  for (auto& c : p.candidates) out += " " + c.name;
  out += ".\n// Do not edit: export again. The fixed part is tessera's export/cpp_runtime.inc.\n";
  out += fmt::format("#include \"tessera_{}.h\"\n", n);
  out += cpp_runtime_source();
  out += expr_helpers_source();
  out += "\n// ---- kernel images -------------------------------------------------------\n";
  for (auto& c : p.candidates) {
    for (auto& im : c.images) out += bytes_array(fmt::format("tessera_image_{}_{}", c.name, im.arch), im.cubin);
    if (!c.ptx.empty()) out += bytes_array(fmt::format("tessera_ptx_{}", c.name), c.ptx);
  }
  out += "\nstatic const TesseraCandidate tessera_candidates[] = {\n";
  for (auto& c : p.candidates) {
    std::string images, kernels;
    for (auto& im : c.images)
      images += fmt::format("{{\"{}\", tessera_image_{}_{}, sizeof tessera_image_{}_{} - 1}}, ", im.arch, c.name,
                            im.arch, c.name, im.arch);
    for (auto& k : c.program.launch) kernels += fmt::format("\"{}\", ", k.kernel);
    out += fmt::format("  {{\"{}\", {{{}}}, {}, {}, \"{}\", {}, {{{}}}}},\n", c.name, images, c.images.size(),
                       c.ptx.empty() ? std::string("nullptr") : "tessera_ptx_" + c.name, c.ptx_arch,
                       c.program.launch.size(), kernels);
  }
  out += "};\n\n";
  for (size_t i = 0; i < p.candidates.size(); ++i) out += launch_function(p, p.candidates[i], i);
  out += dispatch_function(p);
  std::string launch_cases, scratch_cases;
  for (size_t i = 0; i < p.candidates.size(); ++i) {
    launch_cases += fmt::format("    case {}: return tessera_launch_{}(a, stream, *cx);\n", i, p.candidates[i].name);
    scratch_cases += fmt::format("    case {}: return tessera_scratch_{}(a, *cx);\n", i, p.candidates[i].name);
  }
  std::string null_checks;
  for (auto& t : p.op->tensors)
    null_checks += fmt::format("  if (!a->{0}) return tessera_fail(2, \"tensor '{0}' is a null pointer\");\n", t.name);
  out += fmt::format(R"GEN(extern "C" size_t tessera_{0}_scratch_bytes(const tessera_{0}_args* a) {{
  TesseraContext* cx = nullptr;
  if (!a || tessera_context(&cx)) return 0;
  switch (tessera_select(a)) {{
{1}  }}
  return 0;
}}

extern "C" int tessera_{0}_launch(const tessera_{0}_args* a, CUstream stream) {{
  if (!a) return tessera_fail(2, "args is a null pointer");
{3}  TesseraContext* cx = nullptr;
  if (int e = tessera_context(&cx)) return e;
  switch (tessera_select(a)) {{
{2}  }}
  return tessera_fail(2, "no candidate");
}}

extern "C" const char* tessera_{0}_error(void) {{ return tessera_error_text().c_str(); }}

extern "C" const char* tessera_{0}_candidate(const tessera_{0}_args* a) {{
  return a ? tessera_candidates[tessera_select(a)].name : "";
}}
)GEN",
                     n, scratch_cases, launch_cases, null_checks);
  return out;
}

std::string cmake(const ExportPackage& p) {
  const std::string n = c_name(p.op->name);
  return fmt::format(R"GEN(# The exported {0} kernels as a CMake package: add_subdirectory(this folder) or
# install it and find_package(tessera_{0}); either way link tessera::{0}.
# Only the CUDA toolkit's headers are needed: the driver is loaded at run time.
cmake_minimum_required(VERSION 3.18)
project(tessera_{0} LANGUAGES CXX VERSION 1.0.0)
find_package(CUDAToolkit REQUIRED)
find_package(Threads REQUIRED)
add_library(tessera_{0} src/tessera_{0}.cpp)
add_library(tessera::{0} ALIAS tessera_{0})
set_target_properties(tessera_{0} PROPERTIES EXPORT_NAME {0} POSITION_INDEPENDENT_CODE ON CXX_STANDARD 17)
target_include_directories(tessera_{0} PUBLIC $<BUILD_INTERFACE:${{CMAKE_CURRENT_SOURCE_DIR}}/include>
                                              $<INSTALL_INTERFACE:include>)
target_link_libraries(tessera_{0} PUBLIC CUDA::toolkit PRIVATE ${{CMAKE_DL_LIBS}} Threads::Threads)

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS tessera_{0} EXPORT tessera_{0}Targets)
install(FILES include/tessera_{0}.h DESTINATION ${{CMAKE_INSTALL_INCLUDEDIR}})
install(EXPORT tessera_{0}Targets NAMESPACE tessera:: DESTINATION ${{CMAKE_INSTALL_LIBDIR}}/cmake/tessera_{0})
file(WRITE ${{CMAKE_CURRENT_BINARY_DIR}}/tessera_{0}Config.cmake
     "include(CMakeFindDependencyMacro)\nfind_dependency(CUDAToolkit)\nfind_dependency(Threads)\n"
     "include(\${{CMAKE_CURRENT_LIST_DIR}}/tessera_{0}Targets.cmake)\n")
write_basic_package_version_file(${{CMAKE_CURRENT_BINARY_DIR}}/tessera_{0}ConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${{CMAKE_CURRENT_BINARY_DIR}}/tessera_{0}Config.cmake ${{CMAKE_CURRENT_BINARY_DIR}}/tessera_{0}ConfigVersion.cmake
        DESTINATION ${{CMAKE_INSTALL_LIBDIR}}/cmake/tessera_{0})
)GEN",
                     n);
}

}  // namespace

std::string c_name(const std::string& op_name) {
  std::string out;
  for (char ch : op_name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "op_" + out;
  return out;
}

void write_cpp(const ExportPackage& p, const fs::path& out) {
  for (auto& t : p.op->tensors)
    if (!is_identifier(t.name)) throw std::runtime_error("tensor name '" + t.name + "' is not a C identifier");
  for (auto& s : p.op->symbols)
    if (!is_identifier(s)) throw std::runtime_error("symbol '" + s + "' is not a C identifier");
  for (auto& c : p.candidates)
    if (!c.program.builtin.empty())
      throw std::runtime_error("candidate " + c.name + " is a library call, not a kernel");
  const std::string n = c_name(p.op->name);
  fs::path dir = out / "cpp";
  write_text(dir / "include" / ("tessera_" + n + ".h"), header(p));
  write_text(dir / "src" / ("tessera_" + n + ".cpp"), source(p));
  write_text(dir / "CMakeLists.txt", cmake(p));
  write_cpp_example(p, dir / "example");
}

}  // namespace tessera::exporter
