// targets/kda/kda_chunk_wgmma.cu — template chunk_wgmma (spec.json, sm_90a): kda_chunk_intra
// (CH 64: kernels/intra64.cuh; CH 32: kernels/intra32.cuh, with PIPE also
// kda_chunk_intra_beside, kda_chunk_intra_lead and kda_chunk_flags) and kda_chunk_state on
// wgmma (kernels/state_wgmma.cuh, with PIPE also kda_chunk_state_beside). Parameters GM, TRN,
// CH, UA, RC, PIPE, LEAD (BV 128, SW 8, PREC 2, STG 0 fixed); the design and every parameter:
// kernels/config.cuh.
#include "kernels/config.cuh"
#include "kernels/common.cuh"
#include "kernels/intra64.cuh"
#include "kernels/intra32.cuh"
#include "kernels/state_wgmma.cuh"
