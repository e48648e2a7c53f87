// tests/gpu/import_test.cpp — an imported FlashInfer Trace definition judged on the GPU
// by its own `run` in float64 (the worker's Python reference process): the project's
// rows template passes and is timed against the definition's reference at native
// precision, and a kernel that leaves out the weight is caught as wrong_result.
// Needs a GPU and a python3 with PyTorch (the GPU machine has both); skips otherwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/gpu.h"
#include "tests/support/shell.h"

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::testing::shell;

namespace {

std::string binary() {
  const char* e = std::getenv("TESSERA_BIN");
  return e ? e : TESSERA_BINARY;
}

// Ignores the weight: rel_l2 about 0.3 against the reference (w is drawn in [0.5, 1.5]).
const char* kWrongKernel = R"(#include <cuda_bf16.h>
extern "C" __global__ void rms_no_weight(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                                         long long M, long long N, float eps) {
  __shared__ float part[256];
  long long row = blockIdx.x;
  float s = 0.f;
  for (long long j = threadIdx.x; j < N; j += 256) { float v = __bfloat162float(x[row * N + j]); s += v * v; }
  part[threadIdx.x] = s;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) { if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k]; __syncthreads(); }
  float inv = rsqrtf(part[0] / (float)N + eps);
  for (long long j = threadIdx.x; j < N; j += 256) y[row * N + j] = __float2bfloat16(__bfloat162float(x[row * N + j]) * inv);
}
)";

}  // namespace

TEST(ImportGpu, ImportedRmsnormIsJudgedByItsPythonReference) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  if (shell("python3 -c 'import torch; assert torch.cuda.is_available()'").code != 0)
    GTEST_SKIP() << "no python3 with CUDA PyTorch: the imported operator's reference cannot run here";
  const fs::path src = tessera::testing::source_dir();
  fs::path dir = fs::temp_directory_path() / ("tessera-gpu-import-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "targets");
  fs::create_directory_symlink(src / "targets/common", dir / "targets/common");
  std::string env = "TESSERA_TARGETS=" + (src / "targets").string() + " ";
  auto im = shell(env + binary() + " import " + (src / "tests/data/flashinfer-trace").string() +
                  " --name rmsnorm_h4096 --max-shapes 3 --out " + (dir / "targets").string());
  ASSERT_EQ(im.code, 0) << im.out;
  // a second template that leaves out the weight
  fs::path op = dir / "targets/rmsnorm_h4096";
  std::ofstream(op / "wrong.cu") << kWrongKernel;
  json spec = json::parse(std::ifstream(op / "spec.json"));
  spec["templates"].push_back(
      {{"name", "wrong"},
       {"source", "wrong.cu"},
       {"params", {{"ONE", {1}}}},
       {"launch",
        {{{"kernel", "rms_no_weight"},
          {"grid", {"batch_size"}},
          {"block", {"256"}},
          {"args", {"hidden_states", "weight", "output", "batch_size", "hidden_size", "eps"}}}}}});
  std::ofstream(op / "spec.json") << spec.dump(2);
  env = "TESSERA_TARGETS=" + (dir / "targets").string() + " ";
  const std::string db = (dir / "run.db").string();
  auto ok = shell(env + binary() + " optimize rmsnorm_h4096 --template rows --budget 2 -q --db " + db);
  ASSERT_EQ(ok.code, 0) << ok.out;
  auto bad = shell(env + binary() + " optimize rmsnorm_h4096 --template wrong --budget 1 -q --db " + db);
  EXPECT_EQ(bad.code, 0) << bad.out;
  auto board = json::parse(shell(env + binary() + " leaderboard rmsnorm_h4096 --json --db " + db).out);
  int passed = 0, wrong = 0;
  for (auto& r : board) {
    if (r["template"] == "rows" && r["status"] == "ok") {
      ++passed;
      EXPECT_GT(r["geomean_speedup"].get<double>(), 0) << r.dump();
    }
    if (r["template"] == "wrong") {
      EXPECT_EQ(r["status"], "wrong_result") << r.dump();
      ++wrong;
    }
  }
  EXPECT_GE(passed, 1) << board.dump(2);
  EXPECT_EQ(wrong, 1) << board.dump(2);
  // every timing says that its baseline was the definition's reference, timed elsewhere
  auto show = shell(env + binary() + " show " + std::to_string(board[0]["candidate"].get<long long>()) + " --db " + db);
  EXPECT_NE(show.out.find("timed in the reference process"), std::string::npos) << show.out;
  fs::remove_all(dir);
}
