// targets/kda/kda_chunk.cu — tunable chunked KDA forward on tf32 tensor cores
// (mma.sync m16n8k8, fp32 accumulate) and, with PREC 2, fp16 ones where the value
// range allows (m16n8k16, fp32 accumulate), two kernels. K = V = 128, chunk CH = 64 (the
// description below), or 32 (GM 2: an intra kernel of its own, after the CH 64 one).
//
//  kda_chunk_intra  one block (8 warps, two blocks per SM) per (chunk slot, head),
//     fully parallel: the chunk's q, k, v, g are copied to shared memory at once
//     (cp.async, bf16), then in-kernel preprocessing (L2 norm of q and k, gate,
//     sigmoid(beta)), the cumulative log-decay G over the chunk (per channel, in
//     registers), then for 16-row blocks I with reference row r = 16I:
//       P[i,j] = sum_d (q_i e^{G_i-G_r}) (k_j e^{G_r-G_j})          (j <= i)
//       L[i,j] = b_i sum_d (k_i e^{G_i-G_r}) (k_j e^{G_r-G_j})      (j <  i)
//     (every factor lies in [e^-75, e^75] or underflows harmlessly to 0, whatever
//     the gates: |G_i - G_r| <= 15*5 inside a 16-row block and <= 0 across blocks),
//     A = (I+L)^-1 (16x16 diagonal blocks by in-register forward substitution, the
//     rest in two blocked levels on tf32 mma), and the WY factors w = A (b k e^G),
//     u = A (b v) (PREC 2: fp16 mma, as (A diag(b)) (k e^G) and (A diag(b)) v).
//     Writes qg = q e^G, kd = k e^{G_last-G}, w, u ([T,H,128]), P ([slot,H,64,64]) —
//     f32, or fp16 with PREC 2 — and G_last (f32 [slot,H,128]). With GM 1 the four
//     [64][128] tiles and P go out as the sw128 images of the state kernel's shared
//     tiles ([slot,H] x 16 KB / 8 KB), so that it copies each with one bulk copy.
//  kda_chunk_state  one block (SW warps) per (sequence, head, BV value columns), the
//     longest sequences' blocks first (kc_order, kc_item), sequential over the sequence's chunks with the state slice S[128][BV] in
//     shared memory (PREC 2: in registers, see its kernel below):  v' = u - w S;
//     o = scale (qg S + P v');  S <- e^{G_last} S + kd^T v'.  Writes o (bf16) and
//     the final state. GM 1 (sm_90a only): the same on wgmma, two warpgroups by value-column
//     half, operands by bulk copies on mbarriers (see its kernel at the end). GM 2: on
//     the transposed state S^T, whose products take their A operands from registers.
//  (SEG > 0, GM 1 or 2) kda_chunk_seg, kda_chunk_fixup, then kda_chunk_state per segment of
//     SEG chunks: the sequence split with a state hand-off (see the end of the file).
//  (UA 1, CH 32) u = A diag(b) v formed by the state kernel from v's rows: the intra
//     kernel never reads v and writes -A diag(b) (2 KB) in u's place.
// Parameters: BV (value columns per state block), SW (warps of the state kernel),
// PREC (operand precision: tf32 rounded on load or on store, or fp16; see below), TRN
// (the P/L products' tf32 operands truncated instead of rounded),
// STG (PREC 2 only: how the state kernel buffers a chunk's operands; 1 lets BV 64 run
// two blocks per SM, see the fp16 state kernel), GM (PREC 2, BV 128: the state kernel
// on wgmma with bulk copies; 2: on S^T), SEG (GM >= 1: chunks per segment of the sequence split), CH
// (chunk length), UA (who forms u).
// Chunk slots as in baseline.cu: sequence n owns slots n + floor(bos_n/CH) + c.
#include <cuda_bf16.h>

#include "tile/cp_async.cuh"
#include "ops/kda_chunk_ops.cuh"
#include "ops/kda_f16.cuh"
#include "ops/kda_tf32.cuh"
#include "ops/wgmma.cuh"
#include "tile/bulk_copy.cuh"
#include "tile/tma.cuh"

#ifndef BV
#define BV 64
#endif
#ifndef SW
#define SW 4
#endif
// PREC 0: operands converted to tf32 (round to nearest) as fragments are loaded.
// PREC 1: the intra kernel stores qg, kd, w, P already rounded to tf32 and the state
//   kernel stores v' rounded, so fragments are loaded without conversion; only the
//   state S is fed truncated (its low 13 bits ignored). Fewer instructions per mma.
// PREC 2: the intra kernel stores qg, kd, w, u, P as fp16 (round to nearest; fp16 has
//   tf32's 10-bit mantissa), and the state kernel is the fp16 one below (m16n8k16
//   f16 mma, ldmatrix fragments, the state in fp32 registers with an fp16 copy in
//   shared memory as the operand). Needs |v|, |S| (and so h0) well under 65504.
#ifndef PREC
#define PREC 0
#endif
// GM 1 (PREC 2, BV 128, SW 8): the state kernel's products on wgmma, sm_90a only (the
// template chunk_wgmma of spec.json, whose arch list says so). GM 2: the same products on
// the transposed state, S^T in registers as every product's A operand (no fp16 image of S
// or tile of v' in shared memory, no barrier between the warpgroups inside a chunk; the
// intra kernel writes e^{G_last} instead of G_last): ~9 % less time per chunk, which pays
// where the chain and not DRAM is the limit (targets/kda/journal/, ninth session).
#ifndef GM
#define GM 0
#endif
// TRN 1: the intra kernel's within-block P/L products take their tf32 operands truncated
// (the tensor core ignores the low 13 bits) instead of rounded to nearest: 12 integer
// adds fewer per 4 elements of the A build, o's error 1.75e-3 -> 1.77e-3 on the
// benchmark shapes (1.72e-3 -> 1.88e-3 with every gate at the lower bound), chain 0.5-0.8 % faster
// (H200, targets/kda/journal/).
#ifndef TRN
#define TRN 0
#endif
// SEG > 0 (GM 1 or 2): sequences split into segments of SEG chunks whose state chains run
// in parallel, joined by kda_chunk_seg and kda_chunk_fixup (the template
// chunk_wgmma_seg of spec.json): for few long sequences, whose chains alone would leave
// most SMs idle. 0: one chain per (sequence, head).
#ifndef SEG
#define SEG 0
#endif
// (The preprocessing (gate and its cumulative sum G, 1/|q|, 1/|k|, sigmoid(beta)) is fused
// into the intra kernel's phases 0 and 1; a kernel of its own, kda_chunk_prep, measured 29 %
// slower and was retired on 2026-12-03: targets/kda/journal/ names the commit that has it.)
// CH: the chunk length, 64 or 32 (32: GM 2 only; its own intra kernel,
// below). Shorter chunks halve the within-chunk work per token (P, L and the inverse grow
// with CH) and double the state chain's steps.
#ifndef CH
#define CH 64
#endif
static_assert(CH == 64 || (CH == 32 && GM == 2), "CH must be 64, or 32 with GM 2");
// UA 1 (CH 32, SEG 0): u = A diag(b) v is formed by the state kernel, not the intra kernel.
// The intra kernel neither reads v nor forms u, and writes -A diag(b) (fp16 sw64 image,
// 2 KB) where u's image was (8 KB); the state kernel reads v's rows (bf16, 8 KB) and adds
// v^T (-A diag(b))^T to its first product (2 more k16 steps). Per chunk and head 16 KB
// less DRAM traffic for the intra kernel, 2 KB more for the state kernel (-11 % of the
// two kernels' bytes). 0: u from the intra kernel.
#ifndef UA
#define UA 0
#endif
static_assert(UA == 0 || (UA == 1 && CH == 32 && SEG == 0), "UA must be 0, or 1 with CH 32 and SEG 0");
// RC 1 (UA 1): qg, kd and w are recomputed by the state kernel from q, k and g, which it
// reads as inputs: a producer (the state block's third and fourth warpgroups) forms each chunk's gate,
// its cumulative sum and the three images in shared memory two chunks ahead of the chain,
// so none of them goes through DRAM. The intra kernel writes only P, -A diag(b) and the
// row norms 1/|q|, 1/|k| (4.25 KB per chunk and head instead of 28.5 KB); the state kernel
// reads q, k, g (24 KB) in place of qg, kd, w (24 KB). 0: the images from the intra kernel.
#ifndef RC
#define RC 0
#endif
// RC 2 (UA 1): the intra kernel's images as with RC 0, and the state kernel's chain as with
// RC 1, fed by a ninth warp that only copies (bulk copies of the images, v by TMA), so that
// no consumer thread issues a copy or waits for one it issued.
static_assert(RC == 0 || ((RC == 1 || RC == 2) && UA == 1), "RC must be 0, or 1 or 2 with UA 1");
// PIPE (chunk_wgmma only; 1 needs RC 1 and CH 32): where the chains leave half the SMs free
// (NSEQ * H <= SMS / 2, "beside"), the state kernel runs beside the intra kernel instead of
// after it (spec.json: kda_chunk_state_beside on the side stream, launched first, then
// kda_chunk_intra_beside on the main one). The beside intra kernel's grid is (H, slots),
// chunk-major, and each of its blocks, once its stores are complete, sets flags[slot * H + h]
// = 1 (release); the beside state kernel's warp 7 waits for those flags (acquire; 32 chunks'
// flags at a time) before a chunk's P, -A diag(b) and norm copies are issued, and takes its
// (sequence, head) from blockIdx (the order array is being written beside it).
// kda_chunk_flags clears the flags first. Not beside: kda_chunk_intra and kda_chunk_state,
// the same code as PIPE 0 (a flag-aware build of them cost ~2 % on those shapes).
// LEAD (spec.json, percent; PIPE 1 only): > 0 also runs side by side where NSEQ * H <= SMS,
// the chains leaving fewer SMs to the intra kernel than the state kernel consumes from: there
// the intra kernel first does its first fraction f = 1 - LEAD/100 (SMS - NSEQ H) / (NSEQ H)
// of the chunk slots alone (kda_chunk_intra_lead, a head start: the state kernel is forked
// after it), then the rest beside the state kernel. (With the intra kernel's ~0.54 chunk-heads
// per us and SM and the chain's ~1.7 us step, f ~ 1 - 0.9 (SMS - C) / C is where the intra
// kernel beside the state kernel just keeps ahead of it.) Beside only where the chunk slots fit
// a grid's y (65535). The state blocks (one per SM) spin on flags: beside needs SMS to be the
// SMs this context may really use, else, with the chains on all of them, the intra blocks
// would find none (the judge's timeout would end such a run).
// targets/kda/journal/, seventeenth and eighteenth sessions.
#ifndef PIPE
#define PIPE 0
#endif
static_assert(PIPE == 0 || (PIPE == 1 && RC == 1 && CH == 32 && SEG == 0), "PIPE 1 needs RC 1, CH 32 and SEG 0");
static_assert(SEG == 0 || GM >= 1, "SEG needs GM 1 or 2");
static_assert(TRN == 0 || TRN == 1, "TRN must be 0 or 1");
#if GM >= 1 && !defined(__CUDA_ARCH_FEAT_SM90_ALL) && defined(__CUDA_ARCH__)
#error "GM 1 and 2 (wgmma) need sm_90a"
#endif
static_assert(GM >= 0 && GM <= 2, "GM must be 0, 1 or 2");
static_assert(GM == 0 || (PREC == 2 && BV == 128 && SW == 8), "GM 1 and 2 need PREC 2, BV 128, SW 8");
#define KC_RND (PREC == 0)
#define KC_OUT(x) (PREC == 1 ? kda::round_tf32(x) : (x))
#if PREC == 2
#define KC_T __half  // element type of the intermediates qg, kd, w, u, P
#else
#define KC_T float
#endif

#define KC_KD 128  // head dimension (K = V)
#define KC_CH CH   // chunk length
#define KC_LDK 132  // row stride of [CH][128] fp32 arrays (A row-major / B n-major)
#define KC_LDG 136  // row stride of the intra kernel's G [CH][128] (8-byte fragment loads conflict free)
#define KC_LDL 68   // row stride of [CH][CH] arrays
#define KC_LDS (BV + 8)  // row stride of [*][BV] arrays (B k-major)

static_assert(SW == 4 || SW == 8 || (SW == 16 && PREC == 2), "SW must be 4 or 8 (or 16 with PREC 2)");
static_assert(BV == 32 || BV == 64 || BV == 128, "BV must be 32, 64 or 128");
static_assert(PREC == 0 || PREC == 1 || PREC == 2, "PREC must be 0, 1 or 2");

// Developer profiling (benchmarks/kda/dev/harness.cu builds with KC_PROFILE): thread 0
// of every block adds the clock64() cycles spent in each phase. Never defined by
// tessera, so variants carry no globals.
#ifdef KC_PROFILE
__device__ unsigned long long kc_prof[40];
#define KC_MARK(slot_)                                                   \
  do {                                                                   \
    if (threadIdx.x == 0) {                                              \
      long long now_ = clock64();                                        \
      atomicAdd(&kc_prof[slot_], (unsigned long long)(now_ - kc_t_));   \
      kc_t_ = now_;                                                      \
    }                                                                    \
  } while (0)
#define KC_PROF_START long long kc_t_ = clock64()
// (lane 0 of each warp: cycles since t0_ into kc_prof[slot_ + warp], t0_ reset)
#define KC_MARKW(slot_, t0_)                                                                \
  do {                                                                                      \
    if ((threadIdx.x & 31) == 0) {                                                          \
      long long now_ = clock64();                                                           \
      atomicAdd(&kc_prof[(slot_) + (threadIdx.x >> 5)], (unsigned long long)(now_ - (t0_))); \
      t0_ = now_;                                                                           \
    }                                                                                       \
  } while (0)
#define KC_MARKT(slot_, t_)                                              \
  do {                                                                   \
    if (threadIdx.x == (t_)) {                                           \
      long long now_ = clock64();                                        \
      atomicAdd(&kc_prof[slot_], (unsigned long long)(now_ - kc_t_));   \
      kc_t_ = now_;                                                      \
    }                                                                    \
  } while (0)
#else
#define KC_MARKT(slot_, t_) do { } while (0)
#define KC_MARKW(slot_, t0_) do { } while (0)
#define KC_MARK(slot_) do { } while (0)
#define KC_PROF_START do { } while (0)
#endif

__device__ __forceinline__ float kc_bf(const __nv_bfloat16* p, long long i) {
  return __bfloat162float(p[i]);
}

// Stores of 2 or 4 consecutive intermediates (fp32, or fp16 rounded to nearest).
__device__ __forceinline__ void kc_st2(float* p, float a, float b) {
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}
__device__ __forceinline__ void kc_st2(__half* p, float a, float b) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
}
__device__ __forceinline__ void kc_st4(float* p, float a, float b, float c, float d) {
  *reinterpret_cast<float4*>(p) = make_float4(a, b, c, d);
}
__device__ __forceinline__ void kc_st4(__half* p, float a, float b, float c, float d) {
  *reinterpret_cast<uint2*>(p) = make_uint2(kda::pack_f16x2(a, b), kda::pack_f16x2(c, d));
}

// A state accumulator fragment (rows d0 and d0 + 8, columns e and e + 1 of S[d][e])
// from and to the [V][K] layout of h0 and ht (element (e, d) at e * 128 + d), and its
// fp16 copy into shared memory (row d0 at a0, row d0 + 8 at a1).
__device__ __forceinline__ void kc_frag_from_vk(kda::frag_c& s, const float* p, int d0, int e) {
  s.x[0] = p[e * KC_KD + d0];
  s.x[1] = p[(e + 1) * KC_KD + d0];
  s.x[2] = p[e * KC_KD + d0 + 8];
  s.x[3] = p[(e + 1) * KC_KD + d0 + 8];
}
__device__ __forceinline__ void kc_frag_to_vk(float* p, const kda::frag_c& s, int d0, int e) {
  p[e * KC_KD + d0] = s.x[0];
  p[(e + 1) * KC_KD + d0] = s.x[1];
  p[e * KC_KD + d0 + 8] = s.x[2];
  p[(e + 1) * KC_KD + d0 + 8] = s.x[3];
}
__device__ __forceinline__ void kc_frag_to_f16(tile::u32 a0, tile::u32 a1, const kda::frag_c& s) {
  kda::st_shared_u32(a0, kda::pack_f16x2(s.x[0], s.x[1]));
  kda::st_shared_u32(a1, kda::pack_f16x2(s.x[2], s.x[3]));
}

// Element index of (row i, column d) of chunk (slot, h)'s [64][128] intermediates (qg,
// kd, w, u) and of (i, j) in its P block. GM 0: rows bos + i of [T, H, 128], P
// row-major. GM 1: the chunk's sw128 images (tile/wgmma.cuh; 8192 and 4096 elements per
// (slot, head)), which the wgmma state kernel copies whole, with one bulk copy each.
__device__ __forceinline__ long long kc_idx(long long bos, long long slot, long long H, long long h, int i, int d) {
#if GM >= 1
  (void)bos;
  return (slot * H + h) * (KC_CH * KC_KD) + (kda::sw128_off<KC_CH>(i, d) >> 1);
#else
  (void)slot;
  return ((bos + i) * H + h) * KC_KD + d;
#endif
}
__device__ __forceinline__ int kc_pidx(int i, int j) {
#if GM >= 1
  return (int)((KC_CH == 32 ? kda::sw_off<64>(i, j) : kda::sw128_off<KC_CH>(i, j)) >> 1);  // CH 32: [32][32] sw64
#else
  return i * KC_CH + j;
#endif
}

// Slot -> (sequence n, piece c) for pieces of `unit` tokens (chunks, or SEG-chunk
// segments): sequence n owns slots n + floor(cu[n]/unit) + c. False for a slot past its
// sequence's last piece; with first_if_empty, an empty sequence keeps its piece 0.
__device__ bool kc_slot(const long long* cu, long long NSEQ, long long slot, long long* n_out,
                        long long* c_out, long long unit = KC_CH, bool first_if_empty = false) {
  long long lo = 0, hi = NSEQ - 1;
  if (slot < cu[0] / unit) return false;
  while (lo < hi) {
    long long mid = (lo + hi + 1) / 2;
    if (mid + cu[mid] / unit <= slot) lo = mid;
    else hi = mid - 1;
  }
  long long c = slot - (lo + cu[lo] / unit);
  if (c * unit >= cu[lo + 1] - cu[lo] && !(first_if_empty && c == 0)) return false;
  *n_out = lo;
  *c_out = c;
  return true;
}

// The state kernels' block order: longest sequences first. Block (0, 0) of the intra
// kernel writes order[rank] = the sequence with the rank-th most chunks (counting sort in
// its shared memory, before its own work; ties in any order), and the state kernels map
// their block index x = rank * H + head onto (order[rank], head). One long
// chain per SM then starts in the first wave and the last wave holds short ones
// (longest-processing-time-first list scheduling); in the grid's own order a long chain
// could start last (h96_6var: 0.36 ms of state time against 0.30 for h96_1x8192).
#define KC_HAS_ORDER 1  // (for benchmarks/kda/dev: these kernels take the order scratch)
__device__ void kc_order(const long long* __restrict__ cu, long long NSEQ, long long T, int* __restrict__ order,
                         int* cnt) {
  const int nt = blockDim.x, tid = threadIdx.x;
  const int nb = (int)min(T / KC_CH + 2, 8192LL);  // keys: nb - 1 - chunks (clamped), longest first
  int* part = cnt + 8192;                           // [nt] per-thread bin-segment sums
  for (int b = tid; b < nb; b += nt) cnt[b] = 0;
  __syncthreads();
  for (long long n = tid; n < NSEQ; n += nt)
    atomicAdd(&cnt[nb - 1 - (int)min((cu[n + 1] - cu[n] + KC_CH - 1) / KC_CH, (long long)nb - 1)], 1);
  __syncthreads();
  const int per = (nb + nt - 1) / nt, b0 = min(nb, tid * per), b1 = min(nb, b0 + per);
  int sum = 0;
  for (int b = b0; b < b1; ++b) sum += cnt[b];
  part[tid] = sum;
  __syncthreads();
  if (tid == 0)
    for (int t = 0, run = 0; t < nt; ++t) {
      const int x = part[t];
      part[t] = run;
      run += x;
    }
  __syncthreads();
  for (int b = b0, run = part[tid]; b < b1; ++b) {  // exclusive prefix sums: first position per key
    const int x = cnt[b];
    cnt[b] = run;
    run += x;
  }
  __syncthreads();
  for (long long n = tid; n < NSEQ; n += nt)
    order[atomicAdd(&cnt[nb - 1 - (int)min((cu[n + 1] - cu[n] + KC_CH - 1) / KC_CH, (long long)nb - 1)], 1)] = (int)n;
  __syncthreads();  // the shared memory is the block's again
}
// This state block's (sequence, head, first value column) from its linear index.
// grid (NSEQ * H, 1, 128 / BV): x = rank * H + head, z = value block. kc_seq_again reads
// the sequence again (volatile: not kept in a register from the first read).
__device__ __forceinline__ void kc_item(const int* __restrict__ order, long long H, int* n, int* h) {
  const unsigned rank = blockIdx.x / (unsigned)H;
  *n = order[rank];
  *h = (int)(blockIdx.x - rank * (unsigned)H);
}
__device__ __forceinline__ int kc_seq_again(const int* order, long long H) {
  return *reinterpret_cast<const volatile int*>(order + blockIdx.x / (unsigned)H);
}

// Named barriers among the intra kernel's four kh = 0 warps (0, 2, 4, 6: barrier 1) and
// its four kh = 1 warps (1, 3, 5, 7: barrier 2).
__device__ __forceinline__ void kc_bar_kh0() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }
__device__ __forceinline__ void kc_bar_kh1() { asm volatile("bar.sync 2, 128;\n" ::: "memory"); }
__device__ __forceinline__ tile::u32 kc_hmul2(tile::u32 a, tile::u32 b) {
  tile::u32 d;
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// (Variants measured against what follows and retired on 2026-12-03 with the knob KC_HX
// that chose them (H200, intra geomean, one run; journal/): the P/L k16 loop unrolled 2
// (+1.1 %), no A16 (+2.3 %), g in its own cp.async group with the gate started while k and
// q land (+0.4 %), v converted to fp16 by a pass after the qg/kd loop instead of in phase 4
// (+0.7 %), P stored from registers with GM 1 too, the inverse's levels 1 and 2 on fp32
// CUDA-core strips instead of tf32 mma.)
#undef KC_A16
#if PREC == 2
#define KC_A16 1  // phase 3 also writes A diag(b) as fp16 (A16), phase 4 reads it by ldmatrix
#else
#define KC_A16 0
#endif
#define KC_LDA16 72  // row stride (fp16 elements) of A16: conflict-free ldmatrix
#define KC_LDX 40    // row stride (floats) of the inverse's level-1/2 scratch: conflict-free B fragments
#undef KC_PSTAGE
#define KC_PSTAGE (GM >= 1)  // P staged in shared memory, one bulk copy out
#if TRN == 1
#define KC_TF(x) __float_as_uint(x)  // the tensor core truncates the low 13 bits
#else
#define KC_TF(x) kda::to_tf32_fast(x)
#endif

// kda::inv_unit_lower16, also writing the result times diag(b) as fp16 into A16 (row
// stride KC_LDA16): lanes 0-15 store the fp32 block, lanes 16-31 the fp16 one.
template <int LD>
__device__ __forceinline__ void kc_inv16(float* T, __half* a16, const float* bcol) {
  const float bm = bcol[threadIdx.x & 15];
  kda::inv_unit_lower16<LD>(T, [&](int i, int m, float x) { a16[i * KC_LDA16 + m] = __float2half_rn(x * bm); });
}
// The gate of rows 16qr..16qr+15 at channels cpc, cpc+1, lower_bound * sigmoid(exp(A_log)
// (g + dt_bias)) in log2 units (ga2 = exp(A_log) log2 e, lb2 = lower_bound log2 e; 0 past
// len), then its inclusive sum over those rows, in s0 (channel cpc) and s1. row(i) gives
// row i's raw gate pair (bf16 -> fp32). Used by kda_chunk_intra.
template <class Row>
__device__ __forceinline__ void kc_gate_quarter(float (&s0)[16], float (&s1)[16], Row row,
                                                const float* __restrict__ dt_bias, long long h, int cpc, int qr,
                                                int len, float ga2, float lb2) {
  const float2 dtb2 = *reinterpret_cast<const float2*>(dt_bias + h * KC_KD + cpc);
  const float nga2 = -ga2, o0 = nga2 * dtb2.x, o1 = nga2 * dtb2.y;
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    const int i = 16 * qr + r;
    const float2 gg = row(i);
    const float e0 = kda::ex2(fmaf(gg.x, nga2, o0)), e1 = kda::ex2(fmaf(gg.y, nga2, o1));
    s0[r] = i < len ? __fdividef(lb2, 1.0f + e0) : 0.f;
    s1[r] = i < len ? __fdividef(lb2, 1.0f + e1) : 0.f;
  }
  kda::inclusive_scan_regs(s0);
  kda::inclusive_scan_regs(s1);
}
#define KC_LDB 136  // row stride (bf16 elements) of the bf16 chunk tiles
#define KC_P2U 4  // unroll of the k-loop of the P/L products
[[maybe_unused]] constexpr int kP2U = KC_P2U;

// grid (NSEQ + floor(T/64), H), block KC_INTRA_THREADS (256), smem KC_INTRA_SMEM bytes.
// Shared memory (115,456 bytes: two blocks, 16 warps, per SM; the limit is 115,712):
//   Gc  f32  [CH][LDG]  cumulative log-decay G, in log2 units (G log2 e)
//   LA  f32  [CH][LDL]  first the raw gate (bf16 [CH][LDB]), then L, then (I+L)^-1
//   Qs, Ks  bf16 [CH][LDB]  raw q, k of the chunk (Qs later: inverse scratch Xs, 6 KB,
//      then A16 = A diag(b) fp16 [CH][72]; Ks later: k e^G fp16 for phase 4)
//   Vs  [CH][LDB] x 2 bytes: phases 1-2 KB = k_j e^{G_{16(J+1)}-G_j} fp16 (rows 0-47) and
//      the factor vectors Fv (3 x 128 fp16, at row 48); then v (bf16, copied after P/L)
//   rq, rk, bs [CH]
//   Xp  f32  [20][32][4]  phase 2 partial P sums (one channel half); phase 1: quarter
//      totals and first gates of the cumulative sum
// Phases (barriers between):
//   0  (block (0, 0) first sorts the sequences for the state kernels, kc_order)
//      cp.async of q, k, g for the whole chunk (one memory latency); beta, gate
//      parameters; zeros of P above the diagonal blocks (GM 0; GM 1 stages them)
//   1  gate and its cumulative sum (thread = channel pair x 16-row quarter, quarters
//      joined through Xp); row norms (warp per 8 rows); KB and Fv
//   2  P and L, 20 units of (16-row block I, 16-col block J, 8-col half), reference row
//      16I; warp = (row block, channel half), the halves summed through Xp and LA:
//      diagonal blocks on tf32 mma (factors up to e^{+-75}), the 12 off-diagonal units
//      on fp16 m16n8k16 (B = KB by ldmatrix, times Fv for J < I - 1; both factors <= 1);
//      then v copied (cp.async) into Vs; P out (GM 1: staged in Xp as its sw128 image,
//      one bulk copy); qg, kd, G_last out, Ks <- k e^G (fp16)
//   3  (I+L)^-1: diagonal 16x16 blocks by in-register forward substitution, then the
//      off-diagonal blocks in two levels (16-blocks, then the 32x32 block) on tf32 mma
//      (fp32 on CUDA cores measured slower); each final block also written as A diag(b) in
//      fp16 (A16)
//   4  w = A (b k e^G), u = A (b v) on fp16 mma (A16 and Ks, Vs by ldmatrix; v
//      converted bf16 -> fp16 in registers): warp = 16 output columns, 4 row blocks;
//      PREC 2: w and u staged in Gc, then out by bulk copies (GM 1) or 16-byte row copies
#if KC_CH == 64
#define KC_INTRA_THREADS 256
#define KC_INTRA_SMEM \
  (4 * KC_CH * KC_LDG + 4 * KC_CH * KC_LDL + 3 * 2 * KC_CH * KC_LDB + 4 * 3 * KC_CH + 4 * 2560)
#define TESSERA_SMEM_kda_chunk_intra KC_INTRA_SMEM  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(KC_INTRA_THREADS, 2) kda_chunk_intra(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
    const __nv_bfloat16* __restrict__ v, const __nv_bfloat16* __restrict__ g,
    const __nv_bfloat16* __restrict__ beta, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, const long long* __restrict__ cu, KC_T* __restrict__ qg,
    KC_T* __restrict__ kd, KC_T* __restrict__ w, KC_T* __restrict__ u, KC_T* __restrict__ P,
    float* __restrict__ gl, int* __restrict__ order, long long T, long long H, long long K, long long V,
    long long NSEQ, float lower_bound
    ) {
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < KC_INTRA_SMEM) __trap();  // spec.json smem too small?
  extern __shared__ __align__(16) float sm[];
  float* Gc = sm;
  float* LA = Gc + KC_CH * KC_LDG;
  __nv_bfloat16* Gs = reinterpret_cast<__nv_bfloat16*>(LA);
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(LA + KC_CH * KC_LDL);
  __nv_bfloat16* Ks = Qs + KC_CH * KC_LDB;
  __nv_bfloat16* Vs = Ks + KC_CH * KC_LDB;
  float* rq = reinterpret_cast<float*>(Vs + KC_CH * KC_LDB);
  float* rk = rq + KC_CH;
  float* bs = rk + KC_CH;
  float* Xp = bs + KC_CH;  // phase 2: partial P sums of the kh = 1 warps (20 units x 32 lanes x 4)
  float* Xs = reinterpret_cast<float*>(Qs);  // phase 3 scratch (q no longer needed)
  const long long slot = blockIdx.x, h = blockIdx.y;
  if (slot == 0 && h == 0) kc_order(cu, NSEQ, T, order, reinterpret_cast<int*>(sm));
  long long n, c;
  if (!kc_slot(cu, NSEQ, slot, &n, &c)) return;
  const long long bos = cu[n] + c * KC_CH;
  const int len = (int)min((long long)KC_CH, cu[n + 1] - bos);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  KC_T* Pc = P + (slot * H + h) * KC_CH * KC_CH;
  KC_PROF_START;

  // ---- phase 0: the chunk's q, k, v, g rows into shared memory, all in flight.
  // Thread = 16-byte piece lc8 of rows lr + 16 it; rows past the sequence are zero-filled by
  // the copy itself (source size 0, from the chunk's first row), so the loop has no branch.
  const int lr = tid >> 4, lc8 = (tid & 15) * 8;
  const long long rbase = (bos * H + h) * KC_KD + lc8, rstride = H * KC_KD;
#pragma unroll
  for (int tsr = 0; tsr < 3; ++tsr) {  // v is copied later (after P/L) into Vs, which holds KB until then
    // g first, in its own group: the gate and its cumulative sum start while k and q land.
    const __nv_bfloat16* src = (tsr == 0 ? g : tsr == 1 ? k : q) + rbase;
    const tile::u32 dst = tile::smem_addr(tsr == 0 ? Gs : tsr == 1 ? Ks : Qs) + (lr * KC_LDB + lc8) * 2;
#pragma unroll
    for (int it = 0; it < KC_CH / 16; ++it) {
      const int i = lr + 16 * it;
      tile::cp_async16(dst + it * 16 * KC_LDB * 2, src + (i < len ? i * rstride : 0), i < len ? 16u : 0u);
    }
    if (tsr == 0) kda::cp_async_commit();
  }
  kda::cp_async_commit();
  // Log-decays are kept in log2 units (G2 = G log2 e) so every e^(a-b) is ex2(a2-b2).
  const float ga2 = expf(A_log[h]) * 1.4426950408889634f;
  const float lb2 = lower_bound * 1.4426950408889634f;
  if (tid < KC_CH) bs[tid] = tid < len ? 1.0f / (1.0f + expf(-kc_bf(beta, (bos + tid) * H + h))) : 0.f;
  // P is 0 above the diagonal 16x16 blocks: rows 16I..16I+15, columns 16(I+1)..63 (staged
  // with the rest of P instead, with KC_PSTAGE).
  for (int idx = tid; idx < (KC_PSTAGE ? 0 : 384); idx += KC_INTRA_THREADS) {
    int i, c4;
    if (idx < 192) { i = idx / 12; c4 = 4 + idx % 12; }
    else if (idx < 320) { i = 16 + (idx - 192) / 8; c4 = 8 + (idx - 192) % 8; }
    else { i = 32 + (idx - 320) / 4; c4 = 12 + (idx - 320) % 4; }
    if (i < len) kc_st4(Pc + kc_pidx(i, 4 * c4), 0.f, 0.f, 0.f, 0.f);
  }
  kda::cp_async_wait_all();
  __syncthreads();
  KC_MARK(0);

  // ---- phase 1: gate and its cumulative sum; norms; KB and Fv for the fp16 P/L units.
  // Gate and cumulative sum: thread = channel pair (c, c+1) x quarter qr (rows 16qr..16qr+15);
  // quarter totals (and first gates) exchanged through the phase-2 scratch.
  const int cpc = 2 * (tid & 63), qr = tid >> 6;
  float* totq = Xp;              // [4][128] quarter totals
  float* gfq = Xp + 4 * KC_KD;   // [4][128] first (masked) gate of each quarter
  float s0[16], s1[16];
  {
    kc_gate_quarter(s0, s1, [&](int i) { return kda::bf16x2_to_f32(Gs + i * KC_LDB + cpc); }, dt_bias, h, cpc, qr, len,
                    ga2, lb2);
    *reinterpret_cast<float2*>(totq + qr * KC_KD + cpc) = make_float2(s0[15], s1[15]);
    *reinterpret_cast<float2*>(gfq + qr * KC_KD + cpc) = make_float2(s0[0], s1[0]);
  }
  kda::cp_async_wait_all();  // k, q (this thread's copies)
  __syncthreads();  // totals; the raw gate (LA) is consumed; k, q in place
  {
    float ss[16];  // squared norms of rows warp*8 + m: q in ss[m], k in ss[8 + m] (lane's 4 channels)
#pragma unroll
    for (int rr = 0; rr < 8; ++rr) {
      const int i = warp * 8 + rr;
      float qv[4], kv[4];
      kda::bf16x4_to_f32(Qs + i * KC_LDB + lane * 4, qv);
      kda::bf16x4_to_f32(Ks + i * KC_LDB + lane * 4, kv);
      ss[rr] = qv[0] * qv[0] + qv[1] * qv[1] + qv[2] * qv[2] + qv[3] * qv[3];
      ss[8 + rr] = kv[0] * kv[0] + kv[1] * kv[1] + kv[2] * kv[2] + kv[3] * kv[3];
    }
    const float tot2 = kda::warp_sum16(ss);  // value (lane >> 1) & 15
    const int m = (lane >> 1) & 15, i = warp * 8 + (m & 7);
    if ((lane & 1) == 0) (m < 8 ? rq : rk)[i] = i < len ? rsqrtf(tot2 + 1e-6f) : 0.f;
  }
  {
    float off0 = 0.f, off1 = 0.f;
#pragma unroll
    for (int q2 = 0; q2 < 3; ++q2)
      if (q2 < qr) {
        const float2 t = *reinterpret_cast<const float2*>(totq + q2 * KC_KD + cpc);
        off0 += t.x;
        off1 += t.y;
      }
#pragma unroll
    for (int r = 0; r < 16; ++r)
      *reinterpret_cast<float2*>(Gc + (16 * qr + r) * KC_LDG + cpc) = make_float2(s0[r] + off0, s1[r] + off1);
    if (qr < 3) {
      // KB[j][c] = k_j e^{G_{16(J+1)} - G_j} (<= 1 factor; fp16) for j in quarter J = qr.
      const float2 gn = *reinterpret_cast<const float2*>(gfq + (qr + 1) * KC_KD + cpc);
      const float t0 = s0[15] + gn.x, t1 = s1[15] + gn.y;
      __half* KB = reinterpret_cast<__half*>(Vs);
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        const int j = 16 * qr + r;
        const float2 kj = kda::bf16x2_to_f32(Ks + j * KC_LDB + cpc);
        *reinterpret_cast<tile::u32*>(KB + j * KC_LDB + cpc) =
            kda::pack_f16x2(kj.x * kda::ex2(t0 - s0[r]), kj.y * kda::ex2(t1 - s1[r]));
      }
    } else {
      // Factor vectors e^{G_{16I} - G_{16(J+1)}} (<= 1) for (I, J) = (2, 0), (3, 0), (3, 1).
      const float2 t1v = *reinterpret_cast<const float2*>(totq + 1 * KC_KD + cpc);
      const float2 t2v = *reinterpret_cast<const float2*>(totq + 2 * KC_KD + cpc);
      const float2 f1 = *reinterpret_cast<const float2*>(gfq + 1 * KC_KD + cpc);
      const float2 f2 = *reinterpret_cast<const float2*>(gfq + 2 * KC_KD + cpc);
      const float2 f3 = *reinterpret_cast<const float2*>(gfq + 3 * KC_KD + cpc);
      const float a0 = t1v.x + f2.x - f1.x, a1 = t1v.y + f2.y - f1.y;  // G_32 - G_16
      const float b0 = t2v.x + f3.x - f2.x, b1 = t2v.y + f3.y - f2.y;  // G_48 - G_32
      __half* Fv = reinterpret_cast<__half*>(Vs) + 48 * KC_LDB;
      *reinterpret_cast<tile::u32*>(Fv + cpc) = kda::pack_f16x2(kda::ex2(a0), kda::ex2(a1));
      *reinterpret_cast<tile::u32*>(Fv + KC_KD + cpc) = kda::pack_f16x2(kda::ex2(a0 + b0), kda::ex2(a1 + b1));
      *reinterpret_cast<tile::u32*>(Fv + 2 * KC_KD + cpc) = kda::pack_f16x2(kda::ex2(b0), kda::ex2(b1));
    }
  }
  // LA above the diagonal blocks is 0 (the blocked inverse sums over it).
  for (int idx = tid; idx < 384; idx += KC_INTRA_THREADS) {
    int i, c4;
    if (idx < 192) { i = idx / 12; c4 = 4 + idx % 12; }
    else if (idx < 320) { i = 16 + (idx - 192) / 8; c4 = 8 + (idx - 192) % 8; }
    else { i = 32 + (idx - 320) / 4; c4 = 12 + (idx - 320) % 4; }
    *reinterpret_cast<float4*>(LA + i * KC_LDL + 4 * c4) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  __syncthreads();
  KC_MARK(1);

  // ---- phase 2: P and L (tf32 mma on the diagonal blocks, fp16 off them). Warp = (row
  // block I = warp/2, channel half kh = warp%2): all 2(I+1) units (J, nt) of row block I
  // (16 rows x 8 columns 16J+8nt.., J <= I) over the channels 64kh..64kh+63, reference row
  // 16I (off the diagonal: 16(J+1), see KB), so every A element (q, k e^{G_i-G_r}) is built once; kh = 1 leaves its partial sums in Xp
  // (P) and LA (L), kh = 0 adds them and writes P and L. Lane t takes the channel
  // pair c, c+1 (c = 8ks+2t) as k = t, t+4 of the m16n8k8 step: 8-byte G loads and
  // 4-byte bf16x2 loads (the k order inside a step is free if A and B agree).
  {
    // (Row blocks (0, 3) and (1, 2) paired on a scheduler, warps w and w+4, made the kernel
    // 3% slower.)
    const int I = warp >> 1, kh = warp & 1, cnt = 2 * (I + 1);
    const int r = 16 * I, i0 = r + gq, i1 = i0 + 8;
    kda::frag_c accP[8], accL[8];
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      kda::zero(accP[s]);
      kda::zero(accL[s]);
    }
    // Off-diagonal units (J < I) on fp16 m16n8k16: B = KB rows 16J.. (k_j e^{G_{16(J+1)}-G_j}) by
    // ldmatrix, times e^{G_{16I}-G_{16(J+1)}} per channel (Fv) for I > J + 1; A = the same fp32
    // values as the tf32 A fragments, packed to fp16 (both factors <= 1: fp16 range).
    const tile::u32 kbl = tile::smem_addr(Vs) +
                          ((8 * (lane >> 4) + (lane & 7)) * KC_LDB + 64 * kh + 8 * ((lane >> 3) & 1)) * 2;
    const __half* Fv = reinterpret_cast<const __half*>(Vs) + 48 * KC_LDB + 64 * kh + 2 * tq;
    // Units: s = 0, 1 the diagonal block (J = I, nt = s), s = 2 + 2J + nt the blocks J < I.
    // Diagonal B fragments are lane-local: column j = 16I + 8nt + g is the lane's own A row
    // (i0 or i1), so B = k_j e^{G_r - G_j} comes from the A build's loads.
#pragma unroll 1
    for (int m = 0; m < KC_KD / 32; ++m) {
      tile::u32 hq[4], hk[4];
#pragma unroll
      for (int sub = 0; sub < 2; ++sub) {
        const int c = 64 * kh + 16 * m + 8 * sub + 2 * tq;
        const float2 gr = *reinterpret_cast<const float2*>(Gc + r * KC_LDG + c);
        const float2 g0 = *reinterpret_cast<const float2*>(Gc + i0 * KC_LDG + c);
        const float2 g1 = *reinterpret_cast<const float2*>(Gc + i1 * KC_LDG + c);
        const float d00 = g0.x - gr.x, d01 = g0.y - gr.y, d10 = g1.x - gr.x, d11 = g1.y - gr.y;
        const float e00 = kda::ex2(d00), e01 = kda::ex2(d01), e10 = kda::ex2(d10), e11 = kda::ex2(d11);
        const float f00 = kda::ex2(-d00), f01 = kda::ex2(-d01), f10 = kda::ex2(-d10), f11 = kda::ex2(-d11);
        const float2 q0 = kda::bf16x2_to_f32(Qs + i0 * KC_LDB + c), q1 = kda::bf16x2_to_f32(Qs + i1 * KC_LDB + c);
        const float2 k0 = kda::bf16x2_to_f32(Ks + i0 * KC_LDB + c), k1 = kda::bf16x2_to_f32(Ks + i1 * KC_LDB + c);
        const float aq00 = q0.x * e00, aq01 = q0.y * e01, aq10 = q1.x * e10, aq11 = q1.y * e11;
        const float ak00 = k0.x * e00, ak01 = k0.y * e01, ak10 = k1.x * e10, ak11 = k1.y * e11;
        kda::frag_a aq, ak;
        aq.x[0] = KC_TF(aq00);
        aq.x[1] = KC_TF(aq10);
        aq.x[2] = KC_TF(aq01);
        aq.x[3] = KC_TF(aq11);
        ak.x[0] = KC_TF(ak00);
        ak.x[1] = KC_TF(ak10);
        ak.x[2] = KC_TF(ak01);
        ak.x[3] = KC_TF(ak11);
        kda::frag_b b0, b1;
        b0.x[0] = KC_TF(k0.x * f00);
        b0.x[1] = KC_TF(k0.y * f01);
        b1.x[0] = KC_TF(k1.x * f10);
        b1.x[1] = KC_TF(k1.y * f11);
        kda::mma(accP[0], aq, b0);
        kda::mma(accL[0], ak, b0);
        kda::mma(accP[1], aq, b1);
        kda::mma(accL[1], ak, b1);
        if (I > 0) {
          hq[2 * sub] = kda::pack_f16x2(aq00, aq01);
          hq[2 * sub + 1] = kda::pack_f16x2(aq10, aq11);
          hk[2 * sub] = kda::pack_f16x2(ak00, ak01);
          hk[2 * sub + 1] = kda::pack_f16x2(ak10, ak11);
        }
      }
#pragma unroll
      for (int J = 0; J < 3; ++J) {
        if (J < I) {  // off-diagonal column block J: fp16
          tile::u32 b[4];
          kda::ldsm_x4(b, kbl + (16 * J * KC_LDB + 16 * m) * 2);
          if (I >= J + 2) {
            const __half* f = Fv + (I + J - 2) * KC_KD + 16 * m;
            const tile::u32 flo = *reinterpret_cast<const tile::u32*>(f);
            const tile::u32 fhi = *reinterpret_cast<const tile::u32*>(f + 8);
            b[0] = kc_hmul2(b[0], flo);
            b[1] = kc_hmul2(b[1], fhi);
            b[2] = kc_hmul2(b[2], flo);
            b[3] = kc_hmul2(b[3], fhi);
          }
          kda::mma_f16(accP[2 + 2 * J], hq, b[0], b[1]);
          kda::mma_f16(accL[2 + 2 * J], hk, b[0], b[1]);
          kda::mma_f16(accP[3 + 2 * J], hq, b[2], b[3]);
          kda::mma_f16(accL[3 + 2 * J], hk, b[2], b[3]);
        }
      }
    }
    float4* Xw = reinterpret_cast<float4*>(Xp) + (I * (I + 1)) * 32 + lane;  // unit base I(I+1)
    if (kh == 1) {
#pragma unroll
      for (int s = 0; s < 8; ++s) {
        if (s < cnt) {
          const int j = (s < 2 ? 16 * I + 8 * s : 8 * s - 16) + 2 * tq;  // unit s: columns 16J + 8nt..
          Xw[32 * s] = make_float4(accP[s].x[0], accP[s].x[1], accP[s].x[2], accP[s].x[3]);
          *reinterpret_cast<float2*>(LA + i0 * KC_LDL + j) = make_float2(accL[s].x[0], accL[s].x[1]);
          *reinterpret_cast<float2*>(LA + i1 * KC_LDL + j) = make_float2(accL[s].x[2], accL[s].x[3]);
        }
      }
    }
    __syncthreads();  // the kh = 1 partial sums are in Xp and LA; KB and Fv are consumed
    // v into Vs now (it held KB): in flight during the P/L epilogue and the qg/kd loop.
#pragma unroll
    for (int it = 0; it < KC_CH / 16; ++it) {
      const int i = lr + 16 * it;
      tile::cp_async16(tile::smem_addr(Vs) + ((i * KC_LDB + lc8) * 2), v + rbase + (i < len ? i * rstride : 0),
                       i < len ? 16u : 0u);
    }
    kda::cp_async_commit();
#if KC_PSTAGE
    // P goes out as its sw128 image: staged in Xp once the kh = 0 warps have taken their
    // partial sums from it (with zeros above the diagonal blocks), then one 8 KB bulk copy
    // (direct 4-byte stores touch 8 rows per warp instruction).
    if (kh == 0) {
#pragma unroll
      for (int s = 0; s < 8; ++s) {
        if (s < cnt) {
          const float4 xp = Xw[32 * s];
          accP[s].x[0] += xp.x;
          accP[s].x[1] += xp.y;
          accP[s].x[2] += xp.z;
          accP[s].x[3] += xp.w;
        }
      }
      kc_bar_kh0();  // the kh = 0 warps' partial sums are taken (Xp is about to hold P)
    }
    __half* Ps = reinterpret_cast<__half*>(Xp);
#endif
    if (kh == 0) {
      const float q0 = rq[i0], q1 = rq[i1], b0 = bs[i0] * rk[i0], b1 = bs[i1] * rk[i1];
#if KC_PSTAGE
      for (int idx = lane; idx < 16 * (6 - 2 * I); idx += 32) {  // 16-byte chunks right of block I
        const int i = 16 * I + idx / (6 - 2 * I), c8 = 8 * (2 * I + 2 + idx % (6 - 2 * I));
        *reinterpret_cast<uint4*>(Ps + (kda::sw128_off<KC_CH>(i, c8) >> 1)) = make_uint4(0u, 0u, 0u, 0u);
      }
#endif
#pragma unroll
      for (int s = 0; s < 8; ++s) {
        if (s < cnt) {
          const int j = (s < 2 ? 16 * I + 8 * s : 8 * s - 16) + 2 * tq;  // unit s: columns 16J + 8nt..
#if KC_PSTAGE
          const float4 xp = make_float4(0.f, 0.f, 0.f, 0.f);
#else
          const float4 xp = Xw[32 * s];
#endif
          const float2 l0 = *reinterpret_cast<const float2*>(LA + i0 * KC_LDL + j);
          const float2 l1 = *reinterpret_cast<const float2*>(LA + i1 * KC_LDL + j);
          const float2 kj = *reinterpret_cast<const float2*>(rk + j);
          const float p00 = (accP[s].x[0] + xp.x) * (q0 * kj.x), p01 = (accP[s].x[1] + xp.y) * (q0 * kj.y);
          const float p10 = (accP[s].x[2] + xp.z) * (q1 * kj.x), p11 = (accP[s].x[3] + xp.w) * (q1 * kj.y);
          const float l00 = (accL[s].x[0] + l0.x) * kj.x, l01 = (accL[s].x[1] + l0.y) * kj.y;
          const float l10 = (accL[s].x[2] + l1.x) * kj.x, l11 = (accL[s].x[3] + l1.y) * kj.y;
#if KC_PSTAGE
          *reinterpret_cast<tile::u32*>(Ps + kc_pidx(i0, j)) = kda::pack_f16x2(j <= i0 ? p00 : 0.f, j + 1 <= i0 ? p01 : 0.f);
          *reinterpret_cast<tile::u32*>(Ps + kc_pidx(i1, j)) = kda::pack_f16x2(j <= i1 ? p10 : 0.f, j + 1 <= i1 ? p11 : 0.f);
#else
          if (i0 < len) kc_st2(Pc + kc_pidx(i0, j), j <= i0 ? KC_OUT(p00) : 0.f, j + 1 <= i0 ? KC_OUT(p01) : 0.f);
          if (i1 < len) kc_st2(Pc + kc_pidx(i1, j), j <= i1 ? KC_OUT(p10) : 0.f, j + 1 <= i1 ? KC_OUT(p11) : 0.f);
#endif
          *reinterpret_cast<float2*>(LA + i0 * KC_LDL + j) =
              make_float2(j < i0 ? b0 * l00 : 0.f, j + 1 < i0 ? b0 * l01 : 0.f);
          *reinterpret_cast<float2*>(LA + i1 * KC_LDL + j) =
              make_float2(j < i1 ? b1 * l10 : 0.f, j + 1 < i1 ? b1 * l11 : 0.f);
        }
      }
#if KC_PSTAGE
      kda::fence_async_shared();
      kc_bar_kh0();  // P is staged
      if (tid == 0) {
        tile::bulk_s2g(Pc, tile::smem_addr(Ps), KC_CH * KC_CH * 2);
        tile::bulk_commit();  // waited for with w and u's copies at the end
      }
#endif
    }
  }
  KC_MARK(5);
  // (No barrier here: the one after the P/L loop ordered its reads of Ks before the loop
  // below rewrites Ks, and the loop touches nothing the P/L epilogue reads or writes.)
  // qg = q e^G, kd = k e^{G_last - G} (normalized), G_last; PREC 2: Ks <- k e^G
  // (normalized, fp16, in place) for phase 4.
  {
    // Thread = channels d..d+3 of a warp's rows. Branch-free: rows past the sequence hold
    // q = k = 0 (zero-filled copies) and a finite G, so they give zeros (the GM 1 images
    // need them); GM 0 does not store them (they belong to the next sequence).
    // KC_PSTAGE: the kh = 1 warps come here while the kh = 0 ones finish P and L, so they
    // take rows 0..43 (11 each, row j + 4 it for warp pair j) and the kh = 0 warps 44..63.
    const float* Gl = Gc + (len - 1) * KC_LDG;
    const int d = (tid & 31) * 4;
    const float4 GL = *reinterpret_cast<const float4*>(Gl + d);
#if KC_PSTAGE
    const int kh = warp & 1, r0 = (kh ? 0 : 44) + (warp >> 1), nit = kh ? 11 : 5;
    if (kh) {
      // Not needed for correctness: the kh = 1 warps pass as many barriers as the kh = 0
      // ones did in the epilogue. compute-sanitizer's racecheck orders accesses by each
      // warp's barrier count, and with the counts apart it reported phase 4's reads of A16
      // as racing with level 2's writes (a false positive, gone with these two).
      kc_bar_kh1();
      kc_bar_kh1();
    }
#pragma unroll 1
    for (int it = 0; it < nit; ++it) {
      const int i = r0 + 4 * it;
      const long long gi = kc_idx(bos, slot, H, h, i, d);
#else
    const int r0 = tid >> 5;
#if GM >= 1
    const long long gb = kc_idx(bos, slot, H, h, r0, d);  // row r0 + 8 it: + 8 rows of 128 bytes
#endif
#pragma unroll
    for (int it = 0; it < KC_CH / 8; ++it) {
      const int i = r0 + 8 * it;
#endif
      const float4 G = *reinterpret_cast<const float4*>(Gc + i * KC_LDG + d);
      float qv[4], kv[4];
      kda::bf16x4_to_f32(Qs + i * KC_LDB + d, qv);
      kda::bf16x4_to_f32(Ks + i * KC_LDB + d, kv);
      const float a = rq[i], b = rk[i];
      const float e0 = kda::ex2(G.x), e1 = kda::ex2(G.y), e2 = kda::ex2(G.z), e3 = kda::ex2(G.w);
      const float k0 = kv[0] * b, k1 = kv[1] * b, k2 = kv[2] * b, k3 = kv[3] * b;
#if GM >= 1 && !KC_PSTAGE
      const long long gi = gb + it * 8 * 64;
#elif GM == 0
      const long long gi = kc_idx(bos, slot, H, h, i, d);
      if (i < len)
#endif
      {
        kc_st4(qg + gi, KC_OUT(qv[0] * a * e0), KC_OUT(qv[1] * a * e1), KC_OUT(qv[2] * a * e2), KC_OUT(qv[3] * a * e3));
        kc_st4(kd + gi, KC_OUT(k0 * kda::ex2(GL.x - G.x)), KC_OUT(k1 * kda::ex2(GL.y - G.y)),
               KC_OUT(k2 * kda::ex2(GL.z - G.z)), KC_OUT(k3 * kda::ex2(GL.w - G.w)));
      }
#if PREC == 2
      *reinterpret_cast<uint2*>(Ks + i * KC_LDB + d) =
          make_uint2(kda::pack_f16x2(k0 * e0, k1 * e1), kda::pack_f16x2(k2 * e2, k3 * e3));
#endif
    }
    if (tid < 32) {  // G_last in natural-log units (GM 2: the decay e^{G_last} itself)
      const float4 g2 = *reinterpret_cast<const float4*>(Gl + tid * 4);
#if GM == 2
      *reinterpret_cast<float4*>(gl + (slot * H + h) * KC_KD + tid * 4) =
          make_float4(kda::ex2(g2.x), kda::ex2(g2.y), kda::ex2(g2.z), kda::ex2(g2.w));
#else
      const float l2 = 0.6931471805599453f;
      *reinterpret_cast<float4*>(gl + (slot * H + h) * KC_KD + tid * 4) =
          make_float4(g2.x * l2, g2.y * l2, g2.z * l2, g2.w * l2);
#endif
    }
  }
#if PREC != 2
  kda::cp_async_wait_all();
#endif
  __syncthreads();
  KC_MARK(2);

  // ---- phase 3: A = (I+L)^-1 in place in LA.
#if KC_A16
  __half* A16 = reinterpret_cast<__half*>(Qs) + 3072;  // after the phase-3 scratch Xs (1536 floats)
  if (warp < 4) kc_inv16<KC_LDL>(LA + 16 * warp * (KC_LDL + 1), A16 + 16 * warp * (KC_LDA16 + 1), bs + 16 * warp);
#else
  if (warp < 4) kda::inv_unit_lower16<KC_LDL>(LA + 16 * warp * (KC_LDL + 1));
#endif
  __syncthreads();
  // Levels 1 and 2 on tf32 mma (m16n8k8, operands rounded to nearest, fp32 accumulate):
  // ~4x fewer instructions than fp32 strips on CUDA cores (measured). Scratch X / Z is
  // [rows][KC_LDX] fp32 in Xs (conflict-free B fragments).
  {  // level 1: A10 = -A11 (L10 A00), A32 = -A33 (L32 A22); warp = (which, 8-column half), warps 0-3
    const int which = (warp >> 1) & 1, n0 = 8 * (warp & 1);
    const int Ib = 16 * (2 * which + 1), Jb = Ib - 16;
    float* X = Xs + which * 16 * KC_LDX;
    kda::frag_c acc[1];
    if (warp < 4) {
      kda::zero(acc[0]);
      kda::mma_strip_rm_km<16, 1, 2>(acc, LA + Ib * KC_LDL + Jb, KC_LDL, 0, LA + Jb * KC_LDL + Jb, KC_LDL, n0);
      *reinterpret_cast<float2*>(X + gq * KC_LDX + n0 + 2 * tq) = make_float2(acc[0].x[0], acc[0].x[1]);
      *reinterpret_cast<float2*>(X + (gq + 8) * KC_LDX + n0 + 2 * tq) = make_float2(acc[0].x[2], acc[0].x[3]);
    }
    __syncthreads();  // both column halves have read L10 (overwritten below by A10)
    if (warp < 4) {
      kda::zero(acc[0]);
      kda::mma_strip_rm_km<16, 1, 2>(acc, LA + Ib * KC_LDL + Ib, KC_LDL, 0, X, KC_LDX, n0);
      const int j = Jb + n0 + 2 * tq;
      *reinterpret_cast<float2*>(LA + (Ib + gq) * KC_LDL + j) = make_float2(-acc[0].x[0], -acc[0].x[1]);
      *reinterpret_cast<float2*>(LA + (Ib + gq + 8) * KC_LDL + j) = make_float2(-acc[0].x[2], -acc[0].x[3]);
#if KC_A16
      const float2 bb = *reinterpret_cast<const float2*>(bs + j);
      *reinterpret_cast<tile::u32*>(A16 + (Ib + gq) * KC_LDA16 + j) =
          kda::pack_f16x2(-acc[0].x[0] * bb.x, -acc[0].x[1] * bb.y);
      *reinterpret_cast<tile::u32*>(A16 + (Ib + gq + 8) * KC_LDA16 + j) =
          kda::pack_f16x2(-acc[0].x[2] * bb.x, -acc[0].x[3] * bb.y);
#endif
    }
  }
  __syncthreads();
  {  // level 2: A[32:, :32] = -A[32:, 32:] (L[32:, :32] A[:32, :32]); warp = (16-row half, 8 columns)
    const int m0 = 16 * (warp >> 2), n0 = 8 * (warp & 3);
    float* Z = Xs;  // (X is consumed)
    kda::frag_c acc[1];
    kda::zero(acc[0]);
    kda::mma_strip_rm_km<32, 1, 4>(acc, LA + 32 * KC_LDL, KC_LDL, m0, LA, KC_LDL, n0);
    *reinterpret_cast<float2*>(Z + (m0 + gq) * KC_LDX + n0 + 2 * tq) = make_float2(acc[0].x[0], acc[0].x[1]);
    *reinterpret_cast<float2*>(Z + (m0 + gq + 8) * KC_LDX + n0 + 2 * tq) = make_float2(acc[0].x[2], acc[0].x[3]);
    __syncthreads();
    kda::zero(acc[0]);
    kda::mma_strip_rm_km<32, 1, 4>(acc, LA + 32 * KC_LDL + 32, KC_LDL, m0, Z, KC_LDX, n0);
    const int i0 = 32 + m0 + gq, j = n0 + 2 * tq;
    *reinterpret_cast<float2*>(LA + i0 * KC_LDL + j) = make_float2(-acc[0].x[0], -acc[0].x[1]);
    *reinterpret_cast<float2*>(LA + (i0 + 8) * KC_LDL + j) = make_float2(-acc[0].x[2], -acc[0].x[3]);
#if KC_A16
    const float2 bb = *reinterpret_cast<const float2*>(bs + j);
    *reinterpret_cast<tile::u32*>(A16 + i0 * KC_LDA16 + j) = kda::pack_f16x2(-acc[0].x[0] * bb.x, -acc[0].x[1] * bb.y);
    *reinterpret_cast<tile::u32*>(A16 + (i0 + 8) * KC_LDA16 + j) =
        kda::pack_f16x2(-acc[0].x[2] * bb.x, -acc[0].x[3] * bb.y);
#endif
  }
#if PREC == 2
  kda::cp_async_wait_all();  // v (bf16, converted to fp16 as phase 4 loads it)
#endif
  __syncthreads();
  KC_MARK(3);

  // ---- phase 4: w = A (b k e^G), u = A (b v); warp = columns 16*warp .. +15.
  {
    kda::frag_c accW[4][2], accU[4][2];
#pragma unroll
    for (int I = 0; I < 4; ++I)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        kda::zero(accW[I][nt]);
        kda::zero(accU[I][nt]);
      }
#if PREC == 2
    // fp16 m16n8k16: B (k = j, n = d) from the tiles Ks (fp16) and Vs (bf16, converted
    // in registers) (row stride 272 bytes: conflict-free ldmatrix.trans), A from A16 by
    // ldmatrix.
    const tile::u32 lb = tile::smem_addr(Ks) + ((lane & 15) * KC_LDB + 16 * warp + (lane >> 4) * 8) * 2;
    const tile::u32 vb = lb + (tile::u32)(Vs - Ks) * 2;
#if KC_A16
    const tile::u32 a16l = tile::smem_addr(A16) + ((lane & 7) + 8 * ((lane >> 3) & 1)) * KC_LDA16 * 2 + (lane >> 4) * 16;
#endif
#pragma unroll
    for (int ks = 0; ks < KC_CH / 16; ++ks) {
      tile::u32 bk[4], bv[4];
      kda::ldsm_x4_t(bk, lb + ks * 16 * KC_LDB * 2);
      kda::ldsm_x4_t(bv, vb + ks * 16 * KC_LDB * 2);
#pragma unroll
      for (int e = 0; e < 4; ++e) {  // bf16 pairs -> fp16 pairs (exact: v in fp16 range)
        const float2 f = kda::bf16x2_bits_to_f32(bv[e]);
        bv[e] = kda::pack_f16x2(f.x, f.y);
      }
#if KC_A16
#pragma unroll
      for (int I = 0; I < 4; ++I) {
        if (I >= ks) {
          tile::u32 a[4];  // A diag(b) fragments from A16 (matrices: rows +0/+8, columns +0/+8)
          kda::ldsm_x4(a, a16l + (16 * I * KC_LDA16 + 16 * ks) * 2);
          kda::mma_f16(accW[I][0], a, bk[0], bk[1]);
          kda::mma_f16(accW[I][1], a, bk[2], bk[3]);
          kda::mma_f16(accU[I][0], a, bv[0], bv[1]);
          kda::mma_f16(accU[I][1], a, bv[2], bv[3]);
        }
      }
#else
      // A diag(b): beta folded into A's columns (w = A diag(b) (k e^G), u = A diag(b) v)
      const float2 b0 = *reinterpret_cast<const float2*>(bs + 16 * ks + 2 * tq);
      const float2 b8 = *reinterpret_cast<const float2*>(bs + 16 * ks + 2 * tq + 8);
#pragma unroll
      for (int I = 0; I < 4; ++I) {
        if (I >= ks) {
          const float* r0 = LA + (16 * I + gq) * KC_LDL + 16 * ks + 2 * tq;
          const float* r1 = r0 + 8 * KC_LDL;
          const float2 x0 = *reinterpret_cast<const float2*>(r0), x1 = *reinterpret_cast<const float2*>(r1);
          const float2 x2 = *reinterpret_cast<const float2*>(r0 + 8), x3 = *reinterpret_cast<const float2*>(r1 + 8);
          const tile::u32 a[4] = {kda::pack_f16x2(x0.x * b0.x, x0.y * b0.y), kda::pack_f16x2(x1.x * b0.x, x1.y * b0.y),
                                  kda::pack_f16x2(x2.x * b8.x, x2.y * b8.y), kda::pack_f16x2(x3.x * b8.x, x3.y * b8.y)};
          kda::mma_f16(accW[I][0], a, bk[0], bk[1]);
          kda::mma_f16(accW[I][1], a, bk[2], bk[3]);
          kda::mma_f16(accU[I][0], a, bv[0], bv[1]);
          kda::mma_f16(accU[I][1], a, bv[2], bv[3]);
        }
      }
#endif
    }
#else
#pragma unroll 4  // full unroll spills under NVRTC (128-register cap)
    for (int ks = 0; ks < KC_CH / 8; ++ks) {
      const int j0 = ks * 8 + tq, j1 = j0 + 4;
      const float bk0 = bs[j0] * rk[j0], bk1 = bs[j1] * rk[j1], bv0 = bs[j0], bv1 = bs[j1];
      kda::frag_b bw[2], bu[2];
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int d = 16 * warp + 8 * nt + gq;
        bw[nt].x[0] = kda::to_tf32_fast(__bfloat162float(Ks[j0 * KC_LDB + d]) * bk0 * kda::ex2(Gc[j0 * KC_LDG + d]));
        bw[nt].x[1] = kda::to_tf32_fast(__bfloat162float(Ks[j1 * KC_LDB + d]) * bk1 * kda::ex2(Gc[j1 * KC_LDG + d]));
        bu[nt].x[0] = kda::to_tf32_fast(__bfloat162float(Vs[j0 * KC_LDB + d]) * bv0);
        bu[nt].x[1] = kda::to_tf32_fast(__bfloat162float(Vs[j1 * KC_LDB + d]) * bv1);
      }
#pragma unroll
      for (int I = 0; I < 4; ++I) {
        if (ks < 2 * (I + 1)) {
          kda::frag_a a;
          kda::load_a_rm(a, LA, KC_LDL, 16 * I, ks * 8);
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
            kda::mma(accW[I][nt], a, bw[nt]);
            kda::mma(accU[I][nt], a, bu[nt]);
          }
        }
      }
    }
#endif
#if GM >= 1
    // w and u go out as whole sw128 images (zeros past len): staged in Gc (free since the
    // qg/kd loop; conflict-free 4-byte stores) and written by two 16 KB bulk copies, where
    // direct 4-byte global stores would touch 8 rows per warp instruction.
    __half* Ws = reinterpret_cast<__half*>(Gc);
    __half* Us = Ws + KC_CH * KC_KD;
#pragma unroll
    for (int I = 0; I < 4; ++I) {
      const int i0 = 16 * I + gq, i1 = i0 + 8;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int e = 16 * warp + 8 * nt + 2 * tq;
        const int x0 = (int)(kda::sw128_off<KC_CH>(i0, e) >> 1), x1 = (int)(kda::sw128_off<KC_CH>(i1, e) >> 1);
        const bool z0 = i0 >= len, z1 = i1 >= len;
        *reinterpret_cast<tile::u32*>(Ws + x0) =
            z0 ? 0u : kda::pack_f16x2(accW[I][nt].x[0], accW[I][nt].x[1]);
        *reinterpret_cast<tile::u32*>(Us + x0) =
            z0 ? 0u : kda::pack_f16x2(accU[I][nt].x[0], accU[I][nt].x[1]);
        *reinterpret_cast<tile::u32*>(Ws + x1) =
            z1 ? 0u : kda::pack_f16x2(accW[I][nt].x[2], accW[I][nt].x[3]);
        *reinterpret_cast<tile::u32*>(Us + x1) =
            z1 ? 0u : kda::pack_f16x2(accU[I][nt].x[2], accU[I][nt].x[3]);
      }
    }
    kda::fence_async_shared();
    __syncthreads();
    if (tid == 0) {
      const long long base = (slot * H + h) * (KC_CH * KC_KD);
      if (RC != 1) tile::bulk_s2g(w + base, tile::smem_addr(Ws), KC_CH * KC_KD * 2);
      tile::bulk_s2g(u + base, tile::smem_addr(Us), KC_CH * KC_KD * 2);
      tile::bulk_commit();
      tile::bulk_wait_read<0>();  // the block's shared memory must outlive the copies' reads
    }
#elif PREC == 2
    // The same staging for the [T, H, 128] rows: [64][KC_LDB] fp16 tiles in Gc (conflict-free
    // 4-byte stores), then 16-byte copies of the rows of the sequence.
    __half* Ws = reinterpret_cast<__half*>(Gc);
    __half* Us = Ws + KC_CH * KC_LDB;
#pragma unroll
    for (int I = 0; I < 4; ++I) {
      const int i0 = 16 * I + gq, i1 = i0 + 8;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int e = 16 * warp + 8 * nt + 2 * tq;
        *reinterpret_cast<tile::u32*>(Ws + i0 * KC_LDB + e) = kda::pack_f16x2(accW[I][nt].x[0], accW[I][nt].x[1]);
        *reinterpret_cast<tile::u32*>(Us + i0 * KC_LDB + e) = kda::pack_f16x2(accU[I][nt].x[0], accU[I][nt].x[1]);
        *reinterpret_cast<tile::u32*>(Ws + i1 * KC_LDB + e) = kda::pack_f16x2(accW[I][nt].x[2], accW[I][nt].x[3]);
        *reinterpret_cast<tile::u32*>(Us + i1 * KC_LDB + e) = kda::pack_f16x2(accU[I][nt].x[2], accU[I][nt].x[3]);
      }
    }
    __syncthreads();
#pragma unroll
    for (int it = 0; it < KC_CH * 16 / KC_INTRA_THREADS; ++it) {
      const int idx = it * KC_INTRA_THREADS + tid, i = idx >> 4, c8 = (idx & 15) * 8;
      if (i < len) {
        const long long gi = kc_idx(bos, slot, H, h, i, c8);
        *reinterpret_cast<uint4*>(w + gi) = *reinterpret_cast<const uint4*>(Ws + i * KC_LDB + c8);
        *reinterpret_cast<uint4*>(u + gi) = *reinterpret_cast<const uint4*>(Us + i * KC_LDB + c8);
      }
    }
#else  // fp32 intermediates: no room to stage them
#pragma unroll
    for (int I = 0; I < 4; ++I) {
      const int i0 = 16 * I + gq, i1 = i0 + 8;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int e = 16 * warp + 8 * nt + 2 * tq;
        const bool z0 = i0 >= len, z1 = i1 >= len;  // rows of the next sequence: not written
        if (!z0) {
          const long long g0 = kc_idx(bos, slot, H, h, i0, e);
          kc_st2(w + g0, KC_OUT(accW[I][nt].x[0]), KC_OUT(accW[I][nt].x[1]));
          kc_st2(u + g0, accU[I][nt].x[0], accU[I][nt].x[1]);
        }
        if (!z1) {
          const long long g1 = kc_idx(bos, slot, H, h, i1, e);
          kc_st2(w + g1, KC_OUT(accW[I][nt].x[2]), KC_OUT(accW[I][nt].x[3]));
          kc_st2(u + g1, accU[I][nt].x[2], accU[I][nt].x[3]);
        }
      }
    }
#endif
  }
  KC_MARK(4);
}
#else  // KC_CH == 32
// ---- The CH 32 intra kernel (GM 2 only): the same outputs as the CH 64 one above, for
// 32-row chunks. grid (NSEQ + floor(T/32), H), block 128 (4 warps), smem KC_INTRA_SMEM
// bytes: 44,416 with UA 1 (five blocks per SM: 5 x (44,416 + 1,024 reserved) <= 228 KB),
// 50,560 with UA 0 (four):
//   Gc   f32  [32][LDG]  G in log2 units; in phase 3 the inverse's 16x16 scratch; in
//                        phase 4 the w and u images (staged for the bulk stores)
//   LA   f32  [32][36]   phase 1 tot [128] (the first half's gate totals); phase 2 the
//                        kh = 1 partial sums of L, each where kh = 0 then writes L (the
//                        same thread's elements); then the diagonal blocks of (I+L)^-1
//   Xr   Xp [2560 B]     the kh = 1 partial sums of P (float4 per lane and unit; float2
//                        for the diagonal blocks' second units, whose rows 0..7 are above
//                        the diagonal); UA 0: then v (bf16 [32][LDB], copied during phase 3)
//   Qs, Ks bf16 [32][LDB]  q, k (Ks later k e^G fp16; Qs later A16, fp16 [32][72],
//                        A diag(b))
//   Ps   fp16 [32][32]   P's sw64 image (2 KB: K = 32 needs no 128-byte rows)
//   rq, rk, bs [32]
// Phases (barriers between):
//   0  g's rows straight into registers (the gate's thread mapping: 16 4-byte loads per
//      thread, a warp's covering 128 contiguous bytes per row), cp.async of k, q (rows
//      past the sequence zero-filled); zeros of Ps; beta
//   1  gate and its cumulative sum (thread = channel pair x 16-row half, halves joined
//      through tot); row norms (warp per 8 rows); G into Gc
//   2  P and L on tf32 mma: warp = (16-row block I, channel half kh), reference row 16I
//      for every unit of the row block (diagonal columns from the lane's own rows; the
//      I = 1 block's columns 0..15 have factors k_j e^{G_16 - G_j} <= 1); kh = 1 partial
//      sums through Xp (P) and LA (L); kh = 0 scales, masks and writes P (Ps) and L (LA);
//      then every warp: qg, kd (global images), Ks <- k e^G (fp16), e^{G_last}
//   3  UA 0: v copied into Xr (cp.async); (I+L)^-1: the two diagonal blocks by forward
//      substitution (warps 0, 1), then A10 = -A11 (L10 A00) on CUDA cores; A diag(b) as
//      fp16 into A16
//   4  w = A diag(b) (k e^G), u = A diag(b) v on fp16 mma (warp = 32 columns; v converted
//      bf16 -> fp16 in registers); w, u staged as images in Gc; P, w, u out by bulk copies
#define KC_INTRA_THREADS 128
#define KC_LDL32 36
// (Phase 0's row addresses from 32-bit offsets: -6.8 % of the intra kernel's instructions
// against the 64-bit code before, eighteenth session; the knob KC_I32 retired 2026-12-03.)
#define KC_U32PL 4  // unroll of the P/L k-loop (8 steps)
#define KC_U32QK 8  // unroll of the qg/kd row loop (8 rows per thread)
constexpr int kU32PL = KC_U32PL, kU32QK = KC_U32QK;
#define KC_XP32 2560  // the kh = 1 partial sums of P (bytes)
#define KC_XR32 (UA ? KC_XP32 : 32 * KC_LDB * 2)
static_assert(KC_XP32 <= 32 * KC_LDB * 2, "UA 0: Xp fits in v's tile");
#define KC_INTRA_SMEM (32 * KC_LDG * 4 + 32 * KC_LDL32 * 4 + KC_XR32 + 2 * 32 * KC_LDB * 2 + 32 * 32 * 2 + 3 * 32 * 4)
#define TESSERA_SMEM_kda_chunk_intra KC_INTRA_SMEM  // checked against spec.json by tests/core/templates_test
#define KC_INTRA_MINB (UA ? 5 : 4)  // blocks per SM the registers are allocated for (shared memory allows as many)
// The CH 32 intra kernel's parameters (its entry points' and its body's), and their names.
#define KC_INTRA32_PARAMS \
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, \
    const __nv_bfloat16* __restrict__ v, const __nv_bfloat16* __restrict__ g, \
    const __nv_bfloat16* __restrict__ beta, const float* __restrict__ A_log, \
    const float* __restrict__ dt_bias, const long long* __restrict__ cu, KC_T* __restrict__ qg, \
    KC_T* __restrict__ kd, KC_T* __restrict__ w, KC_T* __restrict__ u, KC_T* __restrict__ P, \
    float* __restrict__ gl, int* __restrict__ order, long long T, long long H, long long K, long long V, \
    long long NSEQ, float lower_bound
#define KC_INTRA32_ARGS q, k, v, g, beta, A_log, dt_bias, cu, qg, kd, w, u, P, gl, order, T, H, K, V, NSEQ, lower_bound
// The CH 32 intra kernel's body; kBeside: kda_chunk_intra_beside (PIPE), flags set per chunk.
template <bool kBeside>
__device__ __forceinline__ void kc_intra32(KC_INTRA32_PARAMS, int* flags, long long slot_off) {
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < KC_INTRA_SMEM) __trap();  // spec.json smem too small?
  extern __shared__ __align__(16) float sm[];
  float* Gc = sm;
  float* LA = Gc + 32 * KC_LDG;
  unsigned char* Xr = reinterpret_cast<unsigned char*>(LA + 32 * KC_LDL32);
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(Xr + KC_XR32);
  __nv_bfloat16* Ks = Qs + 32 * KC_LDB;
  [[maybe_unused]] __nv_bfloat16* Vs = reinterpret_cast<__nv_bfloat16*>(Xr);  // phases 3-4 (UA 0)
  __half* A16 = reinterpret_cast<__half*>(Qs);       // phases 3-4
  __half* Ps = reinterpret_cast<__half*>(Ks + 32 * KC_LDB);
  static_assert(32 * KC_LDA16 <= 32 * KC_LDB, "A16 fits in Qs");
  float* rq = reinterpret_cast<float*>(Ps + 32 * 32);
  float* rk = rq + 32;
  float* bs = rk + 32;
  float* tot = LA;  // phase 1 only
  // (beside: chunk-major, the order the state blocks consume chunks in)
  const long long slot = kBeside ? blockIdx.y + slot_off : blockIdx.x, h = kBeside ? blockIdx.x : blockIdx.y;
  if (slot == 0 && h == 0) kc_order(cu, NSEQ, T, order, reinterpret_cast<int*>(sm));
  long long n, c;
  if (!kc_slot(cu, NSEQ, slot, &n, &c)) return;
  const long long bos = cu[n] + c * KC_CH;
  const int len = (int)min((long long)KC_CH, cu[n + 1] - bos);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  KC_PROF_START;

  // ---- phase 0: g's rows of the gate's thread mapping (channel pair cpc, rows 16 qr + r)
  // into registers; then thread = 16-byte piece lc8 of rows lr + 8 it of k and q. (The
  // element offsets of the thread's four rows are shared by the two tensors; rows past
  // the sequence read nothing, from the chunk's first row.)
  const int cpc = 2 * (tid & 63), qr = tid >> 6;  // channel pair; 16-row half
  const long long rstride = H * KC_KD;
  tile::u32 graw[16];
  const int lr = tid >> 4, lc8 = (tid & 15) * 8;
  const long long rbase = (bos * H + h) * KC_KD + lc8;
  // (row offsets within the chunk in 32 bits: 32 rows of H x 128 elements; one 64-bit base
  // per tensor, so that each row's address is one wide multiply-add, not 64-bit arithmetic)
  {
    const unsigned rb = (unsigned)rstride * 2u;  // a row's bytes (H x 128 bf16)
    const char* const gp = reinterpret_cast<const char*>(g + (bos * H + h) * KC_KD + cpc) + (size_t)(16u * qr * rb);
#pragma unroll
    for (int r = 0; r < 16; ++r)
      graw[r] = 16 * qr + r < len ? __ldg(reinterpret_cast<const unsigned*>(gp + (size_t)(rb * (unsigned)r))) : 0u;
    const char* const kb = reinterpret_cast<const char*>(k + rbase);
    const char* const qb = reinterpret_cast<const char*>(q + rbase);
    const tile::u32 dk = tile::smem_addr(Ks) + (lr * KC_LDB + lc8) * 2, dq = tile::smem_addr(Qs) + (lr * KC_LDB + lc8) * 2;
#pragma unroll
    for (int it = 0; it < 4; ++it) {
      const bool in = lr + 8 * it < len;
      const size_t off = in ? (size_t)(rb * (unsigned)(lr + 8 * it)) : 0;
      tile::cp_async16(dk + it * 8 * KC_LDB * 2, kb + off, in ? 16u : 0u);
      tile::cp_async16(dq + it * 8 * KC_LDB * 2, qb + off, in ? 16u : 0u);
    }
    kda::cp_async_commit();
  }
  reinterpret_cast<uint4*>(Ps)[tid] = make_uint4(0u, 0u, 0u, 0u);  // (rows 0..15 x columns 16..31 stay 0)
  const float ga2 = expf(A_log[h]) * 1.4426950408889634f;
  const float lb2 = lower_bound * 1.4426950408889634f;
  if (tid < KC_CH) bs[tid] = tid < len ? 1.0f / (1.0f + expf(-kc_bf(beta, (bos + tid) * H + h))) : 0.f;
  KC_MARK(0);

  // ---- phase 1: gate, cumulative sum, norms. (No barrier before: the gate reads only
  // this thread's registers; Ps and bs are next touched after phase 1's barriers.)
  {
    float s0[16], s1[16];
    kc_gate_quarter(s0, s1, [&](int i) { return kda::bf16x2_bits_to_f32(graw[i - 16 * qr]); }, dt_bias, h, cpc, qr,
                    len, ga2, lb2);
    if (qr == 0) *reinterpret_cast<float2*>(tot + cpc) = make_float2(s0[15], s1[15]);
    kda::cp_async_wait_all();  // k, q (this thread's copies)
    __syncthreads();           // the first half's totals; k, q in place
    float off0 = 0.f, off1 = 0.f;
    if (qr == 1) {
      const float2 t = *reinterpret_cast<const float2*>(tot + cpc);
      off0 = t.x;
      off1 = t.y;
    }
#pragma unroll
    for (int r = 0; r < 16; ++r)
      *reinterpret_cast<float2*>(Gc + (16 * qr + r) * KC_LDG + cpc) = make_float2(s0[r] + off0, s1[r] + off1);
  }
  {
    float ss[16];  // squared norms of rows warp*8 + m: q in ss[m], k in ss[8 + m] (lane's 4 channels)
#pragma unroll
    for (int rr = 0; rr < 8; ++rr) {
      const int i = warp * 8 + rr;
      float qv[4], kv[4];
      kda::bf16x4_to_f32(Qs + i * KC_LDB + lane * 4, qv);
      kda::bf16x4_to_f32(Ks + i * KC_LDB + lane * 4, kv);
      ss[rr] = qv[0] * qv[0] + qv[1] * qv[1] + qv[2] * qv[2] + qv[3] * qv[3];
      ss[8 + rr] = kv[0] * kv[0] + kv[1] * kv[1] + kv[2] * kv[2] + kv[3] * kv[3];
    }
    const float tot2 = kda::warp_sum16(ss);  // value (lane >> 1) & 15
    const int m = (lane >> 1) & 15, i = warp * 8 + (m & 7);
    if ((lane & 1) == 0) (m < 8 ? rq : rk)[i] = i < len ? rsqrtf(tot2 + 1e-6f) : 0.f;
  }
  __syncthreads();
  KC_MARK(1);

  // ---- phase 2: P and L. Units: accX[0], accX[1] the diagonal block's column halves
  // (columns 16I + 8s + g: the lane's own rows i0, i1), accX[2], accX[3] (I = 1) the
  // columns 8s + g of row block 0. Lane t takes the channel pair c, c+1 (c = 8 st + 2t) as
  // k = t, t+4 of the m16n8k8 step.
  {
    const int I = warp >> 1, kh = warp & 1;
    const int r = 16 * I, i0 = r + gq, i1 = i0 + 8;
    kda::frag_c accP[4], accL[4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      kda::zero(accP[s]);
      kda::zero(accL[s]);
    }
#pragma unroll kU32PL
    for (int st = 0; st < 8; ++st) {
      const int c = 64 * kh + 8 * st + 2 * tq;
      const float2 gr = *reinterpret_cast<const float2*>(Gc + r * KC_LDG + c);
      const float2 g0 = *reinterpret_cast<const float2*>(Gc + i0 * KC_LDG + c);
      const float2 g1 = *reinterpret_cast<const float2*>(Gc + i1 * KC_LDG + c);
      const float d00 = g0.x - gr.x, d01 = g0.y - gr.y, d10 = g1.x - gr.x, d11 = g1.y - gr.y;
      const float e00 = kda::ex2(d00), e01 = kda::ex2(d01), e10 = kda::ex2(d10), e11 = kda::ex2(d11);
      const float2 q0 = kda::bf16x2_to_f32(Qs + i0 * KC_LDB + c), q1 = kda::bf16x2_to_f32(Qs + i1 * KC_LDB + c);
      const float2 k0 = kda::bf16x2_to_f32(Ks + i0 * KC_LDB + c), k1 = kda::bf16x2_to_f32(Ks + i1 * KC_LDB + c);
      kda::frag_a aq, ak;
      aq.x[0] = KC_TF(q0.x * e00);
      aq.x[1] = KC_TF(q1.x * e10);
      aq.x[2] = KC_TF(q0.y * e01);
      aq.x[3] = KC_TF(q1.y * e11);
      ak.x[0] = KC_TF(k0.x * e00);
      ak.x[1] = KC_TF(k1.x * e10);
      ak.x[2] = KC_TF(k0.y * e01);
      ak.x[3] = KC_TF(k1.y * e11);
      kda::frag_b b0, b1;
      b0.x[0] = KC_TF(k0.x * kda::ex2(-d00));
      b0.x[1] = KC_TF(k0.y * kda::ex2(-d01));
      b1.x[0] = KC_TF(k1.x * kda::ex2(-d10));
      b1.x[1] = KC_TF(k1.y * kda::ex2(-d11));
      kda::mma(accP[0], aq, b0);
      kda::mma(accL[0], ak, b0);
      kda::mma(accP[1], aq, b1);
      kda::mma(accL[1], ak, b1);
      if (I == 1) {
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const int j = 8 * s + gq;
          const float2 gj = *reinterpret_cast<const float2*>(Gc + j * KC_LDG + c);
          const float2 kj = kda::bf16x2_to_f32(Ks + j * KC_LDB + c);
          kda::frag_b b;
          b.x[0] = KC_TF(kj.x * kda::ex2(gr.x - gj.x));
          b.x[1] = KC_TF(kj.y * kda::ex2(gr.y - gj.y));
          kda::mma(accP[2 + s], aq, b);
          kda::mma(accL[2 + s], ak, b);
        }
      }
    }
    // P's partial sums (bytes): I = 0 unit 0 at 0 (float4 per lane), unit 1 at 512 (float2:
    // its rows 0..7, x[0] and x[1], lie above the diagonal); I = 1 units 0, 1, 2, 3 at 768,
    // 1280 (float2), 1536, 2048. L's go to LA where kh = 0 then writes L.
    unsigned char* const Xw = Xr + (I == 0 ? 0 : 768);
    const auto xoff = [lane](int s) { return s == 0 ? 16 * lane : s == 1 ? 512 + 8 * lane : 512 * s - 256 + 16 * lane; };
    if (kh == 1) {
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        if (s < 2 || I == 1) {
          const int j = (s < 2 ? r + 8 * s : 8 * (s - 2)) + 2 * tq;
          if (s == 1)
            *reinterpret_cast<float2*>(Xw + xoff(1)) = make_float2(accP[s].x[2], accP[s].x[3]);
          else
            *reinterpret_cast<float4*>(Xw + xoff(s)) = make_float4(accP[s].x[0], accP[s].x[1], accP[s].x[2], accP[s].x[3]);
          if (s != 1) *reinterpret_cast<float2*>(LA + i0 * KC_LDL32 + j) = make_float2(accL[s].x[0], accL[s].x[1]);
          *reinterpret_cast<float2*>(LA + i1 * KC_LDL32 + j) = make_float2(accL[s].x[2], accL[s].x[3]);
        }
      }
    }
    __syncthreads();  // the kh = 1 partial sums are in Xp and LA; every read of Ks by the products is done
    if (kh == 0) {
      const float q0 = rq[i0], q1 = rq[i1], b0 = bs[i0] * rk[i0], b1 = bs[i1] * rk[i1];
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        if (s < 2 || I == 1) {
          const int j = (s < 2 ? r + 8 * s : 8 * (s - 2)) + 2 * tq;
          float4 xp, xl;
          if (s == 1) {  // (rows 0..7 of the diagonal block's second unit are above the diagonal: masked below)
            const float2 t = *reinterpret_cast<const float2*>(Xw + xoff(1));
            xp = make_float4(0.f, 0.f, t.x, t.y);
          } else {
            xp = *reinterpret_cast<const float4*>(Xw + xoff(s));
          }
          {
            const float2 l0 = s == 1 ? make_float2(0.f, 0.f) : *reinterpret_cast<const float2*>(LA + i0 * KC_LDL32 + j);
            const float2 l1 = *reinterpret_cast<const float2*>(LA + i1 * KC_LDL32 + j);
            xl = make_float4(l0.x, l0.y, l1.x, l1.y);
          }
          const float2 kj = *reinterpret_cast<const float2*>(rk + j);
          const float p00 = (accP[s].x[0] + xp.x) * (q0 * kj.x), p01 = (accP[s].x[1] + xp.y) * (q0 * kj.y);
          const float p10 = (accP[s].x[2] + xp.z) * (q1 * kj.x), p11 = (accP[s].x[3] + xp.w) * (q1 * kj.y);
          const float l00 = (accL[s].x[0] + xl.x) * kj.x, l01 = (accL[s].x[1] + xl.y) * kj.y;
          const float l10 = (accL[s].x[2] + xl.z) * kj.x, l11 = (accL[s].x[3] + xl.w) * kj.y;
          *reinterpret_cast<tile::u32*>(Ps + kc_pidx(i0, j)) =
              kda::pack_f16x2(j <= i0 ? p00 : 0.f, j + 1 <= i0 ? p01 : 0.f);
          *reinterpret_cast<tile::u32*>(Ps + kc_pidx(i1, j)) =
              kda::pack_f16x2(j <= i1 ? p10 : 0.f, j + 1 <= i1 ? p11 : 0.f);
          *reinterpret_cast<float2*>(LA + i0 * KC_LDL32 + j) =
              make_float2(j < i0 ? b0 * l00 : 0.f, j + 1 < i0 ? b0 * l01 : 0.f);
          *reinterpret_cast<float2*>(LA + i1 * KC_LDL32 + j) =
              make_float2(j < i1 ? b1 * l10 : 0.f, j + 1 < i1 ? b1 * l11 : 0.f);
        }
      }
    }
  }
  KC_MARK(5);
  // qg = q e^G, kd = k e^{G_last - G} (normalized) as their images; Ks <- k e^G (fp16, in
  // place); e^{G_last}. Thread = channels 4 lane .. 4 lane + 3 of rows warp + 4 it: 8-byte
  // loads and stores, a warp's store covering a whole image row (by channel pairs instead:
  // intra +2 %). Rows past the sequence hold q = k = 0 and a finite G: zeros.
  // RC 1: none of these; the row norms 1/|q| (gl[0..31]) and 1/|k| (gl[32..63]) instead.
#if RC == 1
  if (tid < 64) gl[(slot * H + h) * KC_KD + tid] = tid < 32 ? rq[tid] : rk[tid - 32];
  (void)qg;
  (void)kd;
  (void)kU32QK;
#else
  {
    const int c4 = 4 * lane;
    const float4 GL = *reinterpret_cast<const float4*>(Gc + (len - 1) * KC_LDG + c4);
    const long long gb = (slot * H + h) * (KC_CH * KC_KD);
    // (row i = warp + 4 it has swizzle i % 8, which alternates with it: the image offset is
    // that of row warp or warp + 4 plus (it / 2) 1024 bytes, an immediate of the store)
    const int io0 = (int)(kda::sw128_off<KC_CH>(warp, c4) >> 1), io1 = (int)(kda::sw128_off<KC_CH>(warp + 4, c4) >> 1);
    KC_T* const qg0 = qg + gb;
    KC_T* const kd0 = kd + gb;
#pragma unroll kU32QK
    for (int it = 0; it < 8; ++it) {
      const int i = warp + 4 * it;
      const float4 G = *reinterpret_cast<const float4*>(Gc + i * KC_LDG + c4);
      float qv[4], kv[4];
      kda::bf16x4_to_f32(Qs + i * KC_LDB + c4, qv);
      kda::bf16x4_to_f32(Ks + i * KC_LDB + c4, kv);
      const float a = rq[i], b = rk[i];
      const float e0 = kda::ex2(G.x), e1 = kda::ex2(G.y), e2 = kda::ex2(G.z), e3 = kda::ex2(G.w);
      const float k0 = kv[0] * b, k1 = kv[1] * b, k2 = kv[2] * b, k3 = kv[3] * b;
      const int gi = ((it & 1) ? io1 : io0) + (it >> 1) * 512;
      *reinterpret_cast<uint2*>(qg0 + gi) = make_uint2(kda::pack_f16x2(qv[0] * a * e0, qv[1] * a * e1),
                                                       kda::pack_f16x2(qv[2] * a * e2, qv[3] * a * e3));
      *reinterpret_cast<uint2*>(kd0 + gi) =
          make_uint2(kda::pack_f16x2(k0 * kda::ex2(GL.x - G.x), k1 * kda::ex2(GL.y - G.y)),
                     kda::pack_f16x2(k2 * kda::ex2(GL.z - G.z), k3 * kda::ex2(GL.w - G.w)));
      *reinterpret_cast<uint2*>(Ks + i * KC_LDB + c4) =
          make_uint2(kda::pack_f16x2(k0 * e0, k1 * e1), kda::pack_f16x2(k2 * e2, k3 * e3));
    }
    if (tid < 32) {
      const float4 g2 = *reinterpret_cast<const float4*>(Gc + (len - 1) * KC_LDG + tid * 4);
      *reinterpret_cast<float4*>(gl + (slot * H + h) * KC_KD + tid * 4) =
          make_float4(kda::ex2(g2.x), kda::ex2(g2.y), kda::ex2(g2.z), kda::ex2(g2.w));
    }
  }
#endif
  __syncthreads();  // (the partial sums in Xp and LA and q in Qs are consumed)
  KC_MARK(2);

  // ---- phase 3: UA 0: v into Xr (in flight during the inverse); A = (I+L)^-1 diag(b) into A16.
#if UA
  (void)v;
  (void)Vs;
#else
#pragma unroll
  for (int it = 0; it < 4; ++it) {
    const int i = lr + 8 * it;
    tile::cp_async16(tile::smem_addr(Vs) + ((i * KC_LDB + lc8) * 2), v + rbase + (i < len ? i * rstride : 0),
                     i < len ? 16u : 0u);
  }
  kda::cp_async_commit();
#endif
  if (warp < 2) kc_inv16<KC_LDL32>(LA + 16 * warp * (KC_LDL32 + 1), A16 + 16 * warp * (KC_LDA16 + 1), bs + 16 * warp);
  __syncthreads();
  {  // A10 = -A11 (L10 A00); thread = row a, columns b, b + 1
    const int a = tid >> 3, b = (tid & 7) * 2;
    float* X = Gc;  // [16][16] (G is consumed)
    float acc[2] = {0.f, 0.f};
    kda::mm_strip<16, 2>(acc, LA + (16 + a) * KC_LDL32, LA + b, KC_LDL32);
    *reinterpret_cast<float2*>(X + a * 16 + b) = make_float2(acc[0], acc[1]);
    __syncthreads();
    float acc2[2] = {0.f, 0.f};
    kda::mm_strip<16, 2>(acc2, LA + (16 + a) * KC_LDL32 + 16, X + b, 16);
    const float2 bb = *reinterpret_cast<const float2*>(bs + b);
    *reinterpret_cast<tile::u32*>(A16 + (16 + a) * KC_LDA16 + b) = kda::pack_f16x2(-acc2[0] * bb.x, -acc2[1] * bb.y);
  }
  kda::cp_async_wait_all();  // v (this thread's copies)
  __syncthreads();
  KC_MARK(3);

  // ---- phase 4: w = A16 (k e^G), u = A16 v; warp = columns 32 warp .. +31 (RC 1: neither).
  {
    __half* Ws = reinterpret_cast<__half*>(Gc);
    __half* Us = Ws + KC_CH * KC_KD;
#if RC != 1
    kda::frag_c accW[2][4], accU[2][4];
#pragma unroll
    for (int I = 0; I < 2; ++I)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        kda::zero(accW[I][nt]);
        kda::zero(accU[I][nt]);
      }
    const tile::u32 lb = tile::smem_addr(Ks) + ((lane & 15) * KC_LDB + 32 * warp + (lane >> 4) * 8) * 2;
    const tile::u32 vb = tile::smem_addr(Vs) + ((lane & 15) * KC_LDB + 32 * warp + (lane >> 4) * 8) * 2;
    const tile::u32 a16l = tile::smem_addr(A16) + ((lane & 7) + 8 * ((lane >> 3) & 1)) * KC_LDA16 * 2 + (lane >> 4) * 16;
    (void)vb;
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      tile::u32 bk[2][4], bv[2][4];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        kda::ldsm_x4_t(bk[hh], lb + (ks * 16 * KC_LDB + 16 * hh) * 2);
        if (UA) continue;
        kda::ldsm_x4_t(bv[hh], vb + (ks * 16 * KC_LDB + 16 * hh) * 2);
#pragma unroll
        for (int e = 0; e < 4; ++e) {  // bf16 pairs -> fp16 pairs (exact: v in fp16 range)
          const float2 f = kda::bf16x2_bits_to_f32(bv[hh][e]);
          bv[hh][e] = kda::pack_f16x2(f.x, f.y);
        }
      }
#pragma unroll
      for (int I = 0; I < 2; ++I) {
        if (I >= ks) {
          tile::u32 a[4];
          kda::ldsm_x4(a, a16l + (16 * I * KC_LDA16 + 16 * ks) * 2);
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            kda::mma_f16(accW[I][2 * hh], a, bk[hh][0], bk[hh][1]);
            kda::mma_f16(accW[I][2 * hh + 1], a, bk[hh][2], bk[hh][3]);
            if (UA) continue;
            kda::mma_f16(accU[I][2 * hh], a, bv[hh][0], bv[hh][1]);
            kda::mma_f16(accU[I][2 * hh + 1], a, bv[hh][2], bv[hh][3]);
          }
        }
      }
    }
#pragma unroll
    for (int I = 0; I < 2; ++I) {
      const int i0 = 16 * I + gq, i1 = i0 + 8;
      const bool z0 = i0 >= len, z1 = i1 >= len;
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int e = 32 * warp + 8 * nt + 2 * tq;
        const int x0 = (int)(kda::sw128_off<KC_CH>(i0, e) >> 1), x1 = (int)(kda::sw128_off<KC_CH>(i1, e) >> 1);
        *reinterpret_cast<tile::u32*>(Ws + x0) = z0 ? 0u : kda::pack_f16x2(accW[I][nt].x[0], accW[I][nt].x[1]);
        *reinterpret_cast<tile::u32*>(Ws + x1) = z1 ? 0u : kda::pack_f16x2(accW[I][nt].x[2], accW[I][nt].x[3]);
        if (UA) continue;
        *reinterpret_cast<tile::u32*>(Us + x0) = z0 ? 0u : kda::pack_f16x2(accU[I][nt].x[0], accU[I][nt].x[1]);
        *reinterpret_cast<tile::u32*>(Us + x1) = z1 ? 0u : kda::pack_f16x2(accU[I][nt].x[2], accU[I][nt].x[3]);
      }
    }
#endif  // RC != 1
#if UA
    {  // -A diag(b) as the sw64 image [32 i][32 j] in u's place: thread = row tid / 4, 16-byte
       // piece tid % 4; zeros above the diagonal blocks (A16 holds no values there) and past len
      const int i = tid >> 2, c8 = 8 * (tid & 3);
      uint4 x = make_uint4(0u, 0u, 0u, 0u);
      if (i < len && (c8 >> 4) <= (i >> 4)) {
        x = *reinterpret_cast<const uint4*>(A16 + i * KC_LDA16 + c8);
        x.x ^= 0x80008000u;
        x.y ^= 0x80008000u;
        x.z ^= 0x80008000u;
        x.w ^= 0x80008000u;
      }
      *reinterpret_cast<uint4*>(Us + (kda::sw_off<64>(i, c8) >> 1)) = x;
    }
#endif
    kda::fence_async_shared();  // (also the P image written in phase 2)
    __syncthreads();
    if (tid == 0) {
      const long long base = (slot * H + h) * (KC_CH * KC_KD);
      if (RC != 1) tile::bulk_s2g(w + base, tile::smem_addr(Ws), KC_CH * KC_KD * 2);  // (RC 1: the state kernel forms w)
      if (UA) tile::bulk_s2g(u + (slot * H + h) * (KC_CH * KC_CH), tile::smem_addr(Us), KC_CH * KC_CH * 2);
      else tile::bulk_s2g(u + base, tile::smem_addr(Us), KC_CH * KC_KD * 2);
      tile::bulk_s2g(P + (slot * H + h) * (KC_CH * KC_CH), tile::smem_addr(Ps), KC_CH * KC_CH * 2);
      tile::bulk_commit();
      if (kBeside) {  // publish the chunk: its copies' writes complete, then the flag (release)
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
        asm volatile("fence.proxy.async.global;\n" ::: "memory");
        __threadfence();
        asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(flags + slot * H + h), "r"(1) : "memory");
      } else {
        tile::bulk_wait_read<0>();  // the block's shared memory must outlive the copies' reads
      }
    }
  }
  KC_MARK(4);
}
extern "C" __global__ void __launch_bounds__(KC_INTRA_THREADS, KC_INTRA_MINB) kda_chunk_intra(KC_INTRA32_PARAMS) {
  kc_intra32<false>(KC_INTRA32_ARGS, nullptr, 0);
}
#if PIPE
#define TESSERA_SMEM_kda_chunk_intra_beside KC_INTRA_SMEM  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(KC_INTRA_THREADS, KC_INTRA_MINB) kda_chunk_intra_beside(KC_INTRA32_PARAMS, int* flags) {
  // (the last gridDim.y chunk slots: all of them, or those after kda_chunk_intra_lead's)
  kc_intra32<true>(KC_INTRA32_ARGS, flags, NSEQ + T / KC_CH - gridDim.y);
}
// PIPE with LEAD > 0: the intra kernel's head start, its first gridDim.y chunk slots alone,
// before the state kernel is forked beside the rest (kda_chunk_intra_beside). Flags as there.
#define TESSERA_SMEM_kda_chunk_intra_lead KC_INTRA_SMEM  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(KC_INTRA_THREADS, KC_INTRA_MINB) kda_chunk_intra_lead(KC_INTRA32_PARAMS, int* flags) {
  kc_intra32<true>(KC_INTRA32_ARGS, flags, 0);
}
#endif
#endif  // KC_CH
#if PIPE
// PIPE: clears the intra kernel's flags, one per (chunk slot, head) (grid cdiv(n, 256) x 256)
extern "C" __global__ void kda_chunk_flags(int* flags, long long T, long long H, long long NSEQ) {
  const long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < (NSEQ + T / KC_CH) * H) flags[i] = 0;
}
#endif
#if PREC < 2
// Issues cp.async copies of rows [bos, bos+len) of a [T,H,128] fp32 tensor into
// X[CH][LDK]; rows past len are zero-filled with plain stores.
__device__ __forceinline__ void kc_async_rows(float* X, const float* __restrict__ src, long long bos,
                                              int len, long long H, long long h) {
  for (int idx = threadIdx.x; idx < KC_CH * 32; idx += SW * 32) {
    const int i = idx >> 5, c4 = idx & 31;
    float* dst = X + i * KC_LDK + c4 * 4;
    if (i < len) kda::cp_async16(dst, src + ((bos + i) * H + h) * KC_KD + c4 * 4);
    else *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// Issues cp.async copies of a [CH][4*NC] fp32 tile (row i at src + i*row_stride) into
// X (row stride ldx); rows past len are zero-filled with plain stores.
template <int NC>
__device__ __forceinline__ void kc_async_tile(float* X, int ldx, const float* __restrict__ src,
                                              long long row_stride, int len) {
  for (int idx = threadIdx.x; idx < KC_CH * NC; idx += SW * 32) {
    const int i = idx / NC, c4 = idx % NC;
    float* dst = X + i * ldx + c4 * 4;
    if (i < len) kda::cp_async16(dst, src + i * row_stride + c4 * 4);
    else *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// grid (NSEQ*H, 1, 128/BV) (kc_item: longest sequences first), block SW*32, smem KC_STATE_SMEM bytes.
// Two operand buffers rotate so that each phase's copy overlaps the previous
// phase's products:  A: v' = u - [w] S   (loading qg, G_last)
//                    B: o = [qg] S + P v' (loading kd)
//                    C: S = e^G S + [kd]^T v' (loading the next chunk's w).
// P and u are copied (cp.async) a chunk ahead, during phase C, into their own buffers.
#define KC_STATE_SMEM \
  (4 * (KC_KD * KC_LDS + 2 * KC_CH * KC_LDS + 2 * KC_CH * KC_LDK + KC_CH * KC_LDL + KC_KD))
#define TESSERA_SMEM_kda_chunk_state KC_STATE_SMEM  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(SW * 32) kda_chunk_state(
    const float* __restrict__ h0, const long long* __restrict__ cu, const float* __restrict__ qg,
    const float* __restrict__ kd, const float* __restrict__ w, const float* __restrict__ u,
    const float* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale) {
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < KC_STATE_SMEM) __trap();  // spec.json smem too small?
  (void)T;
  (void)NSEQ;
  extern __shared__ __align__(16) float sm[];
  float* S = sm;                       // [KD][LDS]
  float* Vn = S + KC_KD * KC_LDS;      // [CH][LDS]  v' = u - w S
  float* XA = Vn + KC_CH * KC_LDS;     // [CH][LDK]  operand buffers (rotating)
  float* XB = XA + KC_CH * KC_LDK;     // [CH][LDK]
  float* glc = XB + KC_CH * KC_LDK;    // [KD]
  float* Ps = glc + KC_KD;             // [CH][LDL]  P of the chunk
  float* Us = Ps + KC_CH * KC_LDL;     // [CH][LDS]  u of the chunk (this block's columns)
  int n32, h32;
  kc_item(order, H, &n32, &h32);
  const long long n = n32, h = h32;
  const int v0 = blockIdx.z * BV;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  constexpr int WN = SW / 4;              // column groups in the [64 x BV] products
  constexpr int NTW = BV / 8 / WN;        // n-tiles per warp there
  constexpr int MTS = 8 / SW;             // m-tiles (16 rows of d) per warp in the S update
  const int wm = warp & 3, wn = warp >> 2;
  const int i0 = 16 * wm + gq, i1 = i0 + 8;
  KC_PROF_START;

  for (int idx = tid; idx < KC_KD * BV; idx += SW * 32) {
    const int e = idx / KC_KD, d = idx % KC_KD;
    S[d * KC_LDS + e] = h0[((n * H + h) * KC_KD + v0 + e) * KC_KD + d];
  }
  const long long bos0 = cu[n], eos = cu[n + 1], slot0 = n + bos0 / KC_CH;
  if (bos0 < eos) {
    const int len0 = (int)min((long long)KC_CH, eos - bos0);
    kc_async_rows(XA, w, bos0, len0, H, h);
    kc_async_tile<KC_CH / 4>(Ps, KC_LDL, P + (slot0 * H + h) * KC_CH * KC_CH, KC_CH, len0);
    kc_async_tile<BV / 4>(Us, KC_LDS, u + (bos0 * H + h) * KC_KD + v0, H * KC_KD, len0);
    kda::cp_async_commit();
    kda::cp_async_wait_all();
  }
  __syncthreads();
  for (long long c = 0; bos0 + c * KC_CH < eos; ++c) {
    const long long bos = bos0 + c * KC_CH, slot = slot0 + c;
    const int len = (int)min((long long)KC_CH, eos - bos);
    kc_async_rows(XB, qg, bos, len, H, h);
    if (tid < 32) kda::cp_async16(glc + tid * 4, gl + (slot * H + h) * KC_KD + tid * 4);
    kda::cp_async_commit();
    KC_MARK(14);
    // A: v' = u - w S
    {
      kda::frag_c acc[NTW];
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[nt]);
      kda::mma_strip_rm_km<KC_KD, NTW, 4, KC_RND>(acc, XA, KC_LDK, 16 * wm, S, KC_LDS, wn * NTW * 8);
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) {
        const int e = (wn * NTW + nt) * 8 + 2 * tq;
        float2 r0 = make_float2(0.f, 0.f), r1 = make_float2(0.f, 0.f);
        const float2 u0 = *reinterpret_cast<const float2*>(Us + i0 * KC_LDS + e);
        const float2 u1 = *reinterpret_cast<const float2*>(Us + i1 * KC_LDS + e);
        if (i0 < len) r0 = make_float2(KC_OUT(u0.x - acc[nt].x[0]), KC_OUT(u0.y - acc[nt].x[1]));
        if (i1 < len) r1 = make_float2(KC_OUT(u1.x - acc[nt].x[2]), KC_OUT(u1.y - acc[nt].x[3]));
        *reinterpret_cast<float2*>(Vn + i0 * KC_LDS + e) = r0;
        *reinterpret_cast<float2*>(Vn + i1 * KC_LDS + e) = r1;
      }
    }
    KC_MARK(8);
    kda::cp_async_wait_all();
    __syncthreads();
    KC_MARK(9);
    kc_async_rows(XA, kd, bos, len, H, h);
    kda::cp_async_commit();
    // B: o = scale (qg S + P v')
    {
      kda::frag_c acc[NTW];
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[nt]);
      kda::mma_strip_rm_km<KC_KD, NTW, 4, KC_RND>(acc, XB, KC_LDK, 16 * wm, S, KC_LDS, wn * NTW * 8);
      kda::mma_strip_rm_km<KC_CH, NTW, KC_CH / 8, KC_RND>(acc, Ps, KC_LDL, 16 * wm, Vn, KC_LDS, wn * NTW * 8);
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) {
        const int e = v0 + (wn * NTW + nt) * 8 + 2 * tq;
        if (i0 < len)
          *reinterpret_cast<__nv_bfloat162*>(o + ((bos + i0) * H + h) * KC_KD + e) =
              __floats2bfloat162_rn(scale * acc[nt].x[0], scale * acc[nt].x[1]);
        if (i1 < len)
          *reinterpret_cast<__nv_bfloat162*>(o + ((bos + i1) * H + h) * KC_KD + e) =
              __floats2bfloat162_rn(scale * acc[nt].x[2], scale * acc[nt].x[3]);
      }
    }
    KC_MARK(10);
    kda::cp_async_wait_all();
    __syncthreads();
    KC_MARK(11);
    if (bos + KC_CH < eos) {
      const int len1 = (int)min((long long)KC_CH, eos - bos - KC_CH);
      kc_async_rows(XB, w, bos + KC_CH, len1, H, h);
      // P and u of chunk c+1 (P and u of chunk c were last read in phases A and B)
      kc_async_tile<KC_CH / 4>(Ps, KC_LDL, P + ((slot + 1) * H + h) * KC_CH * KC_CH, KC_CH, len1);
      kc_async_tile<BV / 4>(Us, KC_LDS, u + ((bos + KC_CH) * H + h) * KC_KD + v0, H * KC_KD, len1);
      kda::cp_async_commit();
    }
    // C: S <- e^{G_last} S + kd^T v'   (each warp owns rows of S; all reads of S
    // by the products above finished before the barrier)
    {
      kda::frag_c acc[MTS][BV / 8];
#pragma unroll
      for (int mt = 0; mt < MTS; ++mt) {
        const int d0 = (warp * MTS + mt) * 16 + gq, d1 = d0 + 8;
        const float f0 = __expf(glc[d0]), f1 = __expf(glc[d1]);
#pragma unroll
        for (int nt = 0; nt < BV / 8; ++nt) {
          const int e = nt * 8 + 2 * tq;
          acc[mt][nt].x[0] = f0 * S[d0 * KC_LDS + e];
          acc[mt][nt].x[1] = f0 * S[d0 * KC_LDS + e + 1];
          acc[mt][nt].x[2] = f1 * S[d1 * KC_LDS + e];
          acc[mt][nt].x[3] = f1 * S[d1 * KC_LDS + e + 1];
        }
      }
#pragma unroll 2
      for (int ks = 0; ks < KC_CH / 8; ++ks) {
#pragma unroll
        for (int mt = 0; mt < MTS; ++mt) {
          kda::frag_a a;
          kda::load_a_cm<KC_RND>(a, XA, KC_LDK, (warp * MTS + mt) * 16, ks * 8);
#pragma unroll
          for (int nt = 0; nt < BV / 8; ++nt) {
            kda::frag_b b;
            kda::load_b_km<KC_RND>(b, Vn, KC_LDS, ks * 8, nt * 8);
            kda::mma(acc[mt][nt], a, b);
          }
        }
      }
#pragma unroll
      for (int mt = 0; mt < MTS; ++mt) {
        const int d0 = (warp * MTS + mt) * 16 + gq, d1 = d0 + 8;
#pragma unroll
        for (int nt = 0; nt < BV / 8; ++nt) {
          const int e = nt * 8 + 2 * tq;
          *reinterpret_cast<float2*>(S + d0 * KC_LDS + e) = make_float2(acc[mt][nt].x[0], acc[mt][nt].x[1]);
          *reinterpret_cast<float2*>(S + d1 * KC_LDS + e) = make_float2(acc[mt][nt].x[2], acc[mt][nt].x[3]);
        }
      }
    }
    KC_MARK(12);
    kda::cp_async_wait_all();
    __syncthreads();
    KC_MARK(13);
    float* tmp = XA;  // the next chunk's w is in XB
    XA = XB;
    XB = tmp;
  }
  for (int idx = tid; idx < KC_KD * BV; idx += SW * 32) {
    const int e = idx / KC_KD, d = idx % KC_KD;
    ht[((n * H + h) * KC_KD + v0 + e) * KC_KD + d] = S[d * KC_LDS + e];
  }
}
#elif GM == 0  // PREC == 2: the fp16 state kernel

// Shared memory of the fp16 state kernel (bytes; every fp16 tile swizzled, see
// tile/kda_f16.cuh):  Sh f16 [KD][BV] (the state's fp16 copy, the operand of A),
// Vh f16 [CH][BV] (v'), then the chunk operands: a "big" part W, Q, Kd f16 [CH][KD]
// (w, qg, kd) and a "small" part Pm f16 [CH][CH], U f16 [CH][BV] (this block's columns
// of u), G f32 [KD] (G_last).
//   STG 0: two whole buffers (big + small), the next chunk's copied during this one's
//          products (one block per SM for BV >= 64).
//   STG 1: one big part, refilled as it is consumed (Kd at the top of the chunk, for
//          phase C; W and Q once phase A is done, for the next chunk), and two small
//          parts: 107,520 bytes for BV 64, so two blocks share an SM.
#ifndef STG
#define STG 0
#endif
static_assert(STG == 0 || (STG == 1 && PREC == 2), "STG 1 is a layout of the PREC 2 state kernel");
#define KC_STATE_THREADS (SW * 32)
#define KC_RBS (2 * BV)  // bytes per row of Sh, Vh, U
#define KC_BIG (3 * KC_CH * 2 * KC_KD)
#define KC_SMALL (KC_CH * 2 * KC_CH + KC_CH * KC_RBS + 4 * KC_KD)
#define KC_BUF (KC_BIG + KC_SMALL)
#define KC_STATE_SMEM ((KC_KD + KC_CH) * KC_RBS + (STG == 0 ? 2 * KC_BUF : KC_BIG + 2 * KC_SMALL))
#define TESSERA_SMEM_kda_chunk_state KC_STATE_SMEM  // checked against spec.json by tests/core/templates_test
#define KC_OFF_Q (KC_CH * 2 * KC_KD)
#define KC_OFF_KD (2 * KC_OFF_Q)
#define KC_OFF_U (KC_CH * 2 * KC_CH)  // in the small part
#define KC_OFF_G (KC_OFF_U + KC_CH * KC_RBS)
#define KC_WQ 1     // kc_issue_f16 parts: W and Q,
#define KC_KDP 2    //   Kd,
#define KC_SMP 4    //   P, U and G_last
#define KC_ALL 7

// Issues the cp.async copies of the chosen parts of one chunk's operands: W, Q, Kd into
// the big part at shared address big, P, U, G_last into the small part at small; rows
// past len are zero-filled (cp.async with 0 source bytes).
__device__ __forceinline__ void kc_issue_f16(tile::u32 big, tile::u32 small, int parts,
                                             const __half* __restrict__ qg, const __half* __restrict__ kd,
                                             const __half* __restrict__ w, const __half* __restrict__ u,
                                             const __half* __restrict__ P, const float* __restrict__ gl,
                                             long long bos, int len, long long slot, long long H, long long h,
                                             int v0) {
  // Thread tid copies the 16-byte chunks tid % CPR of rows tid / CPR + k * (SW*32 / CPR)
  // (CPR chunks per row); rows at or past len copy 0 bytes from row 0 (a valid address).
  const int tid = threadIdx.x;
  const long long rs = H * KC_KD, o0 = (bos * H + h) * KC_KD;
  if (parts & (KC_WQ | KC_KDP)) {  // W, Q, Kd: 16 chunks per row
    const int r0 = tid >> 4, ch = tid & 15;
    const tile::u32 d0 = big + kda::sw_off<2 * KC_KD>(r0, ch * 8);
    const long long s0 = o0 + r0 * rs + ch * 8;
#pragma unroll
    for (int t = 0; t < 3; ++t) {
      if (!(parts & (t < 2 ? KC_WQ : KC_KDP))) continue;
      const __half* base = (t == 0 ? w : t == 1 ? qg : kd);
#pragma unroll
      for (int k = 0; k < KC_CH * 16 / (SW * 32); ++k) {
        const int i = r0 + k * (SW * 2);
        tile::cp_async16(d0 + t * KC_OFF_Q + k * (SW * 2) * 2 * KC_KD, i < len ? base + s0 + k * (SW * 2) * rs : base + o0,
                         i < len ? 16u : 0u);
      }
    }
  }
  if (!(parts & KC_SMP)) return;
  {  // P: 8 chunks per row
    const int r0 = tid >> 3, ch = tid & 7;
    const __half* Pc = P + (slot * H + h) * KC_CH * KC_CH;
    const tile::u32 d0 = small + kda::sw_off<2 * KC_CH>(r0, ch * 8);
#pragma unroll
    for (int k = 0; k < KC_CH * 8 / (SW * 32); ++k) {
      const int i = r0 + k * (SW * 4);
      tile::cp_async16(d0 + k * (SW * 4) * 2 * KC_CH, Pc + (i < len ? i * KC_CH + ch * 8 : 0), i < len ? 16u : 0u);
    }
  }
  {  // U: BV/8 chunks per row
    constexpr int CPR = BV / 8, RPI = SW * 32 / CPR;  // chunks per row, rows per iteration
    const int r0 = tid / CPR, ch = tid % CPR;
    const tile::u32 d0 = small + KC_OFF_U + kda::sw_off<KC_RBS>(r0, ch * 8);
    const __half* s0 = u + o0 + r0 * rs + v0 + ch * 8;
#pragma unroll
    for (int k = 0; k < KC_CH / RPI; ++k) {
      const int i = r0 + k * RPI;
      tile::cp_async16(d0 + k * RPI * KC_RBS, i < len ? s0 + k * RPI * rs : u + o0, i < len ? 16u : 0u);
    }
  }
  if (tid < KC_KD / 4) tile::cp_async16(small + KC_OFF_G + tid * 16, gl + (slot * H + h) * KC_KD + tid * 4, 16u);
}

// grid (NSEQ*H, 1, 128/BV) (kc_item), block KC_STATE_THREADS, smem KC_STATE_SMEM bytes. The state slice
// S[KD][BV] lives in fp32 registers (warp w owns a 256/SW x BV/2 block: row group
// w % (SW/2), column half w / (SW/2); accumulator layout), its fp16 copy Sh in shared
// memory. Per chunk
// (the next chunk's operands are copied into the other buffer meanwhile):
//   A  v' = u - w Sh -> Vh (fp16),  o = qg Sh   (one pass over Sh for both)
//   -- barrier --
//   B  o += P v', o -> global (bf16, scaled)
//   C  S <- e^{G_last} S + kd^T v' (registers), Sh <- fp16(S)   (Sh is not read after
//      the barrier, so it is rewritten in place)
//   -- wait for the copies, barrier --
// (STG 1: Kd is copied at the top of the chunk and waited for before the first barrier;
// the next chunk's W and Q are copied after it.)
extern "C" __global__ void __launch_bounds__(KC_STATE_THREADS, (STG == 1 && BV <= 64) ? 2 : 1) kda_chunk_state(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale) {
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < KC_STATE_SMEM) __trap();  // spec.json smem too small?
  (void)T;
  (void)NSEQ;
  constexpr int WN = SW / 4;        // column groups in the [CH x BV] products
  constexpr int NTW = BV / 8 / WN;  // n8 tiles per warp there
  constexpr int RG = SW / 2;        // row groups of S (times 2 column halves)
  constexpr int MTS = 16 / SW;      // 16-row blocks of S per warp
  constexpr int NS = BV / 16;       // n8 tiles of S per warp
  static_assert(NTW % 2 == 0, "PREC 2 needs BV >= 16 * SW / 4");
  // (SW 16: 16 warps hide more of the latency of the per-chunk chain than 8 do.)
  // (SW 4 is left out of the search by spec.json: BV 64 and 32 spill under NVRTC for sm_100a/sm_103a.)
  extern __shared__ __align__(128) unsigned char smb[];
  const tile::u32 sS = tile::smem_addr(smb), sV = sS + KC_KD * KC_RBS, sB = sV + KC_CH * KC_RBS;
  // The big and small parts of chunk c's buffer (STG 0: buffer c % 2; STG 1: one big part).
  auto big_of = [&](int cur) -> tile::u32 { return sB + (STG == 0 ? cur * KC_BUF : 0); };
  auto small_of = [&](int cur) -> tile::u32 { return sB + KC_BIG + cur * (STG == 0 ? KC_BUF : KC_SMALL); };
  int n32, h32;
  kc_item(order, H, &n32, &h32);
  const long long n = n32, h = h32;
  const int v0 = blockIdx.z * BV;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int wm = warp & 3, wn = warp >> 2;
  const int i0 = 16 * wm + gq, i1 = i0 + 8;
  const int sr0 = (warp % RG) * MTS * 16, sc0 = (warp / RG) * (BV / 2);  // this warp's block of S
  KC_PROF_START;

  const long long bos0 = cu[n], eos = cu[n + 1], slot0 = n + bos0 / KC_CH;
  if (bos0 < eos)
    kc_issue_f16(big_of(0), small_of(0), STG == 0 ? KC_ALL : KC_WQ | KC_SMP, qg, kd, w, u, P, gl, bos0,
                 (int)min((long long)KC_CH, eos - bos0), slot0, H, h, v0);
  tile::cp_async_commit();
  kda::frag_c S[MTS][NS];
  const float* h0s = h0 + ((n * H + h) * KC_KD + v0) * KC_KD;
#pragma unroll
  for (int mt = 0; mt < MTS; ++mt) {
    const int d0 = sr0 + mt * 16 + gq, d1 = d0 + 8;
#pragma unroll
    for (int nt = 0; nt < NS; ++nt) {
      const int e = sc0 + nt * 8 + 2 * tq;
      kc_frag_from_vk(S[mt][nt], h0s, d0, e);
      kc_frag_to_f16(sS + kda::sw_off<KC_RBS>(d0, e), sS + kda::sw_off<KC_RBS>(d1, e), S[mt][nt]);
    }
  }
  kda::cp_async_wait_all();
  __syncthreads();
  for (long long c = 0; bos0 + c * KC_CH < eos; ++c) {
    const long long bos = bos0 + c * KC_CH, slot = slot0 + c;
    const int len = (int)min((long long)KC_CH, eos - bos);
    const int cur = (int)(c & 1);
    const tile::u32 bb = big_of(cur), sm = small_of(cur);
    const float* Gs = reinterpret_cast<const float*>(smb + (sm - sS) + KC_OFF_G);
    const bool more = bos + KC_CH < eos;
    const int nlen = more ? (int)min((long long)KC_CH, eos - bos - KC_CH) : 0;
    if (STG == 1) {  // this chunk's Kd (its previous contents were last read before the barrier)
      kc_issue_f16(bb, sm, KC_KDP, qg, kd, w, u, P, gl, bos, len, slot, H, h, v0);
      tile::cp_async_commit();
    }
    if (more)  // STG 0: the whole next chunk; STG 1: its small part
      kc_issue_f16(big_of(cur ^ 1), small_of(cur ^ 1), STG == 0 ? KC_ALL : KC_SMP, qg, kd, w, u, P, gl,
                   bos + KC_CH, nlen, slot + 1, H, h, v0);
    tile::cp_async_commit();  // (possibly empty: STG 1 counts groups)
    KC_MARK(14);
    // A: [w; qg] Sh
    kda::frag_c acc[2][NTW];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[r][nt]);
    {
      const tile::u32 a2[2] = {bb, bb + KC_OFF_Q};
      kda::mma_strip_f16<KC_KD, NTW, 2, 2 * KC_KD, KC_RBS>(acc, a2, 16 * wm, sS, wn * NTW * 8);
    }
#pragma unroll
    for (int nt = 0; nt < NTW; ++nt) {
      const int e = (wn * NTW + nt) * 8 + 2 * tq;
      const float2 u0 = kda::unpack_f16x2(kda::ld_shared_u32(sm + KC_OFF_U + kda::sw_off<KC_RBS>(i0, e)));
      const float2 u1 = kda::unpack_f16x2(kda::ld_shared_u32(sm + KC_OFF_U + kda::sw_off<KC_RBS>(i1, e)));
      kda::st_shared_u32(sV + kda::sw_off<KC_RBS>(i0, e),
                         i0 < len ? kda::pack_f16x2(u0.x - acc[0][nt].x[0], u0.y - acc[0][nt].x[1]) : 0u);
      kda::st_shared_u32(sV + kda::sw_off<KC_RBS>(i1, e),
                         i1 < len ? kda::pack_f16x2(u1.x - acc[0][nt].x[2], u1.y - acc[0][nt].x[3]) : 0u);
    }
    KC_MARK(8);
    if (STG == 1) tile::cp_async_wait<1>();  // this chunk's Kd (the next small part may still be in flight)
    __syncthreads();
    if (STG == 1) {  // W and Q are consumed: the next chunk's
      if (more)
        kc_issue_f16(bb, sm, KC_WQ, qg, kd, w, u, P, gl, bos + KC_CH, nlen, slot + 1, H, h, v0);
      tile::cp_async_commit();
    }
    KC_MARK(9);
    // B: o = scale (qg Sh + P v')
    {
      kda::frag_c pv[1][NTW];
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) pv[0][nt] = acc[1][nt];
      const tile::u32 a1[1] = {sm};
      kda::mma_strip_f16<KC_CH, NTW, 1, 2 * KC_CH, KC_RBS>(pv, a1, 16 * wm, sV, wn * NTW * 8);
#pragma unroll
      for (int nt = 0; nt < NTW; ++nt) {
        const int e = v0 + (wn * NTW + nt) * 8 + 2 * tq;
        if (i0 < len)
          *reinterpret_cast<__nv_bfloat162*>(o + ((bos + i0) * H + h) * KC_KD + e) =
              __floats2bfloat162_rn(scale * pv[0][nt].x[0], scale * pv[0][nt].x[1]);
        if (i1 < len)
          *reinterpret_cast<__nv_bfloat162*>(o + ((bos + i1) * H + h) * KC_KD + e) =
              __floats2bfloat162_rn(scale * pv[0][nt].x[2], scale * pv[0][nt].x[3]);
      }
    }
    KC_MARK(10);
    // C: S <- e^{G_last} S + kd^T v'; Sh <- fp16(S)
#pragma unroll
    for (int mt = 0; mt < MTS; ++mt) {
      const int d0 = sr0 + mt * 16 + gq, d1 = d0 + 8;
      const float f0 = __expf(Gs[d0]), f1 = __expf(Gs[d1]);
#pragma unroll
      for (int nt = 0; nt < NS; ++nt) {
        S[mt][nt].x[0] *= f0;
        S[mt][nt].x[1] *= f0;
        S[mt][nt].x[2] *= f1;
        S[mt][nt].x[3] *= f1;
      }
    }
    kda::mma_tile_f16_kk<KC_CH, MTS, NS, 2 * KC_KD, KC_RBS>(S, bb + KC_OFF_KD, sr0, sV, sc0);
#pragma unroll
    for (int mt = 0; mt < MTS; ++mt) {
      const int d0 = sr0 + mt * 16 + gq, d1 = d0 + 8;
#pragma unroll
      for (int nt = 0; nt < NS; ++nt) {
        const int e = sc0 + nt * 8 + 2 * tq;
        kc_frag_to_f16(sS + kda::sw_off<KC_RBS>(d0, e), sS + kda::sw_off<KC_RBS>(d1, e), S[mt][nt]);
      }
    }
    KC_MARK(12);
    kda::cp_async_wait_all();
    __syncthreads();
    KC_MARK(13);
  }
  // (n reloaded: one register less across the chunk loop, which is at the 128 cap for BV 64 STG 1)
  float* hts = ht + (((long long)kc_seq_again(order, H) * H + h) * KC_KD + v0) * KC_KD;
#pragma unroll
  for (int mt = 0; mt < MTS; ++mt) {
    const int d0 = sr0 + mt * 16 + gq;
#pragma unroll
    for (int nt = 0; nt < NS; ++nt) {
      const int e = sc0 + nt * 8 + 2 * tq;
      kc_frag_to_vk(hts, S[mt][nt], d0, e);
    }
  }
}
#else  // PREC == 2, GM 1 or 2: the fp16 state kernel on wgmma

// Shared memory (bytes; every tile an sw128 tile of tile/wgmma.cuh, 1024-byte aligned):
//   Sh [128 d][128 e] (32 KB), Vh [64 i][128 e] (16 KB), then two chunk buffers of
//   W, Q, Kd [64 i][128 d] (16 KB each), Pm [64 i][64 j] (8 KB), U [64 i][128 e]
//   (16 KB), G f32 [128] (512 B) and an mbarrier, padded to 75,776; plus 1024 bytes of
//   alignment slack. CH 32 (GM 2): the same tiles with 32 rows, Pm [32 i][32 j] as an sw64
//   tile (2 KB, desc_kmajor64), a buffer of 35,840 bytes.
#define KC_TILE (KC_CH * 2 * KC_KD)  // bytes of one [CH][128] fp16 image
#define KC_PIMG (KC_CH * KC_CH * 2)  // bytes of the P image [CH][CH] (sw128, or sw64 for CH 32)
#define KC_GOFF_Q KC_TILE
#define KC_GOFF_KD (2 * KC_TILE)
#define KC_GOFF_P (3 * KC_TILE)
#define KC_PDESC(a) (KC_CH == 32 ? kda::desc_kmajor64(a) : kda::desc_kmajor(a))
#define KC_UIMG (UA ? KC_CH * KC_CH * 2 : KC_TILE)  // bytes of u's image (UA: -A diag(b), sw64)
#define KC_GOFF_U (3 * KC_TILE + KC_PIMG)
#define KC_GOFF_G (3 * KC_TILE + KC_PIMG + KC_UIMG)
#define KC_GOFF_MB (KC_GOFF_G + 512)  // the buffer's mbarrier
#define KC_GBUF (KC_CH == 64 ? 75776 : (KC_GOFF_MB + 8 + 1023) / 1024 * 1024)  // (spec.json: 75776 | 35840 | UA 29696)
// UA: three chunk buffers (copies two chunks ahead: -u^T of chunk c + 1 is formed during
// chunk c, off the chain), then v's rows in a ring of KC_VD + 1 slots (sw128 images by TMA,
// with the chunk's copies), then o's staging tile. (UA, RC 0: v's rows by TMA on the chunk
// buffer's mbarrier, issued by thread 0 with the chunk's bulk copies; 512 cp.async pieces per
// chunk from every thread, the knob KC_UAV 0, made the state kernel 5-6 % slower on the
// 1x8192 workloads, 1-2 % elsewhere: journal, fifteenth session; retired 2026-12-03.)
#define KC_NBUF (UA ? 3 : 2)
#define KC_VD 3
#define KC_VSLOT KC_TILE
// RC: then two raw slots of the producer (q, k, g, bf16 sw128 images; the P and
// -A diag(b) images; 1/|q| and 1/|k|; the slot's mbarrier), its G [CH][KC_LDG] (f32, log2
// units), the gate's quarter totals, and the buffers' "empty" mbarriers.
// The raw tiles are [CH][128] bf16 as sw128 images (two [CH][64] halves, the TMA boxes of
// tmap:q:64x1x32:128); with RC v's ring slots are such images too (KC_VSLOT).
#define KC_RAW_K KC_TILE
#define KC_RAW_G (2 * KC_TILE)
#define KC_RAW_P (3 * KC_TILE)
#define KC_RAW_A (KC_RAW_P + KC_CH * KC_CH * 2)
#define KC_RAW_N (KC_RAW_A + KC_CH * KC_CH * 2)
#define KC_RAW_MB (KC_RAW_N + 256)  // the slot's mbarrier (the copies' bytes)
#define KC_RAW ((KC_RAW_MB + 8 + 1023) / 1024 * 1024)
// RC 1: KC_RAWN raw slots (chunk n in slot n % KC_RAWN, its copies issued once "full" of
// n - KC_RAWN is seen) and no G tile (the producer's warps work alone, see kc_state_rc).
#define KC_RAWN 2  // (3: slower, 0.7142 against 0.7036 ms geomean, journal, fourteenth session)
// RC 1 forms no w. Since w = A diag(b) (k e^G) and u = A diag(b) v, v' = u - w S^T =
// A diag(b) (v - (k e^G) S^T): the consumers form Z^T = S^T (k e^G)^T (the product w's was,
// k e^G in w's slot), X^T = v^T - Z^T in registers (fp32, rounded to fp16 once) and
// -v'^T = X^T (-A diag(b))^T (2 k-steps); the producer writes k e^G. v is read at the top of
// its chunk, so its ring needs KC_RAWN + 3 slots (a chunk's copy may be issued while a
// consumer warp is still KC_RAWN + 2 chunks behind). (The knobs KC_RCW 0 (producer threads
// as channel pairs x quarters, G through shared memory) and KC_RCZ 0 (the producer forms w
// on fp16 mma), the designs before the fourteenth session, retired 2026-12-03.)
#define KC_VRING (RC == 1 ? KC_RAWN + 3 : KC_VD + 1)  // v's ring slots
// RC 1: o is staged in the chunk's own v slot (read at the top of the chunk, refilled
// only after every warp's "empty" of that chunk), not in a tile of its own
#define KC_OSV (RC == 1)
#define KC_RC_SMEM (RC == 1 ? KC_RAWN * KC_RAW + 64 : RC == 2 ? 64 : 0)
#define KC_STATE_SMEM ((GM == 2 ? 0 : 49152) + KC_NBUF * KC_GBUF + (UA ? KC_VRING * KC_VSLOT + (KC_OSV ? 0 : KC_TILE) : 0) + KC_RC_SMEM + 1024)  // (GM 2: no Sh, no Vh)
#define TESSERA_SMEM_kda_chunk_state KC_STATE_SMEM  // checked against spec.json by tests/core/templates_test
static_assert(KC_STATE_SMEM <= 232448, "the state kernel's shared memory exceeds the H200's 227 KB");

// One thread copies a chunk's operands into the buffer at shared address buf: the
// intra kernel wrote each as the sw128 (P at CH 32: sw64) image of its tile (rows past the sequence are
// zeros), so each is one bulk copy; completion is counted on the buffer's mbarrier.
// (The sequence split's first pass needs neither qg nor P, its transition part no u.)
#define KC_GBYTES (3 * KC_TILE + KC_PIMG + KC_UIMG + 512)
__device__ __forceinline__ void kc_issue_gm(tile::u32 buf, const __half* __restrict__ qg,
                                            const __half* __restrict__ kd, const __half* __restrict__ w,
                                            const __half* __restrict__ u, const __half* __restrict__ P,
                                            const float* __restrict__ gl, long long slot, long long H, long long h,
                                            bool with_u = true, bool with_qp = true) {
  const tile::u32 mb = buf + KC_GOFF_MB;
  const long long img = (slot * H + h) * (KC_CH * KC_KD), pim = (slot * H + h) * (KC_CH * KC_CH);
  tile::mbar_expect_tx(mb, KC_GBYTES - (with_u ? 0 : KC_UIMG) - (with_qp ? 0 : KC_TILE + KC_PIMG));
  tile::bulk_g2s(buf, w + img, KC_TILE, mb);
  if (with_qp) tile::bulk_g2s(buf + KC_GOFF_Q, qg + img, KC_TILE, mb);
  tile::bulk_g2s(buf + KC_GOFF_KD, kd + img, KC_TILE, mb);
  if (with_u) tile::bulk_g2s(buf + KC_GOFF_U, u + (slot * H + h) * (KC_UIMG / 2), KC_UIMG, mb);
  if (with_qp) tile::bulk_g2s(buf + KC_GOFF_P, P + pim, KC_PIMG, mb);
  tile::bulk_g2s(buf + KC_GOFF_G, gl + (slot * H + h) * KC_KD, 512, mb);
}
#if UA
// UA (and RC's chains), one thread: rows bos.. of a [T, H, 128] bf16 tensor at head h
// (tensor map m, tmap:NAME:64x1x32:128) into the sw128 image at dst by two TMA boxes of 32
// rows x 64 channels, on mbarrier mb (which it arrives on with the bytes). Rows past the
// tensor arrive as zeros, rows of the next sequence as they are (each caller masks them).
__device__ __forceinline__ void kc_tma_tile(tile::u32 dst, const tile::tmap* m, long long h, long long bos,
                                            tile::u32 mb) {
  tile::mbar_expect_tx(mb, KC_TILE);
  tile::tma_load_3d(dst, m, 0, (int)h, (int)bos, mb);
  tile::tma_load_3d(dst + KC_TILE / 2, m, 64, (int)h, (int)bos, mb);
}
// UA, one warpgroup: au = -u^T = v^T (-A diag(b))^T of a chunk (v's rows at vs, rows past
// the sequence zero-filled; the -A diag(b) image at img), issued and committed, not waited
// for. v^T as A by ldmatrix.trans: the same matrices as u^T's in kc_state_gm2, whose
// order is the A fragment's (e0: the first of this thread's rows e, less gq); vv must stay
// untouched until the product is done.
__device__ __forceinline__ void kc_ua_issue(kda::frag_c (&au)[KC_CH / 8], tile::u32 (&vv)[KC_CH / 16][4], tile::u32 vs,
                                            tile::u32 img, int lane, int e0) {
#pragma unroll
  for (int p = 0; p < KC_CH / 16; ++p) {
    const int m = lane >> 3, r = 16 * p + 8 * (m >> 1) + (lane & 7), c = e0 + 8 * (m & 1);
    kda::ldsm_x4_t(vv[p], vs + kda::sw128_off<KC_CH>(r, c));  // (an sw128 image)
#pragma unroll
    for (int e = 0; e < 4; ++e) {  // bf16 pairs -> fp16 pairs (exact: v in fp16 range)
      const float2 f = kda::bf16x2_bits_to_f32(vv[p][e]);
      vv[p][e] = kda::pack_f16x2(f.x, f.y);
    }
  }
  const unsigned long long di = kda::desc_kmajor64(img);
  kda::wgmma_fence();
#pragma unroll
  for (int p = 0; p < KC_CH / 16; ++p) {
    if (p == 0) kda::wgmma_m64nk16_rs<0, 0>(au, vv[p], di);
    else kda::wgmma_m64nk16_rs<0>(au, vv[p], kda::desc_add(di, p * 32));
  }
  kda::wgmma_commit();
}
// UA: v'^T = -(V^T - u^T) from product A's accumulator au (onto -u^T), columns i past len 0.
__device__ __forceinline__ void kc_ua_vprime(kda::frag_c (&acc)[KC_CH / 8], const kda::frag_c (&au)[KC_CH / 8], int len,
                                             int tq) {
#pragma unroll
  for (int j = 0; j < KC_CH / 8; ++j) {
    const int i = 8 * j + 2 * tq;
    acc[j].x[0] = i < len ? -au[j].x[0] : 0.f;
    acc[j].x[1] = i + 1 < len ? -au[j].x[1] : 0.f;
    acc[j].x[2] = i < len ? -au[j].x[2] : 0.f;
    acc[j].x[3] = i + 1 < len ? -au[j].x[3] : 0.f;
  }
}
#endif

// The state chain of one block (grid and block as kda_chunk_state below). Warpgroup eh
// owns the value columns 64eh..64eh+63: its slice of S (all 128 rows d, fp32 registers
// in the wgmma accumulator layout, two m64 blocks) and of every product. Per chunk:
//   (thread 0 issues the next chunk's bulk copies; all wait for this chunk's)
//   A  [w; qg] Sh[:, eh] (wgmma, 2 x 8 k-steps); v' = u - w Sh -> Vh (fp16)
//   -- barrier --
//   B  o = scale (qg Sh + P v') (4 k-steps onto the same accumulators) -> global
//   C  (issued right behind B) S <- e^{G_last} S + kd^T v' (kd as an MN-major A
//      operand; 2 x 4 k-steps), Sh[:, eh] <- fp16(S)
//   -- barrier --
// kStateOnly (the sequence split's first pass, kda_chunk_seg): A without qg, no B, no o;
// the chain runs from S0 ([V][K], when from_s0), else from the identity (ident: a
// transition, with u = 0 and U not copied), else from 0, and its end state goes to `end`.
// Otherwise the chain runs from S0 (h0 or a segment's start state, both [V][K]) and writes
// o, and its end state to `end` when that is not null.
template <bool kStateOnly>
__device__ __forceinline__ void kc_state_gm(const float* __restrict__ S0, bool from_s0, bool ident,
                                            const __half* __restrict__ qg, const __half* __restrict__ kd,
                                            const __half* __restrict__ w, const __half* __restrict__ u,
                                            const __half* __restrict__ P, const float* __restrict__ gl,
                                            __nv_bfloat16* __restrict__ o, float* __restrict__ end, long long bos0,
                                            long long eos, long long slot0, long long H, long long h, float scale) {
  extern __shared__ __align__(1024) unsigned char smb[];
  const tile::u32 s0 = tile::smem_addr(smb), sS = (s0 + 1023u) & ~1023u;
  const tile::u32 sV = sS + 32768, sB = sS + 49152;
  const unsigned char* gbase = smb + (sB - s0) + KC_GOFF_G;
  const bool with_u = !ident;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int eh = warp >> 2, wi = warp & 3, e0 = 64 * eh;
  const int i0 = 16 * wi + gq, i1 = i0 + 8;  // rows of this thread in an m64 block
  KC_PROF_START;

  if (tid == 0) {
    tile::mbar_init(sB + KC_GOFF_MB, 1);
    tile::mbar_init(sB + KC_GBUF + KC_GOFF_MB, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (tid == 0 && bos0 < eos) kc_issue_gm(sB, qg, kd, w, u, P, gl, slot0, H, h, with_u, !kStateOnly);
  kda::frag_c S[2][8];  // S[d = 64 db + i0/i1][e = e0 + 8j + 2tq (+1)]
#pragma unroll
  for (int db = 0; db < 2; ++db) {
    const int d0 = 64 * db + i0, d1 = d0 + 8;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int e = e0 + 8 * j + 2 * tq;
      if (from_s0) {
        kc_frag_from_vk(S[db][j], S0, d0, e);
      } else {  // the identity (a transition), or 0
        const float one = ident ? 1.f : 0.f;
        S[db][j].x[0] = d0 == e ? one : 0.f;
        S[db][j].x[1] = d0 == e + 1 ? one : 0.f;
        S[db][j].x[2] = d1 == e ? one : 0.f;
        S[db][j].x[3] = d1 == e + 1 ? one : 0.f;
      }
      kc_frag_to_f16(sS + kda::sw128_off<KC_KD>(d0, e), sS + kda::sw128_off<KC_KD>(d1, e), S[db][j]);
    }
  }
  kda::fence_async_shared();
  __syncthreads();
  for (long long c = 0; bos0 + c * KC_CH < eos; ++c) {
    const long long bos = bos0 + c * KC_CH, slot = slot0 + c;
    const int len = (int)min((long long)KC_CH, eos - bos);
    const int cur = (int)(c & 1);
    const tile::u32 bb = sB + cur * KC_GBUF;
    const float* Gs = reinterpret_cast<const float*>(gbase + cur * KC_GBUF);
    const bool more = bos + KC_CH < eos;
    if (tid == 0 && more)
      kc_issue_gm(sB + (cur ^ 1) * KC_GBUF, qg, kd, w, u, P, gl, slot + 1, H, h, with_u, !kStateOnly);
    tile::mbar_wait(bb + KC_GOFF_MB, (tile::u32)((c >> 1) & 1));
    KC_MARK(14);
    // A: [w; qg] Sh[:, eh]
    kda::frag_c aw[8], aq[8];  // (written by the first k-step: ACC 0)
    kda::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const tile::u32 ka = (ks >> 2) * (KC_CH * 128) + (ks & 3) * 32;
      const unsigned long long db = kda::desc_mnmajor(sS + eh * (KC_KD * 128) + ks * 2048, KC_KD * 128);
      if (ks == 0) {
        kda::wgmma_m64n64k16<0, 1, 0>(aw, kda::desc_kmajor(bb + ka), db);
        if (!kStateOnly) kda::wgmma_m64n64k16<0, 1, 0>(aq, kda::desc_kmajor(bb + KC_GOFF_Q + ka), db);
      } else {
        kda::wgmma_m64n64k16<0, 1>(aw, kda::desc_kmajor(bb + ka), db);
        if (!kStateOnly) kda::wgmma_m64n64k16<0, 1>(aq, kda::desc_kmajor(bb + KC_GOFF_Q + ka), db);
      }
    }
    kda::wgmma_commit();
    kda::wgmma_wait<0>();
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int e = e0 + 8 * j + 2 * tq;
      const float2 u0 = with_u ? kda::unpack_f16x2(kda::ld_shared_u32(bb + KC_GOFF_U + kda::sw128_off<KC_CH>(i0, e)))
                               : make_float2(0.f, 0.f);
      const float2 u1 = with_u ? kda::unpack_f16x2(kda::ld_shared_u32(bb + KC_GOFF_U + kda::sw128_off<KC_CH>(i1, e)))
                               : make_float2(0.f, 0.f);
      kda::st_shared_u32(sV + kda::sw128_off<KC_CH>(i0, e),
                         i0 < len ? kda::pack_f16x2(u0.x - aw[j].x[0], u0.y - aw[j].x[1]) : 0u);
      kda::st_shared_u32(sV + kda::sw128_off<KC_CH>(i1, e),
                         i1 < len ? kda::pack_f16x2(u1.x - aw[j].x[2], u1.y - aw[j].x[3]) : 0u);
    }
    kda::fence_async_shared();
    KC_MARK(8);
    __syncthreads();
    KC_MARK(9);
    // B: o = scale (qg Sh + P v'), and C behind it: S <- e^{G_last} S + kd^T v' (the
    // decay first, so that no register is touched between the two groups)
#pragma unroll
    for (int db = 0; db < 2; ++db) {
      const float f0 = __expf(Gs[64 * db + i0]), f1 = __expf(Gs[64 * db + i1]);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        S[db][j].x[0] *= f0;
        S[db][j].x[1] *= f0;
        S[db][j].x[2] *= f1;
        S[db][j].x[3] *= f1;
      }
    }
    kda::wgmma_fence();
    if (!kStateOnly) {
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        kda::wgmma_m64n64k16<0, 1>(aq, kda::desc_kmajor(bb + KC_GOFF_P + ks * 32),
                                   kda::desc_mnmajor(sV + eh * (KC_CH * 128) + ks * 2048, KC_CH * 128));
      kda::wgmma_commit();
    }
#pragma unroll
    for (int db = 0; db < 2; ++db)
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        kda::wgmma_m64n64k16<1, 1>(S[db], kda::desc_mnmajor(bb + KC_GOFF_KD + db * (KC_CH * 128) + ks * 2048, KC_CH * 128),
                                   kda::desc_mnmajor(sV + eh * (KC_CH * 128) + ks * 2048, KC_CH * 128));
    kda::wgmma_commit();
    if (!kStateOnly) {
      kda::wgmma_wait<1>();  // B is done
      // o through the dead U tile (bf16, sw128): a warp's 16 rows x 64 columns, then
      // 16-byte coalesced stores (four 128-byte rows per warp instruction)
      const tile::u32 ot = bb + KC_GOFF_U;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int e = e0 + 8 * j + 2 * tq;
        kda::st_shared_u32(ot + kda::sw128_off<KC_CH>(i0, e), tile::pack_bf16x2(scale * aq[j].x[0], scale * aq[j].x[1]));
        kda::st_shared_u32(ot + kda::sw128_off<KC_CH>(i1, e), tile::pack_bf16x2(scale * aq[j].x[2], scale * aq[j].x[3]));
      }
      __syncwarp();
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int r = 16 * wi + 4 * k + (lane >> 3), c8 = e0 + 8 * (lane & 7);
        uint4 v;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "r"(ot + kda::sw128_off<KC_CH>(r, c8)));
        if (r < len) *reinterpret_cast<uint4*>(o + ((bos + r) * H + h) * KC_KD + c8) = v;
      }
    }
    KC_MARK(10);
    kda::wgmma_wait<0>();
#pragma unroll
    for (int db = 0; db < 2; ++db) {
      const int d0 = 64 * db + i0, d1 = d0 + 8;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int e = e0 + 8 * j + 2 * tq;
        kc_frag_to_f16(sS + kda::sw128_off<KC_KD>(d0, e), sS + kda::sw128_off<KC_KD>(d1, e), S[db][j]);
      }
    }
    KC_MARK(12);
    kda::fence_async_shared();  // (also orders this chunk's reads and o staging before the next bulk copy into bb)
    __syncthreads();
    KC_MARK(13);
  }
  if (end == nullptr) return;
#pragma unroll
  for (int db = 0; db < 2; ++db) {
    const int d0 = 64 * db + i0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int e = e0 + 8 * j + 2 * tq;
      kc_frag_to_vk(end, S[db][j], d0, e);
    }
  }
}

// GM 2, one warpgroup, a chunk's products after A (buffer at bb; S^T's fp16 fragments sa,
// v'^T's va): S^T <- S^T diag(e^{G_last}) (Gd: e^{G_last}; before C's accumulation, after
// A's last read of S^T), then B: O^T = S^T qg^T + v'^T P^T into acc (with_b), and C behind
// it: S^T += v'^T kd; each a committed group, not waited for.
template <bool with_b>
__device__ __forceinline__ void kc_gm2_bc(kda::frag_c (&ST)[16], kda::frag_c (&acc)[KC_CH / 8], const tile::u32 (&sa)[8][4],
                                          const tile::u32 (&va)[KC_CH / 16][4], const float* Gd, tile::u32 bb, int tq) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const float2 f = *reinterpret_cast<const float2*>(Gd + 8 * j + 2 * tq);
    ST[j].x[0] *= f.x;
    ST[j].x[1] *= f.y;
    ST[j].x[2] *= f.x;
    ST[j].x[3] *= f.y;
  }
  // (each product's descriptors from one built here: kda::desc_add)
  const unsigned long long dq = kda::desc_kmajor(bb + KC_GOFF_Q), dp = KC_PDESC(bb + KC_GOFF_P),
                           dk = kda::desc_mnmajor(bb + KC_GOFF_KD, KC_CH * 128);
  kda::wgmma_fence();
  if (with_b) {
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const unsigned long long db = kda::desc_add(dq, (ks >> 2) * (KC_CH * 128) + (ks & 3) * 32);
      if (ks == 0) kda::wgmma_m64nk16_rs<0, 0>(acc, sa[ks], db);
      else kda::wgmma_m64nk16_rs<0>(acc, sa[ks], db);
    }
#pragma unroll
    for (int ks = 0; ks < KC_CH / 16; ++ks) kda::wgmma_m64nk16_rs<0>(acc, va[ks], kda::desc_add(dp, ks * 32));
    kda::wgmma_commit();
  }
#pragma unroll
  for (int ks = 0; ks < KC_CH / 16; ++ks) kda::wgmma_m64n128k16_rs<1>(ST, va[ks], kda::desc_add(dk, ks * 2048));
  kda::wgmma_commit();
}

// GM 2, one warpgroup (eh): o = scale O^T of a chunk (O^T's accumulator acc, this thread's
// value rows er0 and er0 + 8) staged as a bf16 [CH i][64 e] sw128 tile at os, then written
// to o's rows bos.. (len of them) by 16-byte coalesced stores. The warpgroup's barrier
// before the staging also tells racecheck, which does not count wgmma as one, that every
// warp is through with the reads before B.
__device__ __forceinline__ void kc_o_out(tile::u32 os, const kda::frag_c (&acc)[KC_CH / 8], float scale, int er0, int eh,
                                         int tq, int tid, int len, __nv_bfloat16* __restrict__ o, long long bos,
                                         long long H, long long h) {
  auto ooff = [](int r, int c) { return kda::sw128_off<KC_CH>(r, c); };
  const int el = er0 - 64 * eh;
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + eh) : "memory");
#if KC_CH == 32
  // The accumulator's pairs (rows i = 8j + 2tq, +1 of column el) are the transposed 8x8
  // matrices of stmatrix.trans: matrix j of store hh covers rows 8j.., columns el - gq + 8hh..,
  // lane l giving the address of its row l (two stores instead of sixteen 2-byte ones)
  (void)tq;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    tile::u32 r[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) r[j] = tile::pack_bf16x2(scale * acc[j].x[2 * hh], scale * acc[j].x[2 * hh + 1]);
    kda::stsm_x4_t(os + ooff(threadIdx.x & 31, el - (el & 7) + 8 * hh), r);
  }
#else
#pragma unroll
  for (int j = 0; j < KC_CH / 8; ++j) {
    const int i = 8 * j + 2 * tq;
    kda::st_shared_bf16(os + ooff(i, el), scale * acc[j].x[0]);
    kda::st_shared_bf16(os + ooff(i + 1, el), scale * acc[j].x[1]);
    kda::st_shared_bf16(os + ooff(i, el + 8), scale * acc[j].x[2]);
    kda::st_shared_bf16(os + ooff(i + 1, el + 8), scale * acc[j].x[3]);
  }
#endif
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + eh) : "memory");
  const int t = tid & 127;
#pragma unroll
  for (int k4 = 0; k4 < KC_CH / 16; ++k4) {
    const int r = (t >> 3) + 16 * k4, c8 = 8 * (t & 7);
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(os + ooff(r, c8)));
    if (r < len) *reinterpret_cast<uint4*>(o + ((bos + r) * H + h) * KC_KD + 64 * eh + c8) = v;
  }
}

// GM 2: the state chain on the transposed state, with kc_state_gm's interface and
// semantics (kStateOnly, S0 / identity / 0, end). Warpgroup eh owns the value rows
// e = 64eh..64eh+63 of S^T [e][d] (fp32, the m64n128 wgmma accumulator: thread rows er0 and
// er0 + 8, columns d = 8j + 2tq (+1)), and every product takes its A operand from registers
// (acc_to_a): S^T itself (fp16) and v'^T. Only w, qg, P and kd are read from shared memory
// (as B operands); there is no fp16 image of S and no v' tile to write, fence and share, and
// the two warpgroups never wait for each other inside a chunk. Per chunk:
//   A  V^T = S^T w^T  (w [i][d]: K-major B)
//      v'^T = u^T - V^T  (u^T by ldmatrix.trans from u's tile), zero past len
//   B  O^T = S^T qg^T + v'^T P^T  (qg and P K-major B) -> o (staged over U)
//   C  S^T <- S^T diag(e^{G_last}) + v'^T kd  (kd [i][d]: MN-major B, m64n128)
//   -- barrier (both warpgroups are done with the buffer) --
// Registers: S^T 64, its fp16 fragments 32, V^T / O^T 32, v'^T fragments 16. Shared
// memory: the two chunk buffers of GM 1 (KC_STATE_SMEM: no Sh, no Vh).
template <bool kStateOnly>
__device__ __forceinline__ void kc_state_gm2(const float* __restrict__ S0, bool from_s0, bool ident,
                                             const __half* __restrict__ qg, const __half* __restrict__ kd,
                                             const __half* __restrict__ w, const __half* __restrict__ u,
                                             const __half* __restrict__ P, const float* __restrict__ gl,
                                             __nv_bfloat16* __restrict__ o, float* __restrict__ end, long long bos0,
                                             long long eos, long long slot0, long long H, long long h, float scale,
                                             const __nv_bfloat16* __restrict__ vin = nullptr,
                                             const tile::tmap* mv = nullptr) {
  extern __shared__ __align__(1024) unsigned char smb[];
  const tile::u32 s0 = tile::smem_addr(smb), sB = (s0 + 1023u) & ~1023u;
  const unsigned char* gbase = smb + (sB - s0) + KC_GOFF_G;
  const bool with_u = !ident;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int eh = warp >> 2, wi = warp & 3;
  const int er0 = 64 * eh + 16 * wi + gq, er1 = er0 + 8;  // this thread's rows of S^T
  KC_PROF_START;
  if (tid == 0) {
#pragma unroll
    for (int b = 0; b < KC_NBUF; ++b) tile::mbar_init(sB + b * KC_GBUF + KC_GOFF_MB, UA ? 2 : 1);
    if (UA) tile::tma_prefetch_desc(mv);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (tid == 0 && bos0 < eos) kc_issue_gm(sB, qg, kd, w, u, P, gl, slot0, H, h, with_u, !kStateOnly);
  constexpr int NI = KC_CH / 8;  // n8 blocks over the chunk's rows i
#if UA
  if (tid == 0 && bos0 + KC_CH < eos) kc_issue_gm(sB + KC_GBUF, qg, kd, w, u, P, gl, slot0 + 1, H, h);
  const tile::u32 sV = sB + KC_NBUF * KC_GBUF;  // the v ring
  (void)vin;
  if (tid == 0)
    for (int d = 0; d < 2; ++d)
      if (bos0 + d * KC_CH < eos) kc_tma_tile(sV + d * KC_VSLOT, mv, h, bos0 + d * KC_CH, sB + d * KC_GBUF + KC_GOFF_MB);
  kda::frag_c au[NI];              // -u^T of the next chunk, formed a chunk ahead
  tile::u32 vv[KC_CH / 16][4];     // its v^T fragments (operands of the product in flight)
  if (bos0 < eos) tile::mbar_wait(sB + KC_GOFF_MB, 0u);
  kc_ua_issue(au, vv, sV, sB + KC_GOFF_U, lane, er0 - gq);  // (unconditional, as below)
#else
  (void)vin;
#endif
  kda::frag_c ST[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int d = 8 * j + 2 * tq;
    if (from_s0) {  // [V][K]: S^T row-major
      const float2 a = *reinterpret_cast<const float2*>(S0 + er0 * KC_KD + d);
      const float2 b = *reinterpret_cast<const float2*>(S0 + er1 * KC_KD + d);
      ST[j].x[0] = a.x;
      ST[j].x[1] = a.y;
      ST[j].x[2] = b.x;
      ST[j].x[3] = b.y;
    } else {  // the identity (a transition), or 0
      const float one = ident ? 1.f : 0.f;
      ST[j].x[0] = er0 == d ? one : 0.f;
      ST[j].x[1] = er0 == d + 1 ? one : 0.f;
      ST[j].x[2] = er1 == d ? one : 0.f;
      ST[j].x[3] = er1 == d + 1 ? one : 0.f;
    }
  }
  for (long long c = 0; bos0 + c * KC_CH < eos; ++c) {
    const long long bos = bos0 + c * KC_CH, slot = slot0 + c;
    const int len = (int)min((long long)KC_CH, eos - bos);
    const int cur = (int)(c % KC_NBUF);
    const tile::u32 bb = sB + cur * KC_GBUF;
    const float* Gd = reinterpret_cast<const float*>(gbase + cur * KC_GBUF);  // e^{G_last}
#if UA
    // (chunk c's buffer was waited for by every thread before its -u^T was issued)
    if (tid == 0 && bos + 2 * KC_CH < eos) {
      kc_issue_gm(sB + (int)((c + 2) % KC_NBUF) * KC_GBUF, qg, kd, w, u, P, gl, slot + 2, H, h);
      kc_tma_tile(sV + (int)((c + 2) % (KC_VD + 1)) * KC_VSLOT, mv, h, bos + 2 * KC_CH,
                  sB + (int)((c + 2) % KC_NBUF) * KC_GBUF + KC_GOFF_MB);
    }
#else
    if (tid == 0 && bos + KC_CH < eos)
      kc_issue_gm(sB + (cur ^ 1) * KC_GBUF, qg, kd, w, u, P, gl, slot + 1, H, h, with_u, !kStateOnly);
    tile::mbar_wait(bb + KC_GOFF_MB, (tile::u32)((c >> 1) & 1));
#endif
    KC_MARK(14);
    tile::u32 sa[8][4];  // S^T (fp16) as A, k-slices over d
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) kda::acc_to_a(sa[ks], ST[2 * ks], ST[2 * ks + 1]);
    // A: V^T = S^T w^T (UA: onto -u^T, in flight since the previous chunk: -(v'^T))
    kda::frag_c acc[NI];
    const unsigned long long dw = kda::desc_kmajor(bb);
    kda::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const unsigned long long db = kda::desc_add(dw, (ks >> 2) * (KC_CH * 128) + (ks & 3) * 32);
#if UA
      kda::wgmma_m64nk16_rs<0>(au, sa[ks], db);
#else
      if (ks == 0) kda::wgmma_m64nk16_rs<0, 0>(acc, sa[ks], db);
      else kda::wgmma_m64nk16_rs<0>(acc, sa[ks], db);
#endif
    }
    kda::wgmma_commit();
    kda::wgmma_wait<0>();
    KC_MARK(8);
    // v'^T = u^T - V^T (columns i past len: 0), as A fragments over i. u^T in V^T's layout
    // by ldmatrix.trans from u's [64 i][128 e] tile: matrix m of pair p holds rows
    // i = 8(2p + m/2).. at columns e = er0 - gq + 8(m%2)..; its transpose gives this thread
    // (e = er0 or er1, i = 8j + 2tq, +1). (A transition has u = 0.)
    tile::u32 va[KC_CH / 16][4];
#if UA
    kc_ua_vprime(acc, au, len, tq);
#else
#pragma unroll
    for (int p = 0; p < KC_CH / 16; ++p) {
      const int m = lane >> 3;
      tile::u32 ut[4] = {0u, 0u, 0u, 0u};
      if (with_u)
        kda::ldsm_x4_t(ut, bb + KC_GOFF_U +
                               kda::sw128_off<KC_CH>(16 * p + 8 * (m >> 1) + (lane & 7), er0 - gq + 8 * (m & 1)));
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int j = 2 * p + q, i = 8 * j + 2 * tq;
        const float2 u0 = kda::unpack_f16x2(ut[2 * q]), u1 = kda::unpack_f16x2(ut[2 * q + 1]);
        acc[j].x[0] = i < len ? u0.x - acc[j].x[0] : 0.f;
        acc[j].x[1] = i + 1 < len ? u0.y - acc[j].x[1] : 0.f;
        acc[j].x[2] = i < len ? u1.x - acc[j].x[2] : 0.f;
        acc[j].x[3] = i + 1 < len ? u1.y - acc[j].x[3] : 0.f;
      }
    }
#endif
#pragma unroll
    for (int ks = 0; ks < KC_CH / 16; ++ks) kda::acc_to_a(va[ks], acc[2 * ks], acc[2 * ks + 1]);
    // the decay of C; B: O^T = S^T qg^T + v'^T P^T;  C behind it: S^T += v'^T kd
    kc_gm2_bc<!kStateOnly>(ST, acc, sa, va, Gd, bb, tq);
#if UA
    // the next chunk's -u^T behind B and C (its buffer and v rows are in place). Issued
    // after the last chunk too, on stale operands, never read: a conditional product
    // makes ptxas serialize every wgmma of the loop.
    {
      const tile::u32 nb = sB + (int)((c + 1) % KC_NBUF) * KC_GBUF;
      if (bos + KC_CH < eos) tile::mbar_wait(nb + KC_GOFF_MB, (tile::u32)(((c + 1) / KC_NBUF) & 1));
      kc_ua_issue(au, vv, sV + (int)((c + 1) % (KC_VD + 1)) * KC_VSLOT, nb + KC_GOFF_U, lane, er0 - gq);
    }
#endif
    if (!kStateOnly) {
#if UA
      kda::wgmma_wait<2>();  // B is done
#else
      kda::wgmma_wait<1>();  // B is done
#endif
      KC_MARK(10);
      // o: O^T [e][i] staged as a bf16 [64 i][64 e] sw128 tile over this warpgroup's half
      // of U (its e columns: only this warpgroup read them), then 16-byte coalesced row
      // stores. (Not over W: the other warpgroup may still be reading all of W in its A.)
#if UA
      // (UA: in an sw128 tile of its own after the v ring; staged over v's 272-byte rows, the
      // 2-byte stores conflict and the state kernel was 6-9 % slower)
      const tile::u32 os = sV + (KC_VD + 1) * KC_VSLOT + eh * (KC_CH * 128);
#else
      const tile::u32 os = bb + KC_GOFF_U + eh * (KC_CH * 128);
#endif
      // (Every warp of the warpgroup read its u^T before B's issue, which needs all four.)
      kc_o_out(os, acc, scale, er0, eh, tq, tid, len, o, bos, H, h);
    }
#if UA
    kda::wgmma_wait<1>();  // C is done (the next chunk's -u^T may run on)
#else
    kda::wgmma_wait<0>();
#endif
    KC_MARK(12);
#if UA
#endif
    kda::fence_async_shared();  // (this chunk's reads and o staging, before the buffer's next copy)
    __syncthreads();
    KC_MARK(13);
  }
  if (end == nullptr) return;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    *reinterpret_cast<float2*>(end + er0 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[0], ST[j].x[1]);
    *reinterpret_cast<float2*>(end + er1 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[2], ST[j].x[3]);
  }
}
#if RC >= 1
__device__ __forceinline__ void kc_mbar_arrive(tile::u32 mb) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(mb) : "memory");
}
// RC, part pw of chunk (slot, bos)'s copies (kc_rc_issue): pw < 4 tensor pw's rows (q, k, g
// into raw slot rs, v into the ring slot vs: TMA boxes of 32 rows x 64 channels at head h,
// two per tensor; rows past the tensor arrive as zeros, rows of the next sequence as they
// are, see kc_state_rc); pw 4: P's and -A diag(b)'s images and the row norms. Each arrives
// on the slot's mbarrier with its bytes (raw_issue: eight issuing warps, KC_RAW_PARTS).
#define KC_RCP 256  // the producer's threads (two warpgroups)
// The consumers issue the raw copies (chunk n once they have seen "full" for n - 2, whose
// raw slot that frees), off the producer's critical path (the producer's warps 0..4 a
// chunk ahead, knob KC_RCI 0, retired 2026-12-03).
// The eight consumer warps issue the raw copies (see raw_issue): one TMA box each, v's two
// and the three bulk copies on warps 6 and 7. Issuing a chunk's 11 copies from one thread
// blocks it ~1.6k cycles, and its warpgroup with it; spread over eight warps the state
// kernel ran 10-18 % faster (sixteenth session; the knob KC_RCIW 1|2|4 retired 2026-12-03).
#define KC_RAW_PARTS 8  // arrivals on a raw slot's mbarrier
// Registers per thread after setmaxnreg: the consumers' (KC_RCREGC) and the producer's
// (KC_RCREGP), 256 threads each: at most 256 together. Since the
// raw copies are issued by eight warps the producer's arithmetic sets the state
// kernel's period (seventeenth session: without it the state kernel takes 0.31 instead of
// 0.43 ms on h96_1x8192), and both columns stage by stage at 176 / 80 registers run 1.7 %
// faster (geomean) than column by column at 184 / 72.
#define KC_RCREGC 176
#define KC_RCREGP 80
static_assert(KC_RCREGC + KC_RCREGP <= 256 && KC_RCREGC % 8 == 0 && KC_RCREGP % 8 == 0, "KC_RCREGC, KC_RCREGP");

#define KC_STR2(x) #x
#define KC_STR(x) KC_STR2(x)
__device__ __forceinline__ void kc_rc_issue(int pw, tile::u32 rs, tile::u32 vs, const tile::tmap* tq, const tile::tmap* tk,
                                            const tile::tmap* tg, const tile::tmap* tv, const __half* __restrict__ P,
                                            const __half* __restrict__ u, const float* __restrict__ gl, long long slot,
                                            long long H, long long h, long long bos) {
  const tile::u32 mb = rs + KC_RAW_MB;
  if (pw < 4) {
    const tile::tmap* m = pw == 0 ? tq : pw == 1 ? tk : pw == 2 ? tg : tv;
    kc_tma_tile(pw == 3 ? vs : rs + pw * KC_TILE, m, h, bos, mb);
  } else {
    const long long pim = (slot * H + h) * (KC_CH * KC_CH);
    tile::mbar_expect_tx(mb, 2 * KC_CH * KC_CH * 2 + 256);
    tile::bulk_g2s(rs + KC_RAW_P, P + pim, KC_CH * KC_CH * 2, mb);
    tile::bulk_g2s(rs + KC_RAW_A, u + pim, KC_CH * KC_CH * 2, mb);
    tile::bulk_g2s(rs + KC_RAW_N, gl + (slot * H + h) * KC_KD, 256, mb);
  }
}

// RC 1, producer warp pw: columns j0 .. j0 + NJ - 1 (8 channels each) of the
// chunk in raw slot rs: the gate and its sums G in registers, then qg, kd and k e^G as fp16
// images by stmatrix.trans (qg, kd into buffer bb, k e^G over k) and e^{G_last}; gb is
// buffer bb's generic address. Lane l holds channel 16 pw + 8 j + l / 4 of rows 8 m + 2 t,
// + 1 (t = l % 4, m = 0..3). NJ 2 interleaves the two columns' chains stage by stage.
template <int NJ>
__device__ __forceinline__ void kc_rc_cols(int j0, tile::u32 rs, tile::u32 bb, unsigned char* gb, const tile::u32 (&lo)[2],
                                           const float (&oc)[2], const float* rn, float ga2, float lb2, int len, int lane,
                                           int pw) {
  const int t = lane & 3;
  tile::u32 gr[NJ][4], qr[NJ][4], kr[NJ][4];  // raw g, q, k (bf16 pairs)
  // (NJ 2: q and k are loaded once the gates are formed, so that g's registers are free)
  const auto load_qk = [&] {
#pragma unroll
    for (int jj = 0; jj < NJ; ++jj) {
      kda::ldsm_x4_t(qr[jj], rs + lo[j0 + jj]);
      kda::ldsm_x4_t(kr[jj], rs + KC_RAW_K + lo[j0 + jj]);
    }
  };
#pragma unroll
  for (int jj = 0; jj < NJ; ++jj) {
    kda::ldsm_x4_t(gr[jj], rs + KC_RAW_G + lo[j0 + jj]);
    if (NJ == 1) load_qk();
  }
  float s[NJ][4][2];  // the gate, then G (log2 units), of rows 8 m + 2 t, + 1
#pragma unroll
  for (int jj = 0; jj < NJ; ++jj)
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const float2 gg = kda::bf16x2_bits_to_f32(gr[jj][m]);
      const int i = 8 * m + 2 * t;
      const float e0 = kda::ex2(fmaf(gg.x, -ga2, oc[j0 + jj])), e1 = kda::ex2(fmaf(gg.y, -ga2, oc[j0 + jj]));
      s[jj][m][0] = i < len ? __fdividef(lb2, 1.0f + e0) : 0.f;
      s[jj][m][1] = i + 1 < len ? __fdividef(lb2, 1.0f + e1) : 0.f;
    }
  if (NJ > 1) load_qk();
  float GL[NJ];  // (the gate is 0 past len: G of row len - 1)
#pragma unroll
  for (int jj = 0; jj < NJ; ++jj) {
    float off = 0.f;  // the sum of the rows above matrix m
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const float p = s[jj][m][0] + s[jj][m][1];
      float x = p, y = __shfl_up_sync(0xffffffffu, x, 1, 4);
      if (t >= 1) x += y;
      y = __shfl_up_sync(0xffffffffu, x, 2, 4);
      if (t >= 2) x += y;
      const float tot = __shfl_sync(0xffffffffu, x, 3, 4);
      s[jj][m][0] += off + (x - p);
      s[jj][m][1] = off + x;
      off += tot;
    }
    GL[jj] = off;
  }
#pragma unroll
  for (int jj = 0; jj < NJ; ++jj) {
    tile::u32 oq[4], okd[4], ok[4];  // qg, kd, k e^G (fp16 pairs)
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const float2 qq = kda::bf16x2_bits_to_f32(qr[jj][m]), kk = kda::bf16x2_bits_to_f32(kr[jj][m]);
      // 1/|q|, 1/|k| of rows 8 m + 2 t, + 1
      const float2 ra = *reinterpret_cast<const float2*>(rn + 8 * m + 2 * t);
      const float2 rb = *reinterpret_cast<const float2*>(rn + 32 + 8 * m + 2 * t);
      const float e0 = kda::ex2(s[jj][m][0]), e1 = kda::ex2(s[jj][m][1]);
      const float k0 = kk.x * rb.x, k1 = kk.y * rb.y;
      oq[m] = kda::pack_f16x2(qq.x * ra.x * e0, qq.y * ra.y * e1);
      okd[m] = kda::pack_f16x2(k0 * kda::ex2(GL[jj] - s[jj][m][0]), k1 * kda::ex2(GL[jj] - s[jj][m][1]));
      ok[m] = kda::pack_f16x2(k0 * e0, k1 * e1);
    }
    // k e^G into the buffer's w slot (the consumers' B operand)
    kda::stsm_x4_t(bb + lo[j0 + jj], ok);
    kda::stsm_x4_t(bb + KC_GOFF_Q + lo[j0 + jj], oq);
    kda::stsm_x4_t(bb + KC_GOFF_KD + lo[j0 + jj], okd);
    if (t == 0) *reinterpret_cast<float*>(gb + KC_GOFF_G + (16 * pw + 8 * (j0 + jj) + (lane >> 2)) * 4) = kda::ex2(GL[jj]);
  }
}

// RC (UA 1, CH 32, SEG 0): kc_state_gm2's UA chain (warpgroups 0 and 1, the consumers)
// fed by two more warpgroups (the producer) instead of bulk copies of the intra kernel's
// images. Per chunk n (its q, k, g and v copied by TMA KC_RAWN chunks ahead, issued by lane 0
// of the consumer warps) each producer warp, once the consumers have released buffer
// n % 3 ("empty" mbarrier, 8 warp arrivals), forms the gate and G of its 16 channels in
// registers, writes their qg, kd, k e^G and e^{G_last}, copies its share of P's and
// -A diag(b)'s images (the consumers fold w into their products) and arrives on the
// buffer's "full" mbarrier (8 arrivals). The arithmetic per element is the
// intra kernel's; G's sums run in another order, so qg, kd and k e^G match UA 0's to fp32
// rounding, not bit for bit. Registers: setmaxnreg moves
// them from the producer (KC_RCREGP, 72) to the consumers (KC_RCREGC, 184). Rows past the sequence's end (len)
// hold the next sequence's q, k, g, v (TMA boxes are not cut at len): they meet zeros
// everywhere (1/|q| = 1/|k| = 0 from the intra kernel, the gate masked past len, the columns
// of -A diag(b) past len zero, v'^T masked), so they do not reach o or the state as long
// as they are finite after v's conversion to fp16: PREC 2's bound on every v row anyway.
template <bool kPipe>  // (PIPE: kda_chunk_state_beside, flags given)
__device__ __forceinline__ void kc_state_rc(const float* __restrict__ S0, const __half* __restrict__ qg,
                                            const __half* __restrict__ kd, const __half* __restrict__ w,
                                            const __half* __restrict__ u,
                                            const __half* __restrict__ P, const float* __restrict__ gl,
                                            __nv_bfloat16* __restrict__ o, float* __restrict__ end, long long bos0,
                                            long long eos, long long slot0, long long H, long long h, float scale,
                                            const tile::tmap* mq, const tile::tmap* mk, const tile::tmap* mg,
                                            const tile::tmap* mv, const float* __restrict__ A_log,
                                            const float* __restrict__ dt_bias, float lower_bound,
                                            const int* flags = nullptr) {
  extern __shared__ __align__(1024) unsigned char smb[];
  const tile::u32 s0 = tile::smem_addr(smb), sB = (s0 + 1023u) & ~1023u;
  const tile::u32 sV = sB + KC_NBUF * KC_GBUF;               // the v ring
  const tile::u32 sO = sV + KC_VRING * KC_VSLOT;             // o's staging tile (KC_OSV: none)
  const tile::u32 sR = sO + (KC_OSV ? 0 : KC_TILE);          // the raw slots
  const tile::u32 sE = RC == 1 ? sR + KC_RAWN * KC_RAW : sR;  // the empty mbarriers
  unsigned char* const gen = smb + (sB - s0);                // generic address of sB
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int nch = (int)((eos - bos0 + KC_CH - 1) / KC_CH);
  if (tid == 0) {
#pragma unroll
    for (int b = 0; b < KC_NBUF; ++b) {
      // full: RC 1 each producer warp; RC 2 the copier's two arrivals with bytes
      tile::mbar_init(sB + b * KC_GBUF + KC_GOFF_MB, RC == 1 ? 8 : 2);
      tile::mbar_init(sE + 8 * b, 8);  // empty: the consumers' 8 warps
    }
    if (RC == 1) {
      for (int r = 0; r < KC_RAWN; ++r)  // the raw slots: the copies' bytes
        tile::mbar_init(sR + r * KC_RAW + KC_RAW_MB, KC_RAW_PARTS);
      tile::tma_prefetch_desc(mq);
      tile::tma_prefetch_desc(mk);
      tile::tma_prefetch_desc(mg);
    }
    tile::tma_prefetch_desc(mv);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  KC_PROF_START;
  if (RC == 2 && warp >= 8) {  // ---- RC 2: the copier (one thread)
    if (lane == 0)
      for (int n = 0; n < nch; ++n) {
        const long long bos = bos0 + (long long)n * KC_CH;
        const tile::u32 bb = sB + (n % KC_NBUF) * KC_GBUF, vs = sV + (n % KC_VRING) * KC_VSLOT;
        if (n >= KC_NBUF) tile::mbar_wait(sE + 8 * (n % KC_NBUF), (tile::u32)((n / KC_NBUF - 1) & 1));
        kc_issue_gm(bb, qg, kd, w, u, P, gl, slot0 + n, H, h);
        kc_tma_tile(vs, mv, h, bos, bb + KC_GOFF_MB);
      }
    return;
  }
  if (RC == 1 && warp >= 8) {  // ---- the producer, warp by warp
    // Warp pw owns channels 16 pw .. 16 pw + 15 of every row, as two 8-channel columns of
    // 8x8 matrices read with ldmatrix.trans: lane l holds channel 16 pw + 8 j + l / 4 of rows
    // 8 m + 2 (l % 4) and + 1 (m = 0..3), so the gate's sums run down the lane's own pairs
    // and across the 4 lanes of its channel (shuffles), G never leaves registers, and the
    // images go back by stmatrix.trans in the same layout. w's warp needs only its own
    // columns of k e^G: no barrier between the producer's warps; each arrives on "full".
    asm volatile("setmaxnreg.dec.sync.aligned.u32 " KC_STR(KC_RCREGP) ";\n" ::: "memory");
    const int pw = warp - 8;
    const float ga2 = expf(A_log[h]) * 1.4426950408889634f, lb2 = lower_bound * 1.4426950408889634f;
    float oc[2];  // -exp(A_log) dt_bias (log2 units) at the lane's two channels
    tile::u32 lo[2];  // the lane's ldmatrix / stmatrix row address in a [CH][128] image (row lane)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      oc[j] = -ga2 * dt_bias[h * KC_KD + 16 * pw + 8 * j + (lane >> 2)];
      lo[j] = kda::sw128_off<KC_CH>(lane, 16 * pw + 8 * j);
    }
    for (int n = 0; n < nch; ++n) {
      const long long bos = bos0 + (long long)n * KC_CH;
      const int len = (int)min((long long)KC_CH, eos - bos);
      const tile::u32 rs = sR + (n % KC_RAWN) * KC_RAW, bb = sB + (n % KC_NBUF) * KC_GBUF;
      const float* const rn = reinterpret_cast<const float*>(gen + (rs - sB) + KC_RAW_N);
      KC_MARKT(13, 256);
#ifdef KC_PROFILE
      long long kc_w0_ = clock64();
#endif
      tile::mbar_wait(rs + KC_RAW_MB, (tile::u32)((n / KC_RAWN) & 1));  // chunk n's copies
      KC_MARKT(6, 256);
      // (the buffer's "empty" first: the chain runs ahead of the producer, so it is free by
      // now, and each column's images go out as soon as they are formed)
      if (n >= KC_NBUF) tile::mbar_wait(sE + 8 * (n % KC_NBUF), (tile::u32)((n / KC_NBUF - 1) & 1));
      KC_MARKT(9, 256);
      KC_MARKW(16 - 8, kc_w0_);  // (per producer warp: both waits, then its work)
      // (both columns stage by stage, which needs 80 registers (at 72: 0.713 against 0.699 ms
      // geomean with spills, fourteenth session); column by column, the knob KC_RCIL 0, ran
      // 1.7 % slower and was retired 2026-12-03)
      kc_rc_cols<2>(0, rs, bb, gen + (bb - sB), lo, oc, rn, ga2, lb2, len, lane, pw);
      KC_MARKT(7, 256);
      {  // P's pieces (threads 0..127 of the producer), -A diag(b)'s (128..255)
        const int pt = 32 * pw + lane, pp = pt & 127;
        const int so = pt < 128 ? KC_RAW_P : KC_RAW_A, dof = pt < 128 ? KC_GOFF_P : KC_GOFF_U;
        *reinterpret_cast<uint4*>(gen + (bb - sB) + dof + pp * 16) =
            *reinterpret_cast<const uint4*>(gen + (rs - sB) + so + pp * 16);
      }
      kda::fence_async_shared();  // (this warp's images, for the consumers' wgmma; its raw reads, before the slot's next copy)
      __syncwarp();
      if (lane == 0) kc_mbar_arrive(bb + KC_GOFF_MB);
      KC_MARKT(15, 256);
      KC_MARKW(24 - 8, kc_w0_);
    }
    return;
  }
  // ---- the consumers: kc_state_gm2's UA chain, its copies replaced by the producer's buffers
  if (RC == 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 " KC_STR(KC_RCREGC) ";\n" ::: "memory");
  const int eh = warp >> 2, wi = warp & 3;
  const int er0 = 64 * eh + 16 * wi + gq, er1 = er0 + 8;  // this thread's rows of S^T
  constexpr int NI = KC_CH / 8;
  kda::frag_c au[NI];
  tile::u32 vv[KC_CH / 16][4];
  // (RC 1: the raw copies of chunk n once "full" of n - KC_RAWN is seen, the first
  // KC_RAWN chunks' now)
  // (lane 0 of warp w < 6 one box (tensor w / 2, channel half w % 2), warp 6 v, warp 7 the bulk copies)
  // (PIPE beside the intra kernel (flags given), all lanes of warp 7: waits until the intra
  // kernel has published chunk n. The chunks [0, pipe_hz) are known published; when n is past
  // them, the warp reads the flags of the next 32 chunks at once (relaxed), advances pipe_hz by
  // the published run and makes those reads acquire by a fence: one L2 round trip per up to 32
  // chunks where the intra kernel is ahead (one per chunk, lane 0 alone, made the state kernel
  // ~8 % slower: journal, eighteenth session). Called before the wait for "full" that
  // precedes the chunk's issue, where the warp waits anyway.)
  int pipe_hz = 0;
  auto pipe_wait = [&](int n) {
    if constexpr (!kPipe) {
      (void)n;
      return;
    }
    if (n >= nch || n < pipe_hz) return;
    for (;;) {
      const int m = pipe_hz + lane;
      int x = 1;
      if (m < nch) asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];\n" : "=r"(x) : "l"(flags + (slot0 + m) * H + h) : "memory");
      const unsigned ok = __ballot_sync(~0u, x == 1);
      const int run = ok == ~0u ? 32 : __ffs(~ok) - 1;
      if (run > 0) {
        asm volatile("fence.acq_rel.gpu;\n" ::: "memory");  // (the relaxed reads and this fence: acquire)
        asm volatile("fence.proxy.async.global;\n" ::: "memory");  // (the copies that follow are async-proxy reads)
        __syncwarp();
        pipe_hz += run;
        if (n < pipe_hz) return;
      }
      __nanosleep(64);
    }
  };
  auto raw_issue = [&](int n) {
    if (RC == 1 && lane == 0 && n < nch) {
      const tile::u32 rs = sR + (n % KC_RAWN) * KC_RAW;
      const long long bos = bos0 + (long long)n * KC_CH;
      if (warp < 6) {
        const tile::tmap* m = warp < 2 ? mq : warp < 4 ? mk : mg;
        tile::mbar_expect_tx(rs + KC_RAW_MB, KC_TILE / 2);
        tile::tma_load_3d(rs + (warp >> 1) * KC_TILE + (warp & 1) * (KC_TILE / 2), m, 64 * (warp & 1), (int)h, (int)bos,
                          rs + KC_RAW_MB);
      } else {
        kc_rc_issue(warp == 6 ? 3 : 4, rs, sV + (n % KC_VRING) * KC_VSLOT, mq, mk, mg, mv, P, u, gl, slot0 + n, H, h, bos);
      }
    }
  };
  if (kPipe && warp == 7) pipe_wait(min(KC_RAWN, nch - 1));  // (chunks 0 .. KC_RAWN published: see pipe_wait)
#pragma unroll 1
  for (int r = 0; r < KC_RAWN; ++r) raw_issue(r);
  if (nch > 0) tile::mbar_wait(sB + KC_GOFF_MB, 0u);
  raw_issue(KC_RAWN);
  constexpr bool kZ = RC == 1;  // (RC 1 forms no w: see KC_VRING)
  if (!kZ) kc_ua_issue(au, vv, sV, sB + KC_GOFF_U, lane, er0 - gq);  // (unconditional, as in kc_state_gm2)
  kda::frag_c ST[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int d = 8 * j + 2 * tq;
    const float2 a = *reinterpret_cast<const float2*>(S0 + er0 * KC_KD + d);
    const float2 b = *reinterpret_cast<const float2*>(S0 + er1 * KC_KD + d);
    ST[j].x[0] = a.x;
    ST[j].x[1] = a.y;
    ST[j].x[2] = b.x;
    ST[j].x[3] = b.y;
  }
  for (int c = 0; c < nch; ++c) {
    const long long bos = bos0 + (long long)c * KC_CH;
    const int len = (int)min((long long)KC_CH, eos - bos);
    const int cur = c % KC_NBUF;
    const tile::u32 bb = sB + cur * KC_GBUF;
    const float* Gd = reinterpret_cast<const float*>(gen + cur * KC_GBUF + KC_GOFF_G);  // e^{G_last}
    tile::u32 sa[8][4];
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) kda::acc_to_a(sa[ks], ST[2 * ks], ST[2 * ks + 1]);
    kda::frag_c acc[NI];
    const unsigned long long dw = kda::desc_kmajor(bb);
    if (kZ) {
      // Z^T = S^T (k e^G)^T onto zeros (k e^G in w's slot), v^T's fragments read meanwhile
      kda::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 8; ++ks) {
        const unsigned long long db = kda::desc_add(dw, (ks >> 2) * (KC_CH * 128) + (ks & 3) * 32);
        if (ks == 0) kda::wgmma_m64nk16_rs<0, 0>(acc, sa[ks], db);
        else kda::wgmma_m64nk16_rs<0>(acc, sa[ks], db);
      }
      kda::wgmma_commit();
      const tile::u32 vs = sV + (c % KC_VRING) * KC_VSLOT;
#pragma unroll
      for (int p = 0; p < KC_CH / 16; ++p) {  // (kc_ua_issue's matrices: the A fragment's order)
        const int m = lane >> 3, r = 16 * p + 8 * (m >> 1) + (lane & 7), cc = er0 - gq + 8 * (m & 1);
        kda::ldsm_x4_t(vv[p], vs + kda::sw128_off<KC_CH>(r, cc));
      }
      kda::wgmma_wait<0>();
      // X^T = v^T - Z^T (fp32, then fp16 once) as A fragments: pairs in acc_to_a's order
#pragma unroll
      for (int p = 0; p < KC_CH / 16; ++p)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 f = kda::bf16x2_bits_to_f32(vv[p][e]);
          const kda::frag_c& z = acc[2 * p + (e >> 1)];
          vv[p][e] = kda::pack_f16x2(f.x - z.x[2 * (e & 1)], f.y - z.x[2 * (e & 1) + 1]);
        }
      // au = X^T (-A diag(b))^T = -v'^T
      const unsigned long long di = kda::desc_kmajor64(bb + KC_GOFF_U);
      kda::wgmma_fence();
#pragma unroll
      for (int p = 0; p < KC_CH / 16; ++p) {
        if (p == 0) kda::wgmma_m64nk16_rs<0, 0>(au, vv[p], di);
        else kda::wgmma_m64nk16_rs<0>(au, vv[p], kda::desc_add(di, p * 32));
      }
      kda::wgmma_commit();
      kda::wgmma_wait<0>();
    } else {
      kda::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 8; ++ks)
        kda::wgmma_m64nk16_rs<0>(au, sa[ks], kda::desc_add(dw, (ks >> 2) * (KC_CH * 128) + (ks & 3) * 32));
      kda::wgmma_commit();
      kda::wgmma_wait<0>();
    }
    KC_MARKT(14, 0);
    tile::u32 va[KC_CH / 16][4];
    kc_ua_vprime(acc, au, len, tq);
#pragma unroll
    for (int ks = 0; ks < KC_CH / 16; ++ks) kda::acc_to_a(va[ks], acc[2 * ks], acc[2 * ks + 1]);
    kc_gm2_bc<true>(ST, acc, sa, va, Gd, bb, tq);
    KC_MARKT(8, 0);
    {  // the next chunk's -u^T behind B and C (unconditional: see kc_state_gm2)
      const int nx = (c + 1) % KC_NBUF;
#ifdef KC_PROFILE
      long long kc_c0_ = clock64();
#endif
      if (kPipe && warp == 7) pipe_wait(c + 1 + KC_RAWN);
      if (c + 1 < nch) tile::mbar_wait(sB + nx * KC_GBUF + KC_GOFF_MB, (tile::u32)(((c + 1) / KC_NBUF) & 1));
      KC_MARKW(32, kc_c0_);  // (per consumer warp: the wait for "full")
      raw_issue(c + 1 + KC_RAWN);
      KC_MARKT(10, 0);
      if (!kZ) kc_ua_issue(au, vv, sV + ((c + 1) % KC_VRING) * KC_VSLOT, sB + nx * KC_GBUF + KC_GOFF_U, lane, er0 - gq);
    }
    if (kZ) kda::wgmma_wait<1>();  // B is done (RC 1: no -u^T behind it)
    else kda::wgmma_wait<2>();
    kc_o_out((KC_OSV ? sV + (c % KC_VRING) * KC_VSLOT : sO) + eh * (KC_CH * 128), acc, scale, er0, eh, tq, tid, len, o,
             bos, H, h);
    if (kZ) kda::wgmma_wait<0>();  // C is done: this warp is through with the buffer
    else kda::wgmma_wait<1>();
    kda::fence_async_shared();  // (its ordinary reads of the buffer and of v's slot, before their next copies)
    __syncwarp();
    if (lane == 0) kc_mbar_arrive(sE + 8 * cur);
    KC_MARKT(12, 0);
  }
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    *reinterpret_cast<float2*>(end + er0 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[0], ST[j].x[1]);
    *reinterpret_cast<float2*>(end + er1 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[2], ST[j].x[3]);
  }
}
#endif  // RC
#if GM == 2
#define KC_CHAIN kc_state_gm2
#else
#define KC_CHAIN kc_state_gm
#endif

// SEG 0: grid (NSEQ*H, 1, 1) (kc_item: one block per (sequence, head), longest first).
// SEG > 0: grid ((NSEQ + floor(T/(CH SEG))) * H, 1, 1), one block per (segment slot, head):
// the segment's chunks from its start state (h0 for segment 0, else hstart, written by
// kda_chunk_fixup), the final state by the last segment. Block 256 (two warpgroups), smem
// KC_STATE_SMEM bytes.
extern "C" __global__ void __launch_bounds__(RC == 1 ? 512 : RC == 2 ? 288 : 256, 1) kda_chunk_state(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale
#if SEG > 0
    , const float* __restrict__ hstart
#else
    , const __nv_bfloat16* __restrict__ vin  // v (read with UA 1 only)
    , const float* __restrict__ A_log, const float* __restrict__ dt_bias, float lower_bound,
    const __grid_constant__ tile::tmap map_q, const __grid_constant__ tile::tmap map_k,
    const __grid_constant__ tile::tmap map_g, const __grid_constant__ tile::tmap map_v  // (RC 1 only: tmap:NAME:64x1x32:128)
#endif
    ) {
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < KC_STATE_SMEM) __trap();  // spec.json smem too small?
  (void)T;
#if SEG > 0
  (void)order;
  const long long sslot = blockIdx.x / H, h = blockIdx.x % H, unit = (long long)KC_CH * SEG;
  long long n, seg;
  if (!kc_slot(cu, NSEQ, sslot, &n, &seg, unit, true)) return;
  const long long bos0 = cu[n] + seg * unit, eos = min(cu[n + 1], bos0 + unit);
  const float* S0 = seg == 0 ? h0 + (n * H + h) * KC_KD * KC_KD : hstart + (sslot * H + h) * KC_KD * KC_KD;
  float* end = eos == cu[n + 1] ? ht + (n * H + h) * KC_KD * KC_KD : nullptr;
  KC_CHAIN<false>(S0, true, false, qg, kd, w, u, P, gl, o, end, bos0, eos, n + cu[n] / KC_CH + seg * SEG, H, h,
                     scale);
#else
  (void)NSEQ;
  int n32, h32;
  kc_item(order, H, &n32, &h32);
  const long long n = n32, h = h32;
  const long long bos0 = cu[n], eos = cu[n + 1];
#if RC >= 1
  if (blockDim.x != (RC == 1 ? 512 : 288)) __trap();  // spec.json's block: the producer's warps are missing
  (void)vin;
  kc_state_rc<false>(h0 + (n * H + h) * KC_KD * KC_KD, qg, kd, w, u, P, gl, o, ht + (n * H + h) * KC_KD * KC_KD,
                     bos0, eos, n + bos0 / KC_CH, H, h, scale, &map_q, &map_k, &map_g, &map_v, A_log, dt_bias,
                     lower_bound);
#elif UA
  (void)A_log;
  (void)dt_bias;
  (void)lower_bound;
  KC_CHAIN<false>(h0 + (n * H + h) * KC_KD * KC_KD, true, false, qg, kd, w, u, P, gl, o,
                     ht + (n * H + h) * KC_KD * KC_KD, bos0, eos, n + bos0 / KC_CH, H, h, scale, vin, &map_v);
#else
  (void)A_log;
  (void)dt_bias;
  (void)lower_bound;
  (void)vin;
  KC_CHAIN<false>(h0 + (n * H + h) * KC_KD * KC_KD, true, false, qg, kd, w, u, P, gl, o,
                     ht + (n * H + h) * KC_KD * KC_KD, bos0, eos, n + bos0 / KC_CH, H, h, scale);
#endif
#endif
}
#if PIPE
// PIPE, beside the intra kernel (kda_chunk_state_beside, on the side stream): one block per
// (sequence, head) by blockIdx (the order array is being written beside it), chunk n's P,
// -A diag(b) and norms read once flags[slot * H + h] is set (see PIPE). Arguments: as
// kda_chunk_state's, then flags.
#define TESSERA_SMEM_kda_chunk_state_beside KC_STATE_SMEM  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(512, 1) kda_chunk_state_beside(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale, const __nv_bfloat16* __restrict__ vin, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, float lower_bound, const __grid_constant__ tile::tmap map_q,
    const __grid_constant__ tile::tmap map_k, const __grid_constant__ tile::tmap map_g,
    const __grid_constant__ tile::tmap map_v, const int* flags) {
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < KC_STATE_SMEM) __trap();  // spec.json smem too small?
  if (blockDim.x != 512) __trap();  // spec.json's block: the producer's warps are missing
  (void)T;
  (void)NSEQ;
  (void)order;
  (void)vin;
  const long long n = blockIdx.x / H, h = blockIdx.x % H;
  const long long bos0 = cu[n], eos = cu[n + 1];
  kc_state_rc<true>(h0 + (n * H + h) * KC_KD * KC_KD, qg, kd, w, u, P, gl, o, ht + (n * H + h) * KC_KD * KC_KD,
                    bos0, eos, n + bos0 / KC_CH, H, h, scale, &map_q, &map_k, &map_g, &map_v, A_log, dt_bias,
                    lower_bound, flags);
}
#endif
#if SEG == 0
#define KC_STATE_HAS_V 1  // (for benchmarks/kda/dev: SEG 0's state kernel takes v, q, k, g, A_log, dt_bias, lower_bound last)
#define KC_STATE_HAS_QKG 1
#if RC >= 1
#undef KC_STATE_THREADS
#define KC_STATE_THREADS (RC == 1 ? 512 : 288)
#endif
#endif

#if SEG > 0
// ---- The sequence split (SEG > 0). A sequence's chunks form segments of SEG chunks.
// The update is affine in the state, S <- A_c S + B_c with A_c = Diag(e^{G_last}) -
// kd^T w, so (algebra checked in float64 by tests/kda,
// KdaReference.SequenceSplitWithStateHandOffIsExact):
//  1. kda_chunk_seg, every segment but the last in parallel, state only (no o): its end
//     state from its start as if that were 0 (segment 0: from h0), E_j; and (j > 0) its
//     transition M_j = prod A_c, the same chain from the identity with u = 0.
//  2. kda_chunk_fixup: the true start states in order, S_1 = E_0, S_{j+1} = E_j + M_j S_j.
//  3. kda_chunk_state: every segment in parallel from its true start state, as without
//     the split; the last writes the final state.
// The chain's latency goes from C chunks to about 2 SEG chunks plus the fix-up, for
// about 1.6 times the state kernel's work; it pays where the (sequence, head) chains are
// fewer than the SMs.

// grid ((NSEQ + floor(T/(CH SEG))) * H * 2, 1, 1): block x = (segment slot * H + head) * 2
// + part; part 0 the end state E_j (hseg), part 1 the transition M_j (mseg, j > 0), both
// [V][K] like h0 (M_j[d][d'] at d' * 128 + d). The last segment of a sequence is skipped.
extern "C" __global__ void __launch_bounds__(256, 1) kda_chunk_seg(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ kd,
    const __half* __restrict__ w, const __half* __restrict__ u, const float* __restrict__ gl,
    float* __restrict__ hseg, float* __restrict__ mseg, long long H, long long NSEQ) {
  if (tile::dynamic_smem_bytes() < KC_STATE_SMEM) __trap();  // spec.json smem too small?
  const long long part = blockIdx.x & 1, sslot = (blockIdx.x >> 1) / H, h = (blockIdx.x >> 1) % H;
  const long long unit = (long long)KC_CH * SEG;
  long long n, seg;
  if (!kc_slot(cu, NSEQ, sslot, &n, &seg, unit)) return;
  const long long bos0 = cu[n] + seg * unit, eos = min(cu[n + 1], bos0 + unit);
  if (eos == cu[n + 1] || (part == 1 && seg == 0)) return;  // the last segment; segment 0 has no transition
  float* end = (part == 0 ? hseg : mseg) + (sslot * H + h) * KC_KD * KC_KD;
  KC_CHAIN<true>(h0 + (n * H + h) * KC_KD * KC_KD, part == 0 && seg == 0, part == 1, nullptr, kd, w, u, nullptr, gl,
                    nullptr, end, bos0, eos, n + cu[n] / KC_CH + seg * SEG, H, h, 1.f);
}

// grid (NSEQ*H, 8), block 256, smem KC_FIX_SMEM: the start states S_j (hstart, [V][K])
// of a sequence's segments j >= 1, for the 16 value columns 16*blockIdx.y.. (columns are
// independent); fp32 on CUDA cores, one K x K x 16 product per segment, M_{j+1} copied
// to shared memory while M_j is applied.
#define KC_FIX_SMEM (2 * KC_KD * KC_KD * 4 + KC_KD * 16 * 4)
#define TESSERA_SMEM_kda_chunk_fixup KC_FIX_SMEM  // checked against spec.json by tests/core/templates_test
extern "C" __global__ void __launch_bounds__(256) kda_chunk_fixup(const long long* __restrict__ cu,
                                                                  const float* __restrict__ hseg,
                                                                  const float* __restrict__ mseg,
                                                                  float* __restrict__ hstart, long long H,
                                                                  long long NSEQ) {
  (void)NSEQ;
  if (tile::dynamic_smem_bytes() < KC_FIX_SMEM) __trap();  // spec.json smem too small?
  extern __shared__ __align__(16) float smf[];
  float* Mb = smf;                               // two buffers of M_j [d'][d]
  float(*Sc)[16] = reinterpret_cast<float(*)[16]>(smf + 2 * KC_KD * KC_KD);  // S_j[d][e], the block's 16 columns
  const long long n = blockIdx.x / H, h = blockIdx.x % H, unit = (long long)KC_CH * SEG;
  const long long nseg = (cu[n + 1] - cu[n] + unit - 1) / unit;
  if (nseg <= 1) return;
  const long long s0 = n + cu[n] / unit;
  const int tid = threadIdx.x, d = tid & 127, c0 = 8 * (tid >> 7), eb = 16 * blockIdx.y;
  auto fetch_m = [&](long long j) {  // M_j into buffer j & 1 (j = 1 .. nseg - 2)
    const float* src = mseg + ((s0 + j) * H + h) * (KC_KD * KC_KD);
    float* dst = Mb + (j & 1) * (KC_KD * KC_KD);
    for (int idx = tid; idx < KC_KD * KC_KD / 4; idx += 256)
      tile::cp_async16(tile::smem_addr(dst + 4 * idx), src + 4 * idx, 16u);
    tile::cp_async_commit();
  };
  if (nseg > 2) fetch_m(1);
  const float* e0p = hseg + (s0 * H + h) * (KC_KD * KC_KD);  // S_1 = E_0
#pragma unroll
  for (int el = 0; el < 8; ++el) Sc[d][c0 + el] = e0p[(eb + c0 + el) * KC_KD + d];
  __syncthreads();
  for (long long j = 1;; ++j) {
    float* hs = hstart + ((s0 + j) * H + h) * (KC_KD * KC_KD);  // [e][d]
#pragma unroll
    for (int el = 0; el < 8; ++el) hs[(eb + c0 + el) * KC_KD + d] = Sc[d][c0 + el];
    if (j + 1 >= nseg) break;
    // S_{j+1} = E_j + M_j S_j
    if (j + 2 < nseg) {
      fetch_m(j + 1);
      tile::cp_async_wait<1>();
    } else {
      tile::cp_async_wait<0>();
    }
    __syncthreads();  // M_j is in its buffer
    const float* Ej = hseg + ((s0 + j) * H + h) * (KC_KD * KC_KD);
    const float* M = Mb + (j & 1) * (KC_KD * KC_KD);
    float acc[8];
#pragma unroll
    for (int el = 0; el < 8; ++el) acc[el] = Ej[(eb + c0 + el) * KC_KD + d];
#pragma unroll 8
    for (int dp = 0; dp < KC_KD; ++dp) {
      const float m = M[dp * KC_KD + d];
      const float4 a = *reinterpret_cast<const float4*>(&Sc[dp][c0]);
      const float4 b = *reinterpret_cast<const float4*>(&Sc[dp][c0 + 4]);
      acc[0] = fmaf(m, a.x, acc[0]);
      acc[1] = fmaf(m, a.y, acc[1]);
      acc[2] = fmaf(m, a.z, acc[2]);
      acc[3] = fmaf(m, a.w, acc[3]);
      acc[4] = fmaf(m, b.x, acc[4]);
      acc[5] = fmaf(m, b.y, acc[5]);
      acc[6] = fmaf(m, b.z, acc[6]);
      acc[7] = fmaf(m, b.w, acc[7]);
    }
    __syncthreads();  // every thread has read S_j and M_j
#pragma unroll
    for (int el = 0; el < 8; ++el) Sc[d][c0 + el] = acc[el];
    __syncthreads();
  }
}
#endif  // SEG > 0
#endif

