// targets/kda/kernels/common.cuh — helpers of every kernel family: stores, fragment moves, chunk-slot
// and image indexing, the state kernels' longest-first order, the intra kernels' inverse and gate.
// Included by the templates' entry files (targets/kda/kda_chunk_*.cu) after kernels/config.cuh.
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
template <class C>
__device__ __forceinline__ long long kc_idx(long long bos, long long slot, long long H, long long h, int i, int d) {
  if constexpr (C::gm >= 1)
    return (slot * H + h) * (C::ch * KC_KD) + (kda::sw128_off<C::ch>(i, d) >> 1);
  else
    return ((bos + i) * H + h) * KC_KD + d;
}
template <class C>
__device__ __forceinline__ int kc_pidx(int i, int j) {
  if constexpr (C::gm >= 1)
    return (int)((C::ch == 32 ? kda::sw_off<64>(i, j) : kda::sw128_off<C::ch>(i, j)) >> 1);  // CH 32: [32][32] sw64
  else
    return i * C::ch + j;
}

// Slot -> (sequence n, piece c) for pieces of `unit` tokens (chunks, or SEG-chunk
// segments): sequence n owns slots n + floor(cu[n]/unit) + c. False for a slot past its
// sequence's last piece; with first_if_empty, an empty sequence keeps its piece 0.
__device__ bool kc_slot(const long long* cu, long long NSEQ, long long slot, long long* n_out,
                        long long* c_out, long long unit, bool first_if_empty = false) {
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
template <class C>
__device__ void kc_order(const long long* __restrict__ cu, long long NSEQ, long long T, int* __restrict__ order,
                         int* cnt) {
  const int nt = blockDim.x, tid = threadIdx.x;
  const int nb = (int)min(T / C::ch + 2, 8192LL);  // keys: nb - 1 - chunks (clamped), longest first
  int* part = cnt + 8192;                           // [nt] per-thread bin-segment sums
  for (int b = tid; b < nb; b += nt) cnt[b] = 0;
  __syncthreads();
  for (long long n = tid; n < NSEQ; n += nt)
    atomicAdd(&cnt[nb - 1 - (int)min((cu[n + 1] - cu[n] + C::ch - 1) / C::ch, (long long)nb - 1)], 1);
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
    order[atomicAdd(&cnt[nb - 1 - (int)min((cu[n + 1] - cu[n] + C::ch - 1) / C::ch, (long long)nb - 1)], 1)] = (int)n;
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
#define KC_LDA16 72  // row stride (fp16 elements) of A16: conflict-free ldmatrix
#define KC_LDX 40    // row stride (floats) of the inverse's level-1/2 scratch: conflict-free B fragments
// A tf32 operand: TRN 1 hands the tensor core the fp32 bits (it truncates the low 13),
// TRN 0 rounds them first.
template <class C>
__device__ __forceinline__ tile::u32 kc_tf(float x) {
  if constexpr (C::trn == 1)
    return __float_as_uint(x);
  else
    return kda::to_tf32_fast(x);
}

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
