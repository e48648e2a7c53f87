// evaluator/worker.h — the `tessera worker` process: one per GPU.
//
// It reads one JSON request per line on fd 3 and answers on fd 4, the private
// channel of evaluator/channel.h (stdout and stderr carry only what kernels and
// the CUDA stack print). Kernels run only here, so a kernel that faults or hangs
// takes down this process and never the agent. Every request carries an "id"; an
// evaluation announces its steps with their time limits before the reply. Requests:
//   {"type":"hello"}                          -> device description
//   {"type":"ceilings"}                       -> measured copy / tensor-core rates
//   {"type":"evaluate", "operator_dir", "reference_cubin", "baseline_cubin",
//    "candidate": {"cubin", "template", "params"}, "settings": {...}}
//                                             -> {"report": EvalReport}
//   {"type":"run", "operator_dir", "reference_cubin", "baseline_cubin",
//    "candidate": {"role": candidate|reference|baseline, "cubin", "template", "params"},
//    "symbols", "seqlens", "inputs": {name: file.npy}, "outputs_dir", "repeat"}
//                                             -> {"outputs": [...], "median_ms", ...}
//   {"type":"profile", "operator_dir", "shape", "candidate": {...}, "runs"}
//                                             -> {"kernels": [...], ...} (worker_profile.h)
// After a fault that poisons the context, the worker answers and exits (code 3).
#pragma once

#include <nlohmann/json.hpp>

#include "evaluator/judge.h"

namespace tessera::evaluator {

int worker_main(int gpu);

nlohmann::json settings_json(const JudgeSettings& s);
JudgeSettings settings_from_json(const nlohmann::json& j);

}  // namespace tessera::evaluator
