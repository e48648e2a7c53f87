// targets/kda/tile/wgmma.cuh — forwards to ops/wgmma.cuh. kda's helpers lived in the generic
// tile library (targets/common/tile) until 2026-12-03; candidates stored before then include
// them as "tile/wgmma.cuh", which the operator's folder (first on the include path) resolves
// here, so that their recorded sources still compile (recheck, export, resume).
#pragma once
#include "../ops/wgmma.cuh"
