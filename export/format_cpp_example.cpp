// export/format_cpp_example.cpp — DIR/cpp/example: a consumer of the cpp package, a
// program that runs the operator on tensors read from .npy files (tessera run's
// convention: bf16 as float32) and writes its outputs the same way. It links the
// package by add_subdirectory (or find_package with -DTESSERA_PACKAGE_FIND=ON) and the
// driver API, as a program of the user's would.
#include <fmt/format.h>

#include <fstream>
#include <stdexcept>
#include <string_view>

#include "export/package.h"

namespace tessera::exporter {

namespace fs = std::filesystem;

namespace {

// (shipped code, formatted by hand: clang-format would format the raw string as C++)
// clang-format off
const char* kNpy = R"CPP(
// ---- .npy files: little-endian f4, f8, i4, i8, C order --------------------------
struct Npy {
  std::string descr;
  std::vector<long long> shape;
  std::vector<unsigned char> data;
};

static Npy read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  char magic[8];
  in.read(magic, 8);
  if (std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error(path + ": not a .npy file");
  unsigned len = 0;
  unsigned char b[4] = {0, 0, 0, 0};
  in.read(reinterpret_cast<char*>(b), magic[6] == 1 ? 2 : 4);
  len = b[0] | b[1] << 8 | b[2] << 16 | static_cast<unsigned>(b[3]) << 24;
  std::string h(len, ' ');
  in.read(&h[0], len);
  Npy n;
  size_t d = h.find("'descr'");
  size_t q1 = h.find('\'', h.find(':', d) + 1), q2 = h.find('\'', q1 + 1);
  n.descr = h.substr(q1 + 1, q2 - q1 - 1);
  if (h.find("'fortran_order': True") != std::string::npos) throw std::runtime_error(path + ": Fortran order");
  size_t s = h.find('(', h.find("'shape'")), e = h.find(')', s);
  std::string dims = h.substr(s + 1, e - s - 1);
  for (size_t p = 0; p < dims.size();) {
    size_t c = dims.find(',', p);
    std::string t = dims.substr(p, c == std::string::npos ? std::string::npos : c - p);
    if (t.find_first_of("0123456789") != std::string::npos) n.shape.push_back(std::stoll(t));
    if (c == std::string::npos) break;
    p = c + 1;
  }
  n.data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return n;
}

static void write_npy(const std::string& path, const char* descr, const std::vector<long long>& shape,
                      const void* data, size_t bytes) {
  std::string dims;
  for (long long d : shape) dims += std::to_string(d) + ",";
  std::string h = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::ofstream out(path, std::ios::binary);
  unsigned short len = static_cast<unsigned short>(h.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << h;
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// A .npy's values in the tensor's dtype: "bf16" from float32 (round to nearest even,
// as tessera run reads them), "f32", "f64", "i32", "i64" from any of f4, f8, i4, i8.
static std::vector<unsigned char> convert(const Npy& n, const std::string& dtype, const std::string& path) {
  size_t count = n.data.size() / (n.descr == "<f8" || n.descr == "<i8" ? 8 : 4);
  auto value = [&](size_t i) -> double {
    const unsigned char* p = n.data.data();
    if (n.descr == "<f4") { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    if (n.descr == "<f8") { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    if (n.descr == "<i4") { int v; std::memcpy(&v, p + 4 * i, 4); return v; }
    if (n.descr == "<i8") { long long v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    throw std::runtime_error(path + ": dtype " + n.descr + " is not f4, f8, i4 or i8");
  };
  std::vector<unsigned char> out;
  auto push = [&](const void* v, size_t b) { out.insert(out.end(), (const unsigned char*)v, (const unsigned char*)v + b); };
  for (size_t i = 0; i < count; ++i) {
    double v = value(i);
    if (dtype == "bf16") {
      float f = static_cast<float>(v);
      unsigned u;
      std::memcpy(&u, &f, 4);
      unsigned short h = static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      push(&h, 2);
    } else if (dtype == "f32") { float f = static_cast<float>(v); push(&f, 4); }
    else if (dtype == "f64") push(&v, 8);
    else if (dtype == "i32") { int x = static_cast<int>(v); push(&x, 4); }
    else if (dtype == "i64") { long long x = static_cast<long long>(v); push(&x, 8); }
    else throw std::runtime_error("this example does not convert to " + dtype);
  }
  return out;
}

static void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* s = "?";
    cuGetErrorString(r, &s);
    throw std::runtime_error(std::string(what) + ": " + s);
  }
}
)CPP";
// clang-format on

size_t elem_bytes(spec::DType t) {
  return spec::dtype_size(t);
}

// The example program: {0} the operator's C name, {1} the symbols' usage, {2} the .npy
// helpers (kNpy), {3} the tensors' shapes, {4} the symbols' arguments, {5} the tensors'
// allocations and reads.
// clang-format off
constexpr std::string_view kMainProgram = R"GEN(// example/main.cpp — runs the exported {0} on .npy inputs (generated by tessera export).
//   {0}_example INPUTS_DIR OUTPUTS_DIR{1}
// Reads INPUTS_DIR/<input>.npy (bf16 tensors as float32), writes OUTPUTS_DIR/<output>.npy
// (bf16 widened to float32), and prints the candidate that served the call.
#include <cuda.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera_{0}.h"
{2}
{3}
struct Output {{
  std::string name, dtype;
  CUdeviceptr ptr;
  size_t count;
}};

int main(int argc, char** argv) try {{
  if (argc < 3) {{
    std::cerr << "usage: " << argv[0] << " INPUTS_DIR OUTPUTS_DIR{1}\n";
    return 2;
  }}
  std::string in = argv[1], outdir = argv[2];
  std::map<std::string, long long> given;
  for (int i = 3; i < argc; ++i) {{
    std::string a = argv[i];
    size_t eq = a.find('=');
    if (eq == std::string::npos) throw std::runtime_error("expected SYMBOL=VALUE, got " + a);
    given[a.substr(0, eq)] = std::stoll(a.substr(eq + 1));
  }}
  auto symbol = [&](const char* s) {{
    if (!given.count(s)) throw std::runtime_error(std::string("symbol ") + s + " not given");
    return given.at(s);
  }};
  // An output's element count: its shape's entries, each a symbol, a number or SYMBOL+N.
  auto elements = [&](const char* t) {{
    size_t n = 1;
    for (auto& d : kShapes.at(t)) {{
      size_t plus = d.find('+');
      std::string head = d.substr(0, plus);
      long long v = given.count(head) ? given.at(head) : std::stoll(head);
      if (plus != std::string::npos) v += std::stoll(d.substr(plus + 1));
      n *= static_cast<size_t>(v);
    }}
    return n;
  }};
  check(cuInit(0), "cuInit");
  CUdevice dev;
  CUcontext ctx;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  tessera_{0}_args args{{}};
{4}  std::vector<Output> outs;
{5}  size_t scratch = tessera_{0}_scratch_bytes(&args);
  if (scratch) check(cuMemAlloc(&args.scratch, scratch), "cuMemAlloc (scratch)");
  if (int e = tessera_{0}_launch(&args, stream)) {{
    std::cerr << "tessera_{0}_launch: error " << e << ": " << tessera_{0}_error() << "\n";
    return 1;
  }}
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  for (auto& o : outs) {{
    size_t eb = o.dtype == "bf16" || o.dtype == "f16" ? 2 : o.dtype == "f64" || o.dtype == "i64" ? 8 : 4;
    std::vector<unsigned char> host(o.count * eb);
    check(cuMemcpyDtoH(host.data(), o.ptr, host.size()), "cuMemcpyDtoH");
    std::vector<long long> shape = {{static_cast<long long>(o.count)}};
    std::string path = outdir + "/" + o.name + ".npy";
    if (o.dtype == "bf16") {{
      std::vector<float> f(o.count);
      for (size_t i = 0; i < o.count; ++i) {{
        unsigned u = static_cast<unsigned>(host[2 * i] | host[2 * i + 1] << 8) << 16;
        std::memcpy(&f[i], &u, 4);
      }}
      write_npy(path, "<f4", shape, f.data(), f.size() * 4);
    }} else {{
      write_npy(path, o.dtype == "f32" ? "<f4" : o.dtype == "f64" ? "<f8" : o.dtype == "i32" ? "<i4" : "<i8", shape,
                host.data(), host.size());
    }}
  }}
  std::cout << "{0}: served by " << tessera_{0}_candidate(&args) << "\n";
  return 0;
}} catch (std::exception& e) {{
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}}
)GEN";
// clang-format on

std::string main_source(const ExportPackage& p) {
  const std::string n = c_name(p.op->name);
  std::string syms, tensors, outputs, usage;
  for (auto& s : p.op->symbols) {
    usage += " " + s + "=N";
    syms += fmt::format("  args.{0} = symbol(\"{0}\");\n", s);
  }
  for (auto& t : p.op->tensors) {
    if (t.output) {
      tensors += fmt::format(
          "  {{ size_t n = elements(\"{0}\"); CUdeviceptr d; check(cuMemAlloc(&d, n * {1} + 1), \"cuMemAlloc\");\n"
          "    args.{0} = d; outs.push_back({{\"{0}\", \"{2}\", d, n}}); }}\n",
          t.name, elem_bytes(t.dtype), spec::dtype_name(t.dtype));
    } else {
      tensors += fmt::format(
          "  {{ Npy x = read_npy(in + \"/{0}.npy\"); auto bytes = convert(x, \"{1}\", in + \"/{0}.npy\");\n"
          "    CUdeviceptr d; check(cuMemAlloc(&d, bytes.size() + 1), \"cuMemAlloc\");\n"
          "    check(cuMemcpyHtoD(d, bytes.data(), bytes.size()), \"cuMemcpyHtoD\"); args.{0} = d; }}\n",
          t.name, spec::dtype_name(t.dtype));
    }
  }
  // Output element counts from the spec's shape expressions are not available here
  // without a parser; the example takes them as the product of the named symbols.
  std::string shapes = "static const std::map<std::string, std::vector<std::string>> kShapes = {\n";
  for (auto& t : p.op->tensors) {
    std::string dims;
    for (auto& d : t.shape) dims += "\"" + d + "\", ";
    shapes += fmt::format("  {{\"{}\", {{{}}}}},\n", t.name, dims);
  }
  shapes += "};\n";
  return fmt::format(kMainProgram, n, usage, kNpy, shapes, syms, tensors);
}

std::string example_cmake(const ExportPackage& p) {
  const std::string n = c_name(p.op->name);
  return fmt::format(R"GEN(# A program of the user's that runs the exported {0}: builds against the package by
# add_subdirectory (default) or, with -DTESSERA_PACKAGE_FIND=ON, an installed package
# found by find_package (CMAKE_PREFIX_PATH pointing at the install).
cmake_minimum_required(VERSION 3.18)
project({0}_example LANGUAGES CXX)
option(TESSERA_PACKAGE_FIND "use an installed tessera_{0} package" OFF)
if(TESSERA_PACKAGE_FIND)
  find_package(tessera_{0} REQUIRED)
else()
  add_subdirectory(${{CMAKE_CURRENT_SOURCE_DIR}}/.. tessera_{0})
endif()
find_package(CUDAToolkit REQUIRED)
add_executable({0}_example main.cpp)
set_target_properties({0}_example PROPERTIES CXX_STANDARD 17)
target_link_libraries({0}_example PRIVATE tessera::{0} CUDA::cuda_driver)
)GEN",
                     n);
}

}  // namespace

void write_cpp_example(const ExportPackage& p, const fs::path& dir) {
  write_text(dir / "main.cpp", main_source(p));
  write_text(dir / "CMakeLists.txt", example_cmake(p));
}

}  // namespace tessera::exporter
