// targets/kda/kernels/intra64_phases.cuh — the CH 64 intra kernel's shared-memory layout
// (Intra64Smem), its block (Intra64Block) and its phases as device functions (kc_intra64_load,
// _gate (over _fv, _la_zeros), _pl (over _pl_zero), _qk (over _qk_staged, _qk_rows), _wu,
// _wu_out (over _wu_images, _wu_rows, _wu_direct), _inverse; phase 2's sums _pl_part, _pl_take,
// _pl_out and v's copy _v, at the end of the file); the body that runs them is kc_intra64, in
// kernels/intra64.cuh, which includes this file. Both are templates over the parameters
// (template <class C>, C a KcParams); included after kernels/config.cuh and kernels/common.cuh.

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
// The shared-memory layout above, byte offsets (enumerators: see ChunkBuf in state_wgmma.cuh).
template <class C>
struct Intra64Smem {
  enum : int {
    gc = 0,                          // f32 [CH][LDG]
    la = gc + 4 * C::ch * KC_LDG,    // f32 [CH][LDL]
    qs = la + 4 * C::ch * KC_LDL,    // bf16 [CH][LDB] (then Xs, A16)
    ks = qs + 2 * C::ch * KC_LDB,    // bf16 [CH][LDB]
    vs = ks + 2 * C::ch * KC_LDB,    // [CH][LDB] x 2 bytes
    rq = vs + 2 * C::ch * KC_LDB,    // f32 [CH]
    rk = rq + 4 * C::ch,
    bs = rk + 4 * C::ch,
    xp = bs + 4 * C::ch,             // f32 [20][32][4]
    bytes = xp + 4 * 2560,
  };
  static_assert(bytes == 115456, "two blocks a SM: 2 x (115,456 + 1,024 reserved) <= 233,472");
};
// The CH 64 intra kernel's block as its phases see it: its shared-memory tiles (Intra64Smem:
// Gs is LA's first use, Xs Qs's phase-3 one), its chunk and its thread's indices (lr, lc8: the
// 16-byte piece of the chunk's row copies; rbase, rstride: those rows' element offsets).
struct Intra64Block {
  float* Gc;
  float* LA;
  __nv_bfloat16 *Gs, *Qs, *Ks, *Vs;
  float *rq, *rk, *bs, *Xp, *Xs;
  long long slot, h, H, bos;
  int len;
  int tid, warp, lane, gq, tq;
  int lr, lc8;
  long long rbase, rstride;
};

// Phase 0: the chunk's q, k, g rows into shared memory, all in flight (v is copied later, after
// P/L, into Vs, which holds KB until then); sigmoid(beta) into bs; with GM 0 the zeros of P above
// the diagonal blocks (GM >= 1 stages them with the rest of P). The caller waits and syncs.
template <class C>
__device__ __forceinline__ void kc_intra64_load(const Intra64Block& b, const __nv_bfloat16* __restrict__ q,
                                                const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ g,
                                                const __nv_bfloat16* __restrict__ beta, typename C::elem* __restrict__ Pc) {
  constexpr bool kPStage = C::gm >= 1;
  __nv_bfloat16* const Gs = b.Gs;
  __nv_bfloat16* const Qs = b.Qs;
  __nv_bfloat16* const Ks = b.Ks;
  float* const bs = b.bs;
  const long long h = b.h;
  const long long H = b.H;
  const long long bos = b.bos;
  const int len = b.len;
  const int tid = b.tid;
  const int lr = b.lr;
  const int lc8 = b.lc8;
  const long long rbase = b.rbase;
  const long long rstride = b.rstride;
  // Thread = 16-byte piece lc8 of rows lr + 16 it; rows past the sequence are zero-filled by
  // the copy itself (source size 0, from the chunk's first row), so the loop has no branch.
#pragma unroll
  for (int tsr = 0; tsr < 3; ++tsr) {  // v is copied later (after P/L) into Vs, which holds KB until then
    // g first, in its own group: the gate and its cumulative sum start while k and q land.
    const __nv_bfloat16* src = (tsr == 0 ? g : tsr == 1 ? k : q) + rbase;
    const tile::u32 dst = tile::smem_addr(tsr == 0 ? Gs : tsr == 1 ? Ks : Qs) + (lr * KC_LDB + lc8) * 2;
#pragma unroll
    for (int it = 0; it < C::ch / 16; ++it) {
      const int i = lr + 16 * it;
      tile::cp_async16(dst + it * 16 * KC_LDB * 2, src + (i < len ? i * rstride : 0), i < len ? 16u : 0u);
    }
    if (tsr == 0) kda::cp_async_commit();
  }
  kda::cp_async_commit();
  if (tid < C::ch) bs[tid] = tid < len ? 1.0f / (1.0f + expf(-kc_bf(beta, (bos + tid) * H + h))) : 0.f;
  // P is 0 above the diagonal 16x16 blocks: rows 16I..16I+15, columns 16(I+1)..63 (staged
  // with the rest of P instead, with GM >= 1).
  for (int idx = tid; idx < (kPStage ? 0 : 384); idx += 256) {
    int i, c4;
    if (idx < 192) { i = idx / 12; c4 = 4 + idx % 12; }
    else if (idx < 320) { i = 16 + (idx - 192) / 8; c4 = 8 + (idx - 192) % 8; }
    else { i = 32 + (idx - 320) / 4; c4 = 12 + (idx - 320) % 4; }
    if (i < len) kc_st4(Pc + kc_pidx<C>(i, 4 * c4), 0.f, 0.f, 0.f, 0.f);
  }
}

// Phase 1's zeros of LA above the diagonal 16x16 blocks (the blocked inverse sums over them):
// rows 16I..16I+15, columns 16(I+1)..63.
template <class C>
__device__ __forceinline__ void kc_intra64_la_zeros(const Intra64Block& b) {
  float* const LA = b.LA;
  const int tid = b.tid;
  for (int idx = tid; idx < 384; idx += 256) {
    int i, c4;
    if (idx < 192) { i = idx / 12; c4 = 4 + idx % 12; }
    else if (idx < 320) { i = 16 + (idx - 192) / 8; c4 = 8 + (idx - 192) % 8; }
    else { i = 32 + (idx - 320) / 4; c4 = 12 + (idx - 320) % 4; }
    *reinterpret_cast<float4*>(LA + i * KC_LDL + 4 * c4) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// Phase 1's factor vectors Fv (fp16, at row 48 of Vs): e^{G_{16I} - G_{16(J+1)}} (<= 1) on the
// channel pair cpc for (I, J) = (2, 0), (3, 0), (3, 1), from the quarter totals totq and first
// gates gfq (Xp).
template <class C>
__device__ __forceinline__ void kc_intra64_fv(__nv_bfloat16* Vs, const float* totq, const float* gfq, int cpc) {
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

// Phase 1: the gate and its cumulative sum G (log2 units) into Gc; the row norms 1/|q|, 1/|k|
// into rq, rk; KB and Fv (Vs) for the fp16 P/L units; zeros of LA above the diagonal blocks.
// One barrier inside; the caller syncs after.
template <class C>
__device__ __forceinline__ void kc_intra64_gate(const Intra64Block& b, const float* __restrict__ A_log,
                                                const float* __restrict__ dt_bias, float lower_bound) {
  float* const Gc = b.Gc;
  __nv_bfloat16* const Gs = b.Gs;
  __nv_bfloat16* const Qs = b.Qs;
  __nv_bfloat16* const Ks = b.Ks;
  __nv_bfloat16* const Vs = b.Vs;
  float* const rq = b.rq;
  float* const rk = b.rk;
  float* const Xp = b.Xp;
  const long long h = b.h;
  const int len = b.len;
  const int tid = b.tid;
  const int warp = b.warp;
  const int lane = b.lane;
  // Log-decays are kept in log2 units (G2 = G log2 e) so every e^(a-b) is ex2(a2-b2).
  const float ga2 = expf(A_log[b.h]) * 1.4426950408889634f;
  const float lb2 = lower_bound * 1.4426950408889634f;
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
  {  // row norms (here: as a function, given the block or its values, they changed the sm_90a code)
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
    } else {  // the factor vectors Fv
      kc_intra64_fv<C>(Vs, totq, gfq, cpc);
    }
  }
  kc_intra64_la_zeros<C>(b);  // LA above the diagonal blocks is 0
}

// Phase 2's accumulators, zeroed.
template <class C>
__device__ __forceinline__ void kc_intra64_pl_zero(kda::frag_c (&accP)[8], kda::frag_c (&accL)[8]) {
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    kda::zero(accP[s]);
    kda::zero(accL[s]);
  }
}

// Phase 2, the products: P and L (tf32 mma on the diagonal blocks, fp16 off them). Warp = (row
// block I = warp/2, channel half kh = warp%2): all 2(I+1) units (J, nt) of row block I (16 rows x
// 8 columns 16J+8nt.., J <= I) over the channels 64kh..64kh+63, reference row 16I (off the
// diagonal: 16(J+1), see KB), so every A element (q, k e^{G_i-G_r}) is built once; the partial
// sums into accP, accL (units s: 0, 1 the diagonal block, 2 + 2J + nt the blocks J < I). Lane t
// takes the channel pair c, c+1 (c = 8ks+2t) as k = t, t+4 of the m16n8k8 step: 8-byte G loads
// and 4-byte bf16x2 loads (the k order inside a step is free if A and B agree). Diagonal B
// fragments are lane-local: column j = 16I + 8nt + g is the lane's own A row (i0 or i1), so
// B = k_j e^{G_r - G_j} comes from the A build's loads. Off-diagonal units (J < I) on fp16
// m16n8k16: B = KB rows 16J.. (k_j e^{G_{16(J+1)}-G_j}) by ldmatrix, times e^{G_{16I}-G_{16(J+1)}}
// per channel (Fv) for I > J + 1; A = the same fp32 values as the tf32 A fragments, packed to
// fp16 (both factors <= 1: fp16 range). (Row blocks (0, 3) and (1, 2) paired on a scheduler,
// warps w and w+4, made the kernel 3% slower.) The products' channel steps stay in this body:
// any part of them as a function of its own (the off-diagonal units, their B fragments, a whole
// step) changed the sm_90a code, 2026-12-04.
template <class C>
__device__ __forceinline__ void kc_intra64_pl(const Intra64Block& b, kda::frag_c (&accP)[8], kda::frag_c (&accL)[8]) {
  float* const Gc = b.Gc;
  __nv_bfloat16* const Qs = b.Qs;
  __nv_bfloat16* const Ks = b.Ks;
  __nv_bfloat16* const Vs = b.Vs;
  const int warp = b.warp;
  const int lane = b.lane;
  const int gq = b.gq;
  const int tq = b.tq;
  const int I = warp >> 1, kh = warp & 1;
  const int r = 16 * I, i0 = r + gq, i1 = i0 + 8;
  kc_intra64_pl_zero<C>(accP, accL);
  // The off-diagonal units' B: the lane's ldmatrix address in KB, and Fv.
  const tile::u32 kbl = tile::smem_addr(Vs) +
                        ((8 * (lane >> 4) + (lane & 7)) * KC_LDB + 64 * kh + 8 * ((lane >> 3) & 1)) * 2;
  const __half* Fv = reinterpret_cast<const __half*>(Vs) + 48 * KC_LDB + 64 * kh + 2 * tq;
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
      aq.x[0] = kc_tf<C>(aq00);
      aq.x[1] = kc_tf<C>(aq10);
      aq.x[2] = kc_tf<C>(aq01);
      aq.x[3] = kc_tf<C>(aq11);
      ak.x[0] = kc_tf<C>(ak00);
      ak.x[1] = kc_tf<C>(ak10);
      ak.x[2] = kc_tf<C>(ak01);
      ak.x[3] = kc_tf<C>(ak11);
      kda::frag_b b0, b1;
      b0.x[0] = kc_tf<C>(k0.x * f00);
      b0.x[1] = kc_tf<C>(k0.y * f01);
      b1.x[0] = kc_tf<C>(k1.x * f10);
      b1.x[1] = kc_tf<C>(k1.y * f11);
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
}

// kc_intra64_qk's rows with GM >= 1 (P staged): the kh = 1 warps take rows 0..43 (11 each, row
// j + 4 it for warp pair j) while the kh = 0 ones finish P and L, then take 44..63; every row
// stored (the GM 1 images need the zeros). Thread = channels d..d+3; GL = G_last there.
template <class C>
__device__ __forceinline__ void kc_intra64_qk_staged(const Intra64Block& b, typename C::elem* __restrict__ qg,
                                                     typename C::elem* __restrict__ kd, float4 GL, int d) {
  float* const Gc = b.Gc;
  __nv_bfloat16* const Qs = b.Qs;
  __nv_bfloat16* const Ks = b.Ks;
  float* const rq = b.rq;
  float* const rk = b.rk;
  const long long slot = b.slot;
  const long long h = b.h;
  const long long H = b.H;
  const long long bos = b.bos;
  const int warp = b.warp;
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
    const long long gi = kc_idx<C>(bos, slot, H, h, i, d);
    const float4 G = *reinterpret_cast<const float4*>(Gc + i * KC_LDG + d);
    float qv[4], kv[4];
    kda::bf16x4_to_f32(Qs + i * KC_LDB + d, qv);
    kda::bf16x4_to_f32(Ks + i * KC_LDB + d, kv);
    const float a = rq[i], b = rk[i];
    const float e0 = kda::ex2(G.x), e1 = kda::ex2(G.y), e2 = kda::ex2(G.z), e3 = kda::ex2(G.w);
    const float k0 = kv[0] * b, k1 = kv[1] * b, k2 = kv[2] * b, k3 = kv[3] * b;
    kc_st4(qg + gi, kc_out<C::prec>(qv[0] * a * e0), kc_out<C::prec>(qv[1] * a * e1),
           kc_out<C::prec>(qv[2] * a * e2), kc_out<C::prec>(qv[3] * a * e3));
    kc_st4(kd + gi, kc_out<C::prec>(k0 * kda::ex2(GL.x - G.x)), kc_out<C::prec>(k1 * kda::ex2(GL.y - G.y)),
           kc_out<C::prec>(k2 * kda::ex2(GL.z - G.z)), kc_out<C::prec>(k3 * kda::ex2(GL.w - G.w)));
    if constexpr (C::prec == 2)
      *reinterpret_cast<uint2*>(Ks + i * KC_LDB + d) =
          make_uint2(kda::pack_f16x2(k0 * e0, k1 * e1), kda::pack_f16x2(k2 * e2, k3 * e3));
  }
}

// kc_intra64_qk's rows with GM 0: warp w takes rows w + 8 it, the rows below len stored (the
// rest belong to the next sequence). Thread = channels d..d+3; GL = G_last there.
template <class C>
__device__ __forceinline__ void kc_intra64_qk_rows(const Intra64Block& b, typename C::elem* __restrict__ qg,
                                                   typename C::elem* __restrict__ kd, float4 GL, int d) {
  float* const Gc = b.Gc;
  __nv_bfloat16* const Qs = b.Qs;
  __nv_bfloat16* const Ks = b.Ks;
  float* const rq = b.rq;
  float* const rk = b.rk;
  const long long slot = b.slot;
  const long long h = b.h;
  const long long H = b.H;
  const long long bos = b.bos;
  const int len = b.len;
  const int tid = b.tid;
  const int r0 = tid >> 5;
#pragma unroll
  for (int it = 0; it < C::ch / 8; ++it) {
    const int i = r0 + 8 * it;
    const float4 G = *reinterpret_cast<const float4*>(Gc + i * KC_LDG + d);
    float qv[4], kv[4];
    kda::bf16x4_to_f32(Qs + i * KC_LDB + d, qv);
    kda::bf16x4_to_f32(Ks + i * KC_LDB + d, kv);
    const float a = rq[i], b = rk[i];
    const float e0 = kda::ex2(G.x), e1 = kda::ex2(G.y), e2 = kda::ex2(G.z), e3 = kda::ex2(G.w);
    const float k0 = kv[0] * b, k1 = kv[1] * b, k2 = kv[2] * b, k3 = kv[3] * b;
    const long long gi = kc_idx<C>(bos, slot, H, h, i, d);
    if (i < len) {  // (GM 0: the next sequence's rows are not stored)
      kc_st4(qg + gi, kc_out<C::prec>(qv[0] * a * e0), kc_out<C::prec>(qv[1] * a * e1),
             kc_out<C::prec>(qv[2] * a * e2), kc_out<C::prec>(qv[3] * a * e3));
      kc_st4(kd + gi, kc_out<C::prec>(k0 * kda::ex2(GL.x - G.x)), kc_out<C::prec>(k1 * kda::ex2(GL.y - G.y)),
             kc_out<C::prec>(k2 * kda::ex2(GL.z - G.z)), kc_out<C::prec>(k3 * kda::ex2(GL.w - G.w)));
    }
    if constexpr (C::prec == 2)
      *reinterpret_cast<uint2*>(Ks + i * KC_LDB + d) =
          make_uint2(kda::pack_f16x2(k0 * e0, k1 * e1), kda::pack_f16x2(k2 * e2, k3 * e3));
  }
}

// After phase 2: qg = q e^G, kd = k e^{G_last - G} (normalized) out, and G_last (GM 2:
// e^{G_last}); PREC 2: Ks <- k e^G (normalized, fp16, in place) for phase 4.
// (No barrier before it: the one after the P/L loop ordered its reads of Ks before the loops
// here rewrite Ks, and they touch nothing the P/L epilogue reads or writes.)
// Thread = channels d..d+3 of a warp's rows. Branch-free: rows past the sequence hold q = k = 0
// (zero-filled copies) and a finite G, so they give zeros (the GM 1 images need them); GM 0
// does not store them (they belong to the next sequence). The rows: kc_intra64_qk_staged
// (GM >= 1), kc_intra64_qk_rows (GM 0). (The two differ in their loop headers: one rolled over
// a warp's share, one unrolled over rows 8 apart; their bodies are the same but for GM 0's row
// mask. One body shared by both as a lambda changed the GM 0 cubins, 2026-12-04.)
template <class C>
__device__ __forceinline__ void kc_intra64_qk(const Intra64Block& b, typename C::elem* __restrict__ qg,
                                              typename C::elem* __restrict__ kd, float* __restrict__ gl) {
  constexpr bool kPStage = C::gm >= 1;
  float* const Gc = b.Gc;
  const long long slot = b.slot;
  const long long h = b.h;
  const long long H = b.H;
  const int len = b.len;
  const int tid = b.tid;
  const float* Gl = Gc + (len - 1) * KC_LDG;
  const int d = (tid & 31) * 4;
  const float4 GL = *reinterpret_cast<const float4*>(Gl + d);
  if constexpr (kPStage)
    kc_intra64_qk_staged<C>(b, qg, kd, GL, d);
  else
    kc_intra64_qk_rows<C>(b, qg, kd, GL, d);
  if (tid < 32) {  // G_last in natural-log units (GM 2: the decay e^{G_last} itself)
    const float4 g2 = *reinterpret_cast<const float4*>(Gl + tid * 4);
    if constexpr (C::gm == 2) {
      *reinterpret_cast<float4*>(gl + (slot * H + h) * KC_KD + tid * 4) =
          make_float4(kda::ex2(g2.x), kda::ex2(g2.y), kda::ex2(g2.z), kda::ex2(g2.w));
    } else {
      const float l2 = 0.6931471805599453f;
      *reinterpret_cast<float4*>(gl + (slot * H + h) * KC_KD + tid * 4) =
          make_float4(g2.x * l2, g2.y * l2, g2.z * l2, g2.w * l2);
    }
  }
}

// Phase 4, the products: w = A (b k e^G), u = A (b v) into accW, accU; warp = columns
// 16*warp .. +15, four row blocks. PREC 2 on fp16 mma (A diag(b) from A16), else tf32.
template <class C>
__device__ __forceinline__ void kc_intra64_wu(const Intra64Block& b, const __half* A16, kda::frag_c (&accW)[4][2],
                                              kda::frag_c (&accU)[4][2]) {
  float* const Gc = b.Gc;
  float* const LA = b.LA;
  __nv_bfloat16* const Ks = b.Ks;
  __nv_bfloat16* const Vs = b.Vs;
  float* const rk = b.rk;
  float* const bs = b.bs;
  const int warp = b.warp;
  const int lane = b.lane;
  const int gq = b.gq;
  const int tq = b.tq;
#pragma unroll
  for (int I = 0; I < 4; ++I)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      kda::zero(accW[I][nt]);
      kda::zero(accU[I][nt]);
    }
  if constexpr (C::prec == 2) {
    // fp16 m16n8k16: B (k = j, n = d) from the tiles Ks (fp16) and Vs (bf16, converted
    // in registers) (row stride 272 bytes: conflict-free ldmatrix.trans), A from A16 by
    // ldmatrix.
    const tile::u32 lb = tile::smem_addr(Ks) + ((lane & 15) * KC_LDB + 16 * warp + (lane >> 4) * 8) * 2;
    const tile::u32 vb = lb + (tile::u32)(Vs - Ks) * 2;
    const tile::u32 a16l = tile::smem_addr(A16) + ((lane & 7) + 8 * ((lane >> 3) & 1)) * KC_LDA16 * 2 + (lane >> 4) * 16;
#pragma unroll
    for (int ks = 0; ks < C::ch / 16; ++ks) {
      tile::u32 bk[4], bv[4];
      kda::ldsm_x4_t(bk, lb + ks * 16 * KC_LDB * 2);
      kda::ldsm_x4_t(bv, vb + ks * 16 * KC_LDB * 2);
#pragma unroll
      for (int e = 0; e < 4; ++e) {  // bf16 pairs -> fp16 pairs (exact: v in fp16 range)
        const float2 f = kda::bf16x2_bits_to_f32(bv[e]);
        bv[e] = kda::pack_f16x2(f.x, f.y);
      }
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
    }
  } else {
#pragma unroll 4  // full unroll spills under NVRTC (128-register cap)
    for (int ks = 0; ks < C::ch / 8; ++ks) {
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
  }
}

// Phase 4's stores with GM >= 1: w and u as sw128 images (zeros past len), staged in Gc, out
// by two bulk copies (RC 1: no w). One barrier inside.
template <class C>
__device__ __forceinline__ void kc_intra64_wu_images(const Intra64Block& b, const kda::frag_c (&accW)[4][2],
                                                     const kda::frag_c (&accU)[4][2], typename C::elem* __restrict__ w,
                                                     typename C::elem* __restrict__ u) {
  float* const Gc = b.Gc;
  const long long slot = b.slot;
  const long long h = b.h;
  const long long H = b.H;
  const int len = b.len;
  const int tid = b.tid;
  const int warp = b.warp;
  const int gq = b.gq;
  const int tq = b.tq;
  // w and u go out as whole sw128 images (zeros past len): staged in Gc (free since the
  // qg/kd loop; conflict-free 4-byte stores) and written by two 16 KB bulk copies, where
  // direct 4-byte global stores would touch 8 rows per warp instruction.
  __half* Ws = reinterpret_cast<__half*>(Gc);
  __half* Us = Ws + C::ch * KC_KD;
#pragma unroll
  for (int I = 0; I < 4; ++I) {
    const int i0 = 16 * I + gq, i1 = i0 + 8;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int e = 16 * warp + 8 * nt + 2 * tq;
      const int x0 = (int)(kda::sw128_off<C::ch>(i0, e) >> 1), x1 = (int)(kda::sw128_off<C::ch>(i1, e) >> 1);
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
    const long long base = (slot * H + h) * (C::ch * KC_KD);
    if (C::rc != 1) tile::bulk_s2g(w + base, tile::smem_addr(Ws), C::ch * KC_KD * 2);
    tile::bulk_s2g(u + base, tile::smem_addr(Us), C::ch * KC_KD * 2);
    tile::bulk_commit();
    tile::bulk_wait_read<0>();  // the block's shared memory must outlive the copies' reads
  }
}

// Phase 4's stores with PREC 2 (GM 0): w and u as [T, H, 128] fp16 rows, staged in Gc, out by
// 16-byte row copies (rows below len). One barrier inside.
template <class C>
__device__ __forceinline__ void kc_intra64_wu_rows(const Intra64Block& b, const kda::frag_c (&accW)[4][2],
                                                   const kda::frag_c (&accU)[4][2], typename C::elem* __restrict__ w,
                                                   typename C::elem* __restrict__ u) {
  float* const Gc = b.Gc;
  const long long slot = b.slot;
  const long long h = b.h;
  const long long H = b.H;
  const long long bos = b.bos;
  const int len = b.len;
  const int tid = b.tid;
  const int warp = b.warp;
  const int gq = b.gq;
  const int tq = b.tq;
  // kc_intra64_wu_images's staging for the [T, H, 128] rows: [64][KC_LDB] fp16 tiles in Gc (conflict-free
  // 4-byte stores), then 16-byte copies of the rows of the sequence.
  __half* Ws = reinterpret_cast<__half*>(Gc);
  __half* Us = Ws + C::ch * KC_LDB;
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
  for (int it = 0; it < C::ch * 16 / 256; ++it) {
    const int idx = it * 256 + tid, i = idx >> 4, c8 = (idx & 15) * 8;
    if (i < len) {
      const long long gi = kc_idx<C>(bos, slot, H, h, i, c8);
      *reinterpret_cast<uint4*>(w + gi) = *reinterpret_cast<const uint4*>(Ws + i * KC_LDB + c8);
      *reinterpret_cast<uint4*>(u + gi) = *reinterpret_cast<const uint4*>(Us + i * KC_LDB + c8);
    }
  }
}

// Phase 4's stores with fp32 intermediates (PREC 0, 1; GM 0): w and u straight from
// registers (rows below len): no room to stage them.
template <class C>
__device__ __forceinline__ void kc_intra64_wu_direct(const Intra64Block& b, const kda::frag_c (&accW)[4][2],
                                                     const kda::frag_c (&accU)[4][2], typename C::elem* __restrict__ w,
                                                     typename C::elem* __restrict__ u) {
  const long long slot = b.slot;
  const long long h = b.h;
  const long long H = b.H;
  const long long bos = b.bos;
  const int len = b.len;
  const int warp = b.warp;
  const int gq = b.gq;
  const int tq = b.tq;
#pragma unroll
  for (int I = 0; I < 4; ++I) {
    const int i0 = 16 * I + gq, i1 = i0 + 8;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int e = 16 * warp + 8 * nt + 2 * tq;
      const bool z0 = i0 >= len, z1 = i1 >= len;  // rows of the next sequence: not written
      if (!z0) {
        const long long g0 = kc_idx<C>(bos, slot, H, h, i0, e);
        kc_st2(w + g0, kc_out<C::prec>(accW[I][nt].x[0]), kc_out<C::prec>(accW[I][nt].x[1]));
        kc_st2(u + g0, accU[I][nt].x[0], accU[I][nt].x[1]);
      }
      if (!z1) {
        const long long g1 = kc_idx<C>(bos, slot, H, h, i1, e);
        kc_st2(w + g1, kc_out<C::prec>(accW[I][nt].x[2]), kc_out<C::prec>(accW[I][nt].x[3]));
        kc_st2(u + g1, accU[I][nt].x[2], accU[I][nt].x[3]);
      }
    }
  }
}

// Phase 4, the stores of w and u: GM >= 1 as sw128 images (staged in Gc, two bulk copies;
// RC 1 no w), PREC 2 as [T, H, 128] rows staged in Gc, else fp32 straight from registers.
template <class C>
__device__ __forceinline__ void kc_intra64_wu_out(const Intra64Block& b, const kda::frag_c (&accW)[4][2],
                                                  const kda::frag_c (&accU)[4][2], typename C::elem* __restrict__ w,
                                                  typename C::elem* __restrict__ u) {
  if constexpr (C::gm >= 1)
    kc_intra64_wu_images<C>(b, accW, accU, w, u);
  else if constexpr (C::prec == 2)
    kc_intra64_wu_rows<C>(b, accW, accU, w, u);
  else
    kc_intra64_wu_direct<C>(b, accW, accU, w, u);
}

// Phase 3 of the CH 64 intra kernel: A = (I+L)^-1 in place in LA ([64][LDL], L below the
// diagonal blocks, zeros above them); with PREC 2 each block also as A diag(b) in fp16 into
// A16 ([64][LDA16]). The 16x16 diagonal blocks by in-register forward substitution (warps 0-3),
// then the off-diagonal ones in two levels on tf32 mma, Xs ([32][LDX] fp32) their scratch.
// Called by all 256 threads (barriers inside).
template <class C>
__device__ __forceinline__ void kc_intra64_inverse(float* LA, float* Xs, __half* A16, const float* bs, int warp, int gq,
                                                   int tq) {
  if constexpr (C::prec == 2) {
    if (warp < 4) kc_inv16<KC_LDL>(LA + 16 * warp * (KC_LDL + 1), A16 + 16 * warp * (KC_LDA16 + 1), bs + 16 * warp);
  } else {
    if (warp < 4) kda::inv_unit_lower16<KC_LDL>(LA + 16 * warp * (KC_LDL + 1));
  }
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
      if constexpr (C::prec == 2) {
        const float2 bb = *reinterpret_cast<const float2*>(bs + j);
        *reinterpret_cast<tile::u32*>(A16 + (Ib + gq) * KC_LDA16 + j) =
            kda::pack_f16x2(-acc[0].x[0] * bb.x, -acc[0].x[1] * bb.y);
        *reinterpret_cast<tile::u32*>(A16 + (Ib + gq + 8) * KC_LDA16 + j) =
            kda::pack_f16x2(-acc[0].x[2] * bb.x, -acc[0].x[3] * bb.y);
      }
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
    if constexpr (C::prec == 2) {
      const float2 bb = *reinterpret_cast<const float2*>(bs + j);
      *reinterpret_cast<tile::u32*>(A16 + i0 * KC_LDA16 + j) =
          kda::pack_f16x2(-acc[0].x[0] * bb.x, -acc[0].x[1] * bb.y);
      *reinterpret_cast<tile::u32*>(A16 + (i0 + 8) * KC_LDA16 + j) =
          kda::pack_f16x2(-acc[0].x[2] * bb.x, -acc[0].x[3] * bb.y);
    }
  }
}

// Phase 2's copy of v into Vs (which held KB until the P/L products' barrier): thread = 16-byte
// piece lc8 of rows lr + 16 it (rows past len zero-filled), committed, not waited for.
template <class C>
__device__ __forceinline__ void kc_intra64_v(const Intra64Block& b, const __nv_bfloat16* __restrict__ v) {
#pragma unroll
  for (int it = 0; it < C::ch / 16; ++it) {
    const int i = b.lr + 16 * it;
    tile::cp_async16(tile::smem_addr(b.Vs) + ((i * KC_LDB + b.lc8) * 2), v + b.rbase + (i < b.len ? i * b.rstride : 0),
                     i < b.len ? 16u : 0u);
  }
  kda::cp_async_commit();
}

// Phase 2, a kh = 1 warp (row block I): its partial sums of P into Xw (float4 per lane and unit)
// and of L into LA, where the kh = 0 warp of the row block adds its own.
template <class C>
__device__ __forceinline__ void kc_intra64_pl_part(float* LA, float4* Xw, const kda::frag_c (&accP)[8],
                                                   const kda::frag_c (&accL)[8], int I, int cnt, int i0, int i1,
                                                   int tq) {
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

// Phase 2, GM >= 1, a kh = 0 warp: the kh = 1 warp's partial sums of P (Xw, units s < cnt) added
// to its own, then the kh = 0 warps' barrier (Xp is about to hold P's image).
template <class C>
__device__ __forceinline__ void kc_intra64_pl_take(kda::frag_c (&accP)[8], const float4* Xw, int cnt) {
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

// Phase 2, a kh = 0 warp (row block I, units s < cnt): P and L from its sums and the kh = 1
// warp's (GM 0: in Xw; GM >= 1: already added to accP), scaled by the norms (rq, rk) and
// b (bs) and masked: P to its image in Ps (GM >= 1, zeros right of the diagonal blocks; then,
// once the kh = 0 warps have staged it, one 8 KB bulk copy to Pc from thread 0) or to Pc
// directly (GM 0: PREC's element type, rows past len not written); L into LA.
template <class C>
__device__ __forceinline__ void kc_intra64_pl_out(float* LA, const float4* Xw, __half* Ps, typename C::elem* Pc,
                                                  const float* rq, const float* rk, const float* bs,
                                                  const kda::frag_c (&accP)[8], const kda::frag_c (&accL)[8], int I,
                                                  int cnt, int i0, int i1, int tq, int lane, int len, int tid) {
  constexpr bool kPStage = C::gm >= 1;
  const float q0 = rq[i0], q1 = rq[i1], b0 = bs[i0] * rk[i0], b1 = bs[i1] * rk[i1];
  if constexpr (kPStage) {
    for (int idx = lane; idx < 16 * (6 - 2 * I); idx += 32) {  // 16-byte chunks right of block I
      const int i = 16 * I + idx / (6 - 2 * I), c8 = 8 * (2 * I + 2 + idx % (6 - 2 * I));
      *reinterpret_cast<uint4*>(Ps + (kda::sw128_off<C::ch>(i, c8) >> 1)) = make_uint4(0u, 0u, 0u, 0u);
    }
  }
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    if (s < cnt) {
      const int j = (s < 2 ? 16 * I + 8 * s : 8 * s - 16) + 2 * tq;  // unit s: columns 16J + 8nt..
      const float4 xp = kPStage ? make_float4(0.f, 0.f, 0.f, 0.f) : Xw[32 * s];
      const float2 l0 = *reinterpret_cast<const float2*>(LA + i0 * KC_LDL + j);
      const float2 l1 = *reinterpret_cast<const float2*>(LA + i1 * KC_LDL + j);
      const float2 kj = *reinterpret_cast<const float2*>(rk + j);
      const float p00 = (accP[s].x[0] + xp.x) * (q0 * kj.x), p01 = (accP[s].x[1] + xp.y) * (q0 * kj.y);
      const float p10 = (accP[s].x[2] + xp.z) * (q1 * kj.x), p11 = (accP[s].x[3] + xp.w) * (q1 * kj.y);
      const float l00 = (accL[s].x[0] + l0.x) * kj.x, l01 = (accL[s].x[1] + l0.y) * kj.y;
      const float l10 = (accL[s].x[2] + l1.x) * kj.x, l11 = (accL[s].x[3] + l1.y) * kj.y;
      if constexpr (kPStage) {
        *reinterpret_cast<tile::u32*>(Ps + kc_pidx<C>(i0, j)) =
            kda::pack_f16x2(j <= i0 ? p00 : 0.f, j + 1 <= i0 ? p01 : 0.f);
        *reinterpret_cast<tile::u32*>(Ps + kc_pidx<C>(i1, j)) =
            kda::pack_f16x2(j <= i1 ? p10 : 0.f, j + 1 <= i1 ? p11 : 0.f);
      } else {
        if (i0 < len)
          kc_st2(Pc + kc_pidx<C>(i0, j), j <= i0 ? kc_out<C::prec>(p00) : 0.f,
                 j + 1 <= i0 ? kc_out<C::prec>(p01) : 0.f);
        if (i1 < len)
          kc_st2(Pc + kc_pidx<C>(i1, j), j <= i1 ? kc_out<C::prec>(p10) : 0.f,
                 j + 1 <= i1 ? kc_out<C::prec>(p11) : 0.f);
      }
      *reinterpret_cast<float2*>(LA + i0 * KC_LDL + j) =
          make_float2(j < i0 ? b0 * l00 : 0.f, j + 1 < i0 ? b0 * l01 : 0.f);
      *reinterpret_cast<float2*>(LA + i1 * KC_LDL + j) =
          make_float2(j < i1 ? b1 * l10 : 0.f, j + 1 < i1 ? b1 * l11 : 0.f);
    }
  }
  if constexpr (kPStage) {
    kda::fence_async_shared();
    kc_bar_kh0();  // P is staged
    if (tid == 0) {
      tile::bulk_s2g(Pc, tile::smem_addr(Ps), C::ch * C::ch * 2);
      tile::bulk_commit();  // waited for with w and u's copies at the end
    }
  }
}
