// codegen/compiler.h — NVRTC compilation to cubin, with an on-disk cache and
// the compiler's resource report.
//
// NVRTC needs no GPU: every variant can be compiled and checked for sm_90a,
// sm_100a or sm_103a on any machine. Results are cached by the hash of
// (source, options, NVRTC version) so a resumed run never recompiles.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace tessera::codegen {

struct KernelResources {
  int registers = 0;
  int spill_stores = 0;  // bytes
  int spill_loads = 0;   // bytes
  int stack_frame = 0;   // bytes
  int static_smem = 0;   // bytes
};

struct CompileResult {
  bool ok = false;
  std::string cubin;  // binary image, empty when !ok
  std::string log;    // compiler log (errors, ptxas report)
  std::map<std::string, KernelResources> kernels;
  double seconds = 0;  // 0 on a cache hit
  bool cache_hit = false;
  std::string key;  // cache key
  bool spills() const;
  int max_registers() const;
};

struct CompileRequest {
  std::string source;
  std::string name = "variant.cu";  // for messages
  std::string arch = "sm_90a";
  std::vector<std::filesystem::path> include_dirs;
  std::vector<std::string> extra_options;
};

class Compiler {
 public:
  // cache_dir empty: $TESSERA_CACHE, else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera.
  explicit Compiler(std::filesystem::path cache_dir = {});
  CompileResult compile(const CompileRequest& req) const;
  // Compiles all requests on `threads` threads (0: all cores); results in order.
  std::vector<CompileResult> compile_many(const std::vector<CompileRequest>& reqs, unsigned threads = 0) const;
  const std::filesystem::path& cache_dir() const { return cache_dir_; }
  // Where compile() keeps the cubin of a result with this cache key (CompileResult::key):
  // the file a worker loads.
  std::filesystem::path cubin_path(const std::string& key) const;

 private:
  std::filesystem::path cache_dir_;
};

// PTX text (in CompileResult::cubin) for a virtual architecture such as compute_90; not cached.
CompileResult compile_ptx(const CompileRequest& req);

std::string nvrtc_version();
// The CUDA toolkit's include folder (CUDA_HOME, CUDA_PATH, /usr/local/cuda, build-time path).
std::filesystem::path cuda_include_dir();
// Parses a ptxas -v report into per-kernel resources.
std::map<std::string, KernelResources> parse_resource_report(const std::string& log);
// Architectures NVRTC can target (e.g. sm_90a).
bool arch_supported(const std::string& arch);

}  // namespace tessera::codegen
