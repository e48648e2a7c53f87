// targets/kda/kda_chunk_tf32.cu — template chunk_tf32 (spec.json): kda_chunk_intra (CH 64,
// kernels/intra64.cuh) then kda_chunk_state on mma.sync, fp32/tf32 (PREC 0, 1:
// kernels/state_f32.cuh) or fp16 (PREC 2: kernels/state_f16.cuh). Parameters BV, SW, PREC,
// STG; the design and every parameter: kernels/config.cuh.
#include "kernels/config.cuh"
#include "kernels/common.cuh"
#include "kernels/intra64.cuh"
#include "kernels/state_f32.cuh"
#include "kernels/state_f16.cuh"
