// codegen/compiler.cpp — NVRTC calls, the cubin cache and the ptxas report parser.
#include "codegen/compiler.h"

#include <fmt/format.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "codegen/render.h"

namespace tessera::codegen {
namespace fs = std::filesystem;

bool CompileResult::spills() const {
  for (auto& [_, k] : kernels)
    if (k.spill_stores > 0 || k.spill_loads > 0) return true;
  return false;
}

int CompileResult::max_registers() const {
  int r = 0;
  for (auto& [_, k] : kernels) r = std::max(r, k.registers);
  return r;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

fs::path cuda_include_dir() {
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* e = std::getenv(var); e && fs::exists(fs::path(e) / "include" / "cuda_bf16.h"))
      return fs::path(e) / "include";
  if (fs::exists("/usr/local/cuda/include/cuda_bf16.h")) return "/usr/local/cuda/include";
  return TESSERA_CUDA_INCLUDE;
}

bool arch_supported(const std::string& arch) {
  static const std::vector<std::string> known = {"sm_80",  "sm_86",   "sm_89",  "sm_90",   "sm_90a",
                                                 "sm_100", "sm_100a", "sm_103", "sm_103a", "sm_120"};
  return std::find(known.begin(), known.end(), arch) != known.end();
}

std::map<std::string, KernelResources> parse_resource_report(const std::string& log) {
  std::map<std::string, KernelResources> out;
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex props(R"(Function properties for ([^\s]+))");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::istringstream in(log);
  std::string line, current;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      current = m[1];
      out[current];
    } else if (std::regex_search(line, m, props)) {
      current = m[1];
      out[current];
    } else if (!current.empty() && std::regex_search(line, m, frame)) {
      auto& k = out[current];
      k.stack_frame = std::stoi(m[1]);
      k.spill_stores = std::stoi(m[2]);
      k.spill_loads = std::stoi(m[3]);
    } else if (!current.empty() && std::regex_search(line, m, used)) {
      auto& k = out[current];
      k.registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) k.static_smem = std::stoi(m[1]);
    }
  }
  return out;
}

Compiler::Compiler(fs::path cache_dir) : cache_dir_(std::move(cache_dir)) {
  if (cache_dir_.empty()) {
    if (const char* e = std::getenv("TESSERA_CACHE"))
      cache_dir_ = e;
    else if (const char* x = std::getenv("XDG_CACHE_HOME"))
      cache_dir_ = fs::path(x) / "tessera";
    else if (const char* h = std::getenv("HOME"))
      cache_dir_ = fs::path(h) / ".cache" / "tessera";
    else
      cache_dir_ = fs::temp_directory_path() / "tessera-cache";
  }
  std::error_code ec;
  fs::create_directories(cache_dir_ / "cubin", ec);
}

fs::path Compiler::cubin_path(const std::string& key) const {
  return cache_dir_ / "cubin" / (key + ".cubin");
}

namespace {

void write_atomically(const fs::path& p, const std::string& bytes) {
  fs::path tmp = p;
  tmp += fmt::format(".tmp{}", std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return;
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
}

// NVRTC's options for req: the architecture, C++17 (with ptxas' resource report where asked),
// device code by default, the include folders, the CUDA headers, then the request's own.
std::vector<std::string> nvrtc_options(const CompileRequest& req, bool ptxas_report) {
  std::vector<std::string> opts = {"--gpu-architecture=" + req.arch, "-std=c++17"};
  if (ptxas_report) opts.push_back("--ptxas-options=-v");
  opts.push_back("-default-device");
  for (auto& d : req.include_dirs) opts.push_back("-I" + d.string());
  opts.push_back("-I" + cuda_include_dir().string());
  for (auto& o : req.extra_options) opts.push_back(o);
  return opts;
}

// req's source compiled by NVRTC with opts: the program (null where it could not be made;
// the caller destroys it), the result and the log, its trailing NULs removed.
struct Nvrtc {
  nvrtcProgram prog = nullptr;
  nvrtcResult rc = NVRTC_ERROR_INVALID_INPUT;
  std::string log;
};
Nvrtc run_nvrtc(const CompileRequest& req, const std::vector<std::string>& opts) {
  Nvrtc r;
  if (nvrtcCreateProgram(&r.prog, req.source.c_str(), req.name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    r.prog = nullptr;
    r.log = "nvrtcCreateProgram failed";
    return r;
  }
  std::vector<const char*> copts;
  for (auto& o : opts) copts.push_back(o.c_str());
  r.rc = nvrtcCompileProgram(r.prog, static_cast<int>(copts.size()), copts.data());
  size_t n = 0;
  nvrtcGetProgramLogSize(r.prog, &n);
  r.log.resize(n);
  if (n) nvrtcGetProgramLog(r.prog, r.log.data());
  while (!r.log.empty() && r.log.back() == '\0') r.log.pop_back();
  if (r.rc != NVRTC_SUCCESS && r.log.empty()) r.log = nvrtcGetErrorString(r.rc);
  return r;
}

}  // namespace

CompileResult Compiler::compile(const CompileRequest& req) const {
  CompileResult res;
  const std::vector<std::string> opts = nvrtc_options(req, true);

  std::string keytext = req.source + "\n--\n" + nvrtc_version();
  for (auto& o : opts) keytext += "\n" + o;
  // Included headers are part of the key: hash every file in the include folders we own.
  for (auto& d : req.include_dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    std::vector<fs::path> files;
    for (auto& e : fs::recursive_directory_iterator(d, ec))
      if (e.is_regular_file() && (e.path().extension() == ".cuh" || e.path().extension() == ".h"))
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (auto& f : files) keytext += "\n" + f.string() + ":" + content_hash(read_file(f.string()));
  }
  res.key = content_hash(keytext) + "-" + req.arch;
  fs::path cubin_file = cubin_path(res.key);
  fs::path log_path = cache_dir_ / "cubin" / (res.key + ".log");
  fs::path fail_path = cache_dir_ / "cubin" / (res.key + ".failed");
  if (fs::exists(cubin_file) && fs::exists(log_path)) {
    res.cubin = read_file(cubin_file.string());
    res.log = read_file(log_path.string());
    res.ok = !res.cubin.empty();
    res.cache_hit = true;
    res.kernels = parse_resource_report(res.log);
    return res;
  }
  if (fs::exists(fail_path)) {
    res.log = read_file(fail_path.string());
    res.cache_hit = true;
    return res;
  }

  auto t0 = std::chrono::steady_clock::now();
  Nvrtc run = run_nvrtc(req, opts);
  res.log = std::move(run.log);
  if (!run.prog) return res;
  if (run.rc == NVRTC_SUCCESS) {
    size_t n = 0;
    if (nvrtcGetCUBINSize(run.prog, &n) == NVRTC_SUCCESS && n > 0) {
      res.cubin.resize(n);
      nvrtcGetCUBIN(run.prog, res.cubin.data());
      res.ok = true;
    } else {
      res.log += "\n(no cubin produced: is the architecture a real one, e.g. sm_90a?)";
    }
  }
  nvrtcDestroyProgram(&run.prog);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.kernels = parse_resource_report(res.log);
  if (res.ok) {
    write_atomically(cubin_file, res.cubin);
    write_atomically(log_path, res.log);
  } else {
    write_atomically(fail_path, res.log);
  }
  return res;
}

std::vector<CompileResult> Compiler::compile_many(const std::vector<CompileRequest>& reqs, unsigned threads) const {
  std::vector<CompileResult> out(reqs.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(reqs.size()));
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < reqs.size();) out[i] = compile(reqs[i]);
    });
  for (auto& th : pool) th.join();
  return out;
}

// PTX for a virtual architecture (forward compatibility of exported packages): the
// options of Compiler::compile without ptxas, uncached (an export compiles each once).
CompileResult compile_ptx(const CompileRequest& req) {
  CompileResult res;
  Nvrtc run = run_nvrtc(req, nvrtc_options(req, false));
  res.log = std::move(run.log);
  if (!run.prog) return res;
  size_t n = 0;
  if (run.rc == NVRTC_SUCCESS && nvrtcGetPTXSize(run.prog, &n) == NVRTC_SUCCESS && n > 0) {
    res.cubin.resize(n);
    nvrtcGetPTX(run.prog, res.cubin.data());
    while (!res.cubin.empty() && res.cubin.back() == '\0') res.cubin.pop_back();
    res.ok = true;
  }
  nvrtcDestroyProgram(&run.prog);
  return res;
}

}  // namespace tessera::codegen
