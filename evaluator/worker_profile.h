// evaluator/worker_profile.h — the worker's "profile" request: one program's launch
// plan on one shape, run under a profiler or sanitizer that started this worker
// (`tessera profile`, agent/profile.h). What it runs is what the judge runs (the same
// plan runner, the same inputs as the judge's benchmark shapes: drawn on the device from
// the benchmark seed), and nothing else: no validation, no timing loop, no L2 flush, no
// float64 reference, no baseline. One warm-up run, then `runs` runs between
// cuProfilerStart and cuProfilerStop, so that `ncu --profile-from-start off` sees only
// those. The worker's request loop (worker.cpp) dispatches here.
//
//   {"type":"profile", "operator_dir", "shape": NAME,
//    "candidate": {"cubin", "template", "params", "program"?}, "runs": N, "seed"?}
//   -> {"ok": true, "shape", "runs", "kernels": [launched kernel names], "outside": [buffers
//       written outside their bounds]}
#pragma once

#include <nlohmann/json.hpp>

#include "evaluator/device.h"

namespace tessera::evaluator {

nlohmann::json handle_profile(Device& dev, const nlohmann::json& req);

}  // namespace tessera::evaluator
