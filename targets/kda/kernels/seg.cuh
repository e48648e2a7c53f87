// targets/kda/kernels/seg.cuh — the sequence split: kda_chunk_seg and kda_chunk_fixup.
// Their bodies (and that of kda_chunk_state with the split) as templates over the parameters;
// the entry points are in targets/kda/kda_chunk_seg.cu. Included after kernels/state_wgmma.cuh.
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
// RC 1 (CH 32, UA 1): every chain is kc_state_rc's (kernels/state_rc.cuh), its producer warps
// forming the chunk's images from q, k, g (the intra kernel writes only P, -A diag(b) and the
// row norms): E_j its kc_end form (no q, no P), M_j its kc_trans form (no v either), the
// state kernel's its kc_full form. Blocks of kc_state_threads(1) = 512.

// The segment length in chunks: SEG (kNS 0), or, with NSEG = kNS > 0, the mean sequence's chunks
// split into kNS segments, max(1, ceil(ceil(T / (NSEQ CH)) / NSEG)) (T = cu[NSEQ] - cu[0]): the
// same value as spec.json's let SEGC, which sizes the grids and the scratch. A count instead of
// a length lets each shape have the segments that fill the SMs' rounds (journal 2026-12-04,
// twenty-ninth session: three at H 32, where no power-of-two SEG gives three).
template <class C, int kNS>
__device__ __forceinline__ long long kc_seg_chunks(const long long* __restrict__ cu, long long NSEQ) {
  if constexpr (kNS == 0) {
    return C::seg;
  } else {
    const long long per = (cu[NSEQ] - cu[0] + NSEQ * C::ch - 1) / (NSEQ * C::ch);
    return max(1LL, (per + kNS - 1) / kNS);
  }
}

// grid ((NSEQ + floor(T/(CH SEGC))) * H * 2, 1, 1): block x = (segment slot * H + head) * 2
// + part; part 0 the end state E_j (hseg), part 1 the transition M_j (mseg, j > 0), both
// [V][K] like h0 (M_j[d][d'] at d' * 128 + d). The last segment of a sequence is skipped.
// (The body of kda_chunk_seg: block kc_state_threads(RC), one block per SM; A_log, dt_bias,
// lower_bound and the tensor maps of q, k, g, v (tmap:NAME:64x1x32:128): what RC's producer reads.)
template <class C, int kNS>
__device__ __forceinline__ void kc_seg(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ kd,
    const __half* __restrict__ w, const __half* __restrict__ u, const float* __restrict__ gl,
    float* __restrict__ hseg, float* __restrict__ mseg, long long H, long long NSEQ, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, float lower_bound, const tile::tmap* mq, const tile::tmap* mk,
    const tile::tmap* mg, const tile::tmap* mv) {
  if (tile::dynamic_smem_bytes() < WgmmaSmem<C>::bytes) __trap();  // spec.json smem too small?
  const long long part = blockIdx.x & 1, sslot = (blockIdx.x >> 1) / H, h = (blockIdx.x >> 1) % H;
  const long long segc = kc_seg_chunks<C, kNS>(cu, NSEQ), unit = (long long)C::ch * segc;
  long long n, seg;
  if (!kc_slot(cu, NSEQ, sslot, &n, &seg, unit)) return;
  const long long bos0 = cu[n] + seg * unit, eos = min(cu[n + 1], bos0 + unit);
  if (eos == cu[n + 1] || (part == 1 && seg == 0)) return;  // the last segment; segment 0 has no transition
  float* end = (part == 0 ? hseg : mseg) + (sslot * H + h) * KC_KD * KC_KD;
  const long long slot0 = n + cu[n] / C::ch + seg * segc;
  if constexpr (C::rc == 1) {
    if (blockDim.x != 512) __trap();  // spec.json's block: the producer's warps are missing
    const float* S0 = seg == 0 ? h0 + (n * H + h) * KC_KD * KC_KD : nullptr;  // (kc_end: null is 0)
    if (part == 0)
      kc_state_rc<C, false, kc_end>(S0, nullptr, nullptr, nullptr, u, nullptr, gl, nullptr, end, bos0, eos, slot0, H, h,
                                    1.f, mq, mk, mg, mv, A_log, dt_bias, lower_bound);
    else
      kc_state_rc<C, false, kc_trans>(nullptr, nullptr, nullptr, nullptr, u, nullptr, gl, nullptr, end, bos0, eos, slot0,
                                      H, h, 1.f, mq, mk, mg, mv, A_log, dt_bias, lower_bound);
  } else {
    (void)A_log, (void)dt_bias, (void)lower_bound, (void)mq, (void)mk, (void)mg, (void)mv;
    kc_chain<C, true>(h0 + (n * H + h) * KC_KD * KC_KD, part == 0 && seg == 0, part == 1, nullptr, kd, w, u, nullptr,
                      gl, nullptr, end, bos0, eos, slot0, H, h, 1.f);
  }
}

// grid (NSEQ*H, 8), block 256, smem kc_fix_smem: the start states S_j (hstart, [V][K])
// of a sequence's segments j >= 1, for the 16 value columns 16*blockIdx.y.. (columns are
// independent); fp32 on CUDA cores, one K x K x 16 product per segment, M_{j+1} copied
// to shared memory while M_j is applied.
// (The body of kda_chunk_fixup: block 256.)
enum : int { kc_fix_smem = 2 * KC_KD * KC_KD * 4 + KC_KD * 16 * 4 };
template <class C, int kNS>
__device__ __forceinline__ void kc_fixup(const long long* __restrict__ cu, const float* __restrict__ hseg,
                                         const float* __restrict__ mseg, float* __restrict__ hstart, long long H,
                                         long long NSEQ) {
  (void)NSEQ;
  if (tile::dynamic_smem_bytes() < kc_fix_smem) __trap();  // spec.json smem too small?
  extern __shared__ __align__(16) float smf[];
  float* Mb = smf;                               // two buffers of M_j [d'][d]
  float(*Sc)[16] = reinterpret_cast<float(*)[16]>(smf + 2 * KC_KD * KC_KD);  // S_j[d][e], the block's 16 columns
  const long long n = blockIdx.x / H, h = blockIdx.x % H;
  // (SEG's expression as it was: the same constant through kc_seg_chunks changed its code)
  long long unit = (long long)C::ch * C::seg;
  if constexpr (kNS > 0) unit = (long long)C::ch * kc_seg_chunks<C, kNS>(cu, NSEQ);
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

// The body of kda_chunk_state with the sequence split: grid ((NSEQ + floor(T/(CH SEGC))) * H, 1,
// 1), one block (kc_state_threads(RC) threads) per (segment slot, head): the segment's chunks from its start
// state (h0 for segment 0, else hstart, written by kda_chunk_fixup), the final state by the
// last segment; smem WgmmaSmem::bytes.
template <class C, int kNS>
__device__ __forceinline__ void kc_state_seg(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale, const float* __restrict__ hstart, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, float lower_bound, const tile::tmap* mq, const tile::tmap* mk,
    const tile::tmap* mg, const tile::tmap* mv) {
  static_assert(C::seg > 0, "without the sequence split the state kernel is kc_state_wgmma");
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < WgmmaSmem<C>::bytes) __trap();  // spec.json smem too small?
  (void)T;
  (void)order;
  const long long sslot = blockIdx.x / H, h = blockIdx.x % H, segc = kc_seg_chunks<C, kNS>(cu, NSEQ),
                  unit = (long long)C::ch * segc;
  long long n, seg;
  if (!kc_slot(cu, NSEQ, sslot, &n, &seg, unit, true)) return;
  const long long bos0 = cu[n] + seg * unit, eos = min(cu[n + 1], bos0 + unit);
  const float* S0 = seg == 0 ? h0 + (n * H + h) * KC_KD * KC_KD : hstart + (sslot * H + h) * KC_KD * KC_KD;
  float* end = eos == cu[n + 1] ? ht + (n * H + h) * KC_KD * KC_KD : nullptr;
  const long long slot0 = n + cu[n] / C::ch + seg * segc;
  if constexpr (C::rc == 1) {
    if (blockDim.x != 512) __trap();  // spec.json's block: the producer's warps are missing
    kc_state_rc<C, false>(S0, qg, kd, w, u, P, gl, o, end, bos0, eos, slot0, H, h, scale, mq, mk, mg, mv, A_log, dt_bias,
                          lower_bound);
  } else {
    (void)A_log, (void)dt_bias, (void)lower_bound, (void)mq, (void)mk, (void)mg, (void)mv;
    kc_chain<C, false>(S0, true, false, qg, kd, w, u, P, gl, o, end, bos0, eos, slot0, H, h, scale);
  }
}
