// targets/kda/kda_chunk_seg.cu — template chunk_wgmma_seg (spec.json, sm_90a): the sequence
// split. kda_chunk_intra (kernels/intra64.cuh or intra32.cuh by CH), kda_chunk_seg and
// kda_chunk_fixup (kernels/seg.cuh), then kda_chunk_state per segment of SEG chunks
// (kernels/state_wgmma.cuh). Parameters TRN, SEG, CH (GM 2, BV 128, SW 8, PREC 2, STG 0
// fixed); the design and every parameter: kernels/config.cuh.
#include "kernels/config.cuh"
#include "kernels/common.cuh"
#include "kernels/intra64.cuh"
#include "kernels/intra32.cuh"
#include "kernels/state_wgmma.cuh"
#include "kernels/seg.cuh"
