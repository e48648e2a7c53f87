// cli/doctor.cpp — what tessera can see and do on this machine: NVRTC,
// the driver, the GPUs, and (with a GPU) their measured ceilings.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "agent/ceilings.h"
#include "cli/commands.h"
#include "codegen/compiler.h"
#include "evaluator/device.h"
#include "evaluator/driver.h"
#include "evaluator/worker_client.h"
#include "spec/spec.h"
#include "store/store.h"

namespace tessera::cli {

using nlohmann::json;

namespace {
// The visible GPUs, one object each; a failure to query them goes to *why.
json gpus_json(evaluator::Driver& drv, std::string* why) {
  json gpus = json::array();
  try {
    int n = evaluator::device_count(drv);
    for (int i = 0; i < n; ++i) {
      auto info = evaluator::query_device(drv, i);
      gpus.push_back({{"ordinal", i},
                      {"name", info.name},
                      {"arch", info.arch()},
                      {"sm_count", info.sm_count},
                      {"l2_bytes", info.l2_bytes},
                      {"memory_bytes", info.total_mem}});
    }
  } catch (std::exception& e) {
    *why = e.what();
  }
  return gpus;
}

// Each GPU's ceilings: the stored ones, or measured in a worker (always with `measure`).
json ceilings_json(const std::string& db, const json& gpus, const evaluator::Driver& drv, bool measure) {
  json ceil = json::array();
  store::Store st(db);
  for (auto& g : gpus) {
    std::string name = g["name"], driver = std::to_string(drv.version);
    auto c = st.ceilings(name, driver);
    if (!c || measure) {
      auto logdir = std::filesystem::path(db).parent_path() / "logs";
      std::filesystem::create_directories(logdir);
      evaluator::WorkerClient w(evaluator::self_exe(), g["ordinal"], (logdir / "doctor-worker.log").string());
      std::string error;
      c = agent::measure_ceilings(w, st, name, driver, &error);
      if (!c) {
        ceil.push_back({{"gpu", g["ordinal"]}, {"error", error}});
        continue;
      }
    }
    ceil.push_back({{"gpu", g["ordinal"]},
                    {"name", name},
                    {"copy_TBps", c->copy_bytes_per_s / 1e12},
                    {"bf16_TFLOPs", c->bf16_flops_per_s / 1e12},
                    {"measured", c->measured}});
  }
  return ceil;
}

// The doctor's findings in text: NVRTC, targets, driver, GPUs and their ceilings.
void print_doctor_text(const json& out, const codegen::CompileResult& probe, const evaluator::Driver* drv) {
  const json& gpus = out["gpus"];
  std::cout << fmt::format("NVRTC {} ({}; sm_90a probe compile {})\n", out["nvrtc"].get<std::string>(),
                           out["cuda_include"].get<std::string>(), probe.ok ? "ok" : "FAILED:\n" + probe.log);
  std::cout << "targets: " << out["targets"].get<std::string>() << "\n";
  if (drv) std::cout << fmt::format("CUDA driver {}.{}\n", drv->version / 1000, (drv->version % 1000) / 10);
  if (gpus.empty())
    std::cout << "GPUs: none — " << out["no_gpu_reason"].get<std::string>()
              << "\n  (tessera can still compile and check variants for any architecture here)\n";
  for (auto& g : gpus)
    std::cout << fmt::format("GPU {}: {} ({}, {} SMs, {:.0f} MB L2, {:.0f} GB)\n", g["ordinal"].get<int>(),
                             g["name"].get<std::string>(), g["arch"].get<std::string>(), g["sm_count"].get<int>(),
                             g["l2_bytes"].get<double>() / 1e6, g["memory_bytes"].get<double>() / 1e9);
  for (auto& c : out["ceilings"]) {
    if (c.contains("error"))
      std::cout << fmt::format("  ceilings of GPU {}: not measured: {}\n", c["gpu"].get<int>(),
                               c["error"].get<std::string>());
    else
      std::cout << fmt::format(
          "  ceilings of GPU {}: copy {:.2f} TB/s (read+write), bf16 tensor cores {:.0f} TFLOP/s (measured {})\n",
          c["gpu"].get<int>(), c["copy_TBps"].get<double>(), c["bf16_TFLOPs"].get<double>(),
          c["measured"].get<std::string>());
  }
}
}  // namespace

int cmd_doctor(const std::string& db, bool as_json, bool measure) {
  json out;
  out["nvrtc"] = codegen::nvrtc_version();
  out["cuda_include"] = codegen::cuda_include_dir().string();
  out["targets"] = spec::targets_dir().string();
  out["database"] = db;
  // NVRTC works without a GPU: prove it with the smallest compile.
  codegen::Compiler compiler;
  auto probe = compiler.compile({"extern \"C\" __global__ void tessera_probe(float* p) { p[threadIdx.x] = 1.0f; }",
                                 "probe.cu",
                                 "sm_90a",
                                 {},
                                 {}});
  out["nvrtc_compiles_sm_90a"] = probe.ok;
  std::string why;
  auto drv = evaluator::Driver::load(&why);
  json gpus = json::array();
  if (drv) {
    out["driver_version"] = drv->version;
    gpus = gpus_json(*drv, &why);
  }
  out["gpus"] = gpus;
  if (gpus.empty()) out["no_gpu_reason"] = why.empty() ? "no GPU visible" : why;
  // Ceilings: measured in a worker (kernels never run in this process), stored per device and driver.
  json ceil = json::array();
  if (!gpus.empty()) ceil = ceilings_json(db, gpus, *drv, measure);
  out["ceilings"] = ceil;
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  print_doctor_text(out, probe, drv.get());
  return 0;
}

}  // namespace tessera::cli
