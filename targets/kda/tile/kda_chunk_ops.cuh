// targets/kda/tile/kda_chunk_ops.cuh — forwards to ops/kda_chunk_ops.cuh. kda's helpers lived in the generic
// tile library (targets/common/tile) until 2026-12-03; candidates stored before then include
// them as "tile/kda_chunk_ops.cuh", which the operator's folder (first on the include path) resolves
// here, so that their recorded sources still compile (recheck, export, resume).
#pragma once
#include "../ops/kda_chunk_ops.cuh"
