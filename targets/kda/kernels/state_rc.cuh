// targets/kda/kernels/state_rc.cuh — the wgmma state kernel's chain fed by producer warps (RC 1:
// two producer warpgroups form the chunk's images from q, k, g; RC 2: one copier warp),
// kc_state_rc (its parts: kc_rc_init, kc_rc_copier, kc_rc_producer over kc_rc_cols, and
// kc_rc_consumers over kc_rc_pipe_wait, kc_rc_raw_issue, kc_rc_product_a), and the bodies of
// kda_chunk_state without the sequence split (kc_state_wgmma: RC's chain, or kc_chain) and of
// kda_chunk_state_beside (kc_state_beside, PIPE 1); templates over the parameters (template
// <class C>, C a KcParams). The entry points are in targets/kda/kda_chunk_wgmma.cu. Included
// after kernels/state_wgmma.cuh. sm_90a only.
// ---- RC 1 and 2: the state kernel's chain fed by producer warps (kc_state_rc); compiled
// for every configuration, used where RC >= 1.
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
// What an RC chain computes (kc_state_rc's kF): kc_full, o and the end state from S0 (the state
// kernel); kc_end, the end state alone from S0 or, S0 null, from 0 (the sequence split's E_j,
// kda_chunk_seg: no o, so neither q nor P is copied and the producer forms no qg); kc_trans,
// the transition M_j, the chain from the identity with v = 0 (no o, no v either).
enum KcForm : int { kc_full = 0, kc_end = 1, kc_trans = 2 };
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
template <class C, int kF>
__device__ __forceinline__ void kc_rc_issue(int pw, tile::u32 rs, tile::u32 vs, const tile::tmap* tq, const tile::tmap* tk,
                                            const tile::tmap* tg, const tile::tmap* tv, const __half* __restrict__ P,
                                            const __half* __restrict__ u, const float* __restrict__ gl, long long slot,
                                            long long H, long long h, long long bos) {
  const tile::u32 mb = rs + RawSlot<C>::mbar;
  if (kF == kc_trans && pw == 3) {  // (a transition reads no v)
    kc_mbar_arrive(mb);
  } else if (pw < 4) {
    const tile::tmap* m = pw == 0 ? tq : pw == 1 ? tk : pw == 2 ? tg : tv;
    kc_tma_tile<C>(pw == 3 ? vs : rs + pw * ChunkBuf<C>::tile, m, h, bos, mb);
  } else {
    const long long pim = (slot * H + h) * (C::ch * C::ch);
    tile::mbar_expect_tx(mb, (kF == kc_full ? 2 : 1) * C::ch * C::ch * 2 + 256);
    if (kF == kc_full) tile::bulk_g2s(rs + RawSlot<C>::p, P + pim, C::ch * C::ch * 2, mb);
    tile::bulk_g2s(rs + RawSlot<C>::a, u + pim, C::ch * C::ch * 2, mb);
    tile::bulk_g2s(rs + RawSlot<C>::n, gl + (slot * H + h) * KC_KD, 256, mb);
  }
}

// RC 1, producer warp pw: columns j0 .. j0 + NJ - 1 (8 channels each) of the
// chunk in raw slot rs: the gate and its sums G in registers, then qg, kd and k e^G as fp16
// images by stmatrix.trans (qg, kd into buffer bb, k e^G over k) and e^{G_last}; gb is
// buffer bb's generic address. Lane l holds channel 16 pw + 8 j + l / 4 of rows 8 m + 2 t,
// + 1 (t = l % 4, m = 0..3). NJ 2 interleaves the two columns' chains stage by stage.
template <class C, int NJ, bool kQ>  // (kQ: qg formed)
__device__ __forceinline__ void kc_rc_cols(int j0, tile::u32 rs, tile::u32 bb, unsigned char* gb, const tile::u32 (&lo)[2],
                                           const float (&oc)[2], const float* rn, float ga2, float lb2, int len, int lane,
                                           int pw) {
  const int t = lane & 3;
  tile::u32 gr[NJ][4], qr[NJ][4], kr[NJ][4];  // raw g, q, k (bf16 pairs)
  // (NJ 2: q and k are loaded once the gates are formed, so that g's registers are free)
  const auto load_qk = [&] {
#pragma unroll
    for (int jj = 0; jj < NJ; ++jj) {
      if (kQ) kda::ldsm_x4_t(qr[jj], rs + lo[j0 + jj]);
      kda::ldsm_x4_t(kr[jj], rs + RawSlot<C>::k + lo[j0 + jj]);
    }
  };
#pragma unroll
  for (int jj = 0; jj < NJ; ++jj) {
    kda::ldsm_x4_t(gr[jj], rs + RawSlot<C>::g + lo[j0 + jj]);
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
      const float2 qq = kda::bf16x2_bits_to_f32(kQ ? qr[jj][m] : 0u), kk = kda::bf16x2_bits_to_f32(kr[jj][m]);
      // 1/|q|, 1/|k| of rows 8 m + 2 t, + 1
      const float2 ra = *reinterpret_cast<const float2*>(rn + 8 * m + 2 * t);
      const float2 rb = *reinterpret_cast<const float2*>(rn + 32 + 8 * m + 2 * t);
      const float e0 = kda::ex2(s[jj][m][0]), e1 = kda::ex2(s[jj][m][1]);
      const float k0 = kk.x * rb.x, k1 = kk.y * rb.y;
      oq[m] = kda::pack_f16x2(qq.x * ra.x * e0, qq.y * ra.y * e1);  // (kQ false: never stored)
      okd[m] = kda::pack_f16x2(k0 * kda::ex2(GL[jj] - s[jj][m][0]), k1 * kda::ex2(GL[jj] - s[jj][m][1]));
      ok[m] = kda::pack_f16x2(k0 * e0, k1 * e1);
    }
    // k e^G into the buffer's w slot (the consumers' B operand)
    kda::stsm_x4_t(bb + lo[j0 + jj], ok);
    if (kQ) kda::stsm_x4_t(bb + ChunkBuf<C>::q + lo[j0 + jj], oq);
    kda::stsm_x4_t(bb + ChunkBuf<C>::kd + lo[j0 + jj], okd);
    if (t == 0) *reinterpret_cast<float*>(gb + ChunkBuf<C>::g + (16 * pw + 8 * (j0 + jj) + (lane >> 2)) * 4) = kda::ex2(GL[jj]);
  }
}

// kc_state_rc's mbarriers (one thread): each chunk buffer's "full" and "empty", RC 1 the raw
// slots'; the tensor maps' descriptors prefetched.
template <class C>
__device__ __forceinline__ void kc_rc_init(tile::u32 sB, tile::u32 sR, tile::u32 sE, const tile::tmap* mq,
                                           const tile::tmap* mk, const tile::tmap* mg, const tile::tmap* mv) {
#pragma unroll
  for (int b = 0; b < WgmmaSmem<C>::nbuf; ++b) {
    // full: RC 1 every thread of the producer's 8 warps; RC 2 the copier's two arrivals with
    // bytes. empty: every thread of the consumers' 8 warps. (Each thread arrives for its own
    // accesses: a release orders the executing thread's, and compute-sanitizer's racecheck
    // reported the form with lane 0 arriving for its warp after __syncwarp; journal 2026-12-04.)
    tile::mbar_init(sB + b * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar, C::rc == 1 ? 256 : 2);
    tile::mbar_init(sE + 8 * b, 256);
  }
  if (C::rc == 1) {
    for (int r = 0; r < KC_RAWN; ++r)  // the raw slots: the copies' bytes
      tile::mbar_init(sR + r * RawSlot<C>::bytes + RawSlot<C>::mbar, KC_RAW_PARTS);
    tile::tma_prefetch_desc(mq);
    tile::tma_prefetch_desc(mk);
    tile::tma_prefetch_desc(mg);
  }
  tile::tma_prefetch_desc(mv);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// RC 2, the copier (one thread): chunk n's bulk copies (kc_issue_gm) and v's rows into their
// buffer and ring slot once the consumers have released the buffer ("empty").
template <class C>
__device__ __forceinline__ void kc_rc_copier(tile::u32 sB, tile::u32 sV, tile::u32 sE, const __half* qg,
                                             const __half* kd, const __half* w, const __half* u, const __half* P,
                                             const float* gl, const tile::tmap* mv, long long bos0, long long slot0,
                                             long long H, long long h, int nch) {
  for (int n = 0; n < nch; ++n) {
    const long long bos = bos0 + (long long)n * C::ch;
    const tile::u32 bb = sB + (n % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes;
    const tile::u32 vs = sV + (n % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot;
    if (n >= WgmmaSmem<C>::nbuf)
      tile::mbar_wait(sE + 8 * (n % WgmmaSmem<C>::nbuf), (tile::u32)((n / WgmmaSmem<C>::nbuf - 1) & 1));
    kc_issue_gm<C>(bb, qg, kd, w, u, P, gl, slot0 + n, H, h);
    kc_tma_tile<C>(vs, mv, h, bos, bb + ChunkBuf<C>::mbar);
  }
}

// RC 1, the producer (warps 8..15; warp pw = warp - 8), chunk by chunk: waits for chunk n's raw
// copies and its buffer's "empty", forms its columns' images (kc_rc_cols), copies its share of
// P's and -A diag(b)'s images and arrives on the buffer's "full".
// Warp pw owns channels 16 pw .. 16 pw + 15 of every row, as two 8-channel columns of
// 8x8 matrices read with ldmatrix.trans: lane l holds channel 16 pw + 8 j + l / 4 of rows
// 8 m + 2 (l % 4) and + 1 (m = 0..3), so the gate's sums run down the lane's own pairs
// and across the 4 lanes of its channel (shuffles), G never leaves registers, and the
// images go back by stmatrix.trans in the same layout. w's warp needs only its own
// columns of k e^G: no barrier between the producer's warps; each arrives on "full".
template <class C, int kF>
__device__ __forceinline__ void kc_rc_producer(tile::u32 sB, tile::u32 sR, tile::u32 sE, const float* A_log,
                                               const float* dt_bias, float lower_bound, long long bos0, long long eos,
                                               long long h, int nch, int warp, int lane) {
  extern __shared__ __align__(1024) unsigned char smb[];
  unsigned char* const gen = smb + (sB - tile::smem_addr(smb));  // generic address of sB
  asm volatile("setmaxnreg.dec.sync.aligned.u32 " KC_STR(KC_RCREGP) ";\n" ::: "memory");
  const int pw = warp - 8;
  const float ga2 = expf(A_log[h]) * 1.4426950408889634f, lb2 = lower_bound * 1.4426950408889634f;
  float oc[2];      // -exp(A_log) dt_bias (log2 units) at the lane's two channels
  tile::u32 lo[2];  // the lane's ldmatrix / stmatrix row address in a [CH][128] image (row lane)
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    oc[j] = -ga2 * dt_bias[h * KC_KD + 16 * pw + 8 * j + (lane >> 2)];
    lo[j] = kda::sw128_off<C::ch>(lane, 16 * pw + 8 * j);
  }
  for (int n = 0; n < nch; ++n) {
    const long long bos = bos0 + (long long)n * C::ch;
    const int len = (int)min((long long)C::ch, eos - bos);
    const tile::u32 rs = sR + (n % KC_RAWN) * RawSlot<C>::bytes,
                    bb = sB + (n % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes;
    const float* const rn = reinterpret_cast<const float*>(gen + (rs - sB) + RawSlot<C>::n);
    tile::mbar_wait(rs + RawSlot<C>::mbar, (tile::u32)((n / KC_RAWN) & 1));  // chunk n's copies
    // (the buffer's "empty" first: the chain runs ahead of the producer, so it is free by
    // now, and each column's images go out as soon as they are formed)
    if (n >= WgmmaSmem<C>::nbuf)
      tile::mbar_wait(sE + 8 * (n % WgmmaSmem<C>::nbuf), (tile::u32)((n / WgmmaSmem<C>::nbuf - 1) & 1));
    // (both columns stage by stage, which needs 80 registers (at 72: 0.713 against 0.699 ms
    // geomean with spills, fourteenth session); column by column, the knob KC_RCIL 0, ran
    // 1.7 % slower and was retired 2026-12-03)
    kc_rc_cols<C, 2, kF == kc_full>(0, rs, bb, gen + (bb - sB), lo, oc, rn, ga2, lb2, len, lane, pw);
    {  // P's pieces (threads 0..127 of the producer; kc_full only), -A diag(b)'s (128..255)
      const int pt = 32 * pw + lane, pp = pt & 127;
      const int so = pt < 128 ? RawSlot<C>::p : RawSlot<C>::a, dof = pt < 128 ? ChunkBuf<C>::p : ChunkBuf<C>::u;
      if (kF == kc_full || pt >= 128)
        *reinterpret_cast<uint4*>(gen + (bb - sB) + dof + pp * 16) =
            *reinterpret_cast<const uint4*>(gen + (rs - sB) + so + pp * 16);
    }
    kda::fence_async_shared();  // (this warp's images, for the consumers' wgmma; its raw reads, before the slot's next
                                // copy)
    kc_mbar_arrive(bb + ChunkBuf<C>::mbar);
  }
}

// PIPE, kc_state_rc beside the intra kernel (flags given), all lanes of the consumers' warp 7:
// waits until the intra kernel has published chunk n. The chunks [0, hz) are known published;
// when n is past them, the warp reads the flags of the next 32 chunks at once (relaxed), advances
// hz by the published run and makes those reads acquire by a fence: one L2 round trip per up to
// 32 chunks where the intra kernel is ahead (one per chunk, lane 0 alone, made the state kernel
// ~8 % slower: journal, eighteenth session). Called before the wait for "full" that precedes the
// chunk's issue, where the warp waits anyway.
__device__ __forceinline__ void kc_rc_pipe_wait(int& hz, int n, const int* flags, long long slot0, long long H,
                                                long long h, int nch, int lane) {
  if (n >= nch || n < hz) return;
  for (;;) {
    const int m = hz + lane;
    int x = 1;
    if (m < nch)
      asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];\n" : "=r"(x) : "l"(flags + (slot0 + m) * H + h) : "memory");
    const unsigned ok = __ballot_sync(~0u, x == 1);
    const int run = ok == ~0u ? 32 : __ffs(~ok) - 1;
    if (run > 0) {
      asm volatile("fence.acq_rel.gpu;\n" ::: "memory");         // (the relaxed reads and this fence: acquire)
      asm volatile("fence.proxy.async.global;\n" ::: "memory");  // (the copies that follow are async-proxy reads)
      __syncwarp();
      hz += run;
      if (n < hz) return;
    }
    __nanosleep(64);
  }
}

// RC 1, the consumers' raw copies of chunk n (lane 0 of each warp, n < nch): warp w < 6 one TMA
// box of q, k or g (tensor w / 2, channel half w % 2) into the chunk's raw slot, warp 6 v's rows
// into its ring slot, warp 7 the bulk copies (kc_rc_issue). RC 2: none.
template <class C, int kF>
__device__ __forceinline__ void kc_rc_raw_issue(int n, tile::u32 sR, tile::u32 sV, const tile::tmap* mq,
                                                const tile::tmap* mk, const tile::tmap* mg, const tile::tmap* mv,
                                                const __half* P, const __half* u, const float* gl, long long bos0,
                                                long long slot0, long long H, long long h, int nch, int warp,
                                                int lane) {
  if (C::rc == 1 && lane == 0 && n < nch) {
    const tile::u32 rs = sR + (n % KC_RAWN) * RawSlot<C>::bytes;
    const long long bos = bos0 + (long long)n * C::ch;
    if (kF != kc_full && warp < 2) {  // (no o: no q)
      kc_mbar_arrive(rs + RawSlot<C>::mbar);
    } else if (warp < 6) {
      const tile::tmap* m = warp < 2 ? mq : warp < 4 ? mk : mg;
      tile::mbar_expect_tx(rs + RawSlot<C>::mbar, ChunkBuf<C>::tile / 2);
      tile::tma_load_3d(rs + (warp >> 1) * ChunkBuf<C>::tile + (warp & 1) * (ChunkBuf<C>::tile / 2), m, 64 * (warp & 1),
                        (int)h, (int)bos, rs + RawSlot<C>::mbar);
    } else {
      kc_rc_issue<C, kF>(warp == 6 ? 3 : 4, rs, sV + (n % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot, mq, mk, mg, mv, P, u,
                     gl, slot0 + n, H, h, bos);
    }
  }
}

// kc_state_rc's product A of a chunk (one warpgroup; buffer bb, S^T's fp16 fragments sa; e0: the
// first of the thread's rows e, less gq), waited for. RC 1: Z^T = S^T (k e^G)^T into acc (k e^G
// in w's slot), v^T's fragments (from chunk c's slot of v's ring at sV) read meanwhile, X^T = v^T - Z^T in vv and
// au = X^T (-A diag(b))^T = -v'^T; RC 2: au += S^T w^T (onto -u^T, kc_state_gm2's UA product A).
template <class C, bool kV>  // (kV: v read; a transition's v is 0)
__device__ __forceinline__ void kc_rc_product_a(kda::frag_c (&au)[C::ch / 8], kda::frag_c (&acc)[C::ch / 8],
                                                tile::u32 (&vv)[C::ch / 16][4], const tile::u32 (&sa)[8][4],
                                                tile::u32 bb, tile::u32 sV, int c, int lane, int e0) {
  const unsigned long long dw = kda::desc_kmajor(bb);
  if (C::rc == 1) {
    // Z^T = S^T (k e^G)^T onto zeros (k e^G in w's slot), v^T's fragments read meanwhile
    kda::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const unsigned long long db = kda::desc_add(dw, (ks >> 2) * (C::ch * 128) + (ks & 3) * 32);
      if (ks == 0)
        kda::wgmma_m64nk16_rs<0, 0>(acc, sa[ks], db);
      else
        kda::wgmma_m64nk16_rs<0>(acc, sa[ks], db);
    }
    kda::wgmma_commit();
    const tile::u32 vs = sV + (c % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot;
#pragma unroll
    for (int p = 0; p < C::ch / 16; ++p) {  // (kc_ua_issue's matrices: the A fragment's order)
      const int m = lane >> 3, r = 16 * p + 8 * (m >> 1) + (lane & 7), cc = e0 + 8 * (m & 1);
      if (kV) kda::ldsm_x4_t(vv[p], vs + kda::sw128_off<C::ch>(r, cc));
    }
    kda::wgmma_wait<0>();
    // X^T = v^T - Z^T (fp32, then fp16 once) as A fragments: pairs in acc_to_a's order
#pragma unroll
    for (int p = 0; p < C::ch / 16; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = kV ? kda::bf16x2_bits_to_f32(vv[p][e]) : make_float2(0.f, 0.f);
        const kda::frag_c& z = acc[2 * p + (e >> 1)];
        vv[p][e] = kda::pack_f16x2(f.x - z.x[2 * (e & 1)], f.y - z.x[2 * (e & 1) + 1]);
      }
    // au = X^T (-A diag(b))^T = -v'^T
    const unsigned long long di = kda::desc_kmajor64(bb + ChunkBuf<C>::u);
    kda::wgmma_fence();
#pragma unroll
    for (int p = 0; p < C::ch / 16; ++p) {
      if (p == 0)
        kda::wgmma_m64nk16_rs<0, 0>(au, vv[p], di);
      else
        kda::wgmma_m64nk16_rs<0>(au, vv[p], kda::desc_add(di, p * 32));
    }
    kda::wgmma_commit();
    kda::wgmma_wait<0>();
  } else {
    kda::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 8; ++ks)
      kda::wgmma_m64nk16_rs<0>(au, sa[ks], kda::desc_add(dw, (ks >> 2) * (C::ch * 128) + (ks & 3) * 32));
    kda::wgmma_commit();
    kda::wgmma_wait<0>();
  }
}

// The start of kc_state_rc's chain other than kc_full's (which loads S0, kc_st_load): S0's
// fragments, or the identity (kc_trans), or 0 (S0 null).
template <int kF>
__device__ __forceinline__ void kc_rc_st_start(kda::frag_c (&ST)[16], const float* S0, int er0, int er1, int lane) {
  if (kF == kc_end && S0 != nullptr) {
    kc_st_load(ST, S0, er0, er1, lane);
    return;
  }
  const int tq = lane & 3;
  const float one = kF == kc_trans ? 1.f : 0.f;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int d = 8 * j + 2 * tq;
    ST[j].x[0] = er0 == d ? one : 0.f;
    ST[j].x[1] = er0 == d + 1 ? one : 0.f;
    ST[j].x[2] = er1 == d ? one : 0.f;
    ST[j].x[3] = er1 == d + 1 ? one : 0.f;
  }
}

// kc_state_rc's consumers (warpgroups 0 and 1): kc_state_gm2's UA chain from S0 (S^T, [V][K]), its
// copies replaced by the buffers the producer (RC 1) or the copier (RC 2) fills; o (kc_full) and
// the end state `end` (where given) out. Shared memory: the chunk buffers at sB, v's ring at sV,
// o's staging tile at sO (WgmmaSmem::osv: none), the raw slots at sR, the "empty" mbarriers at sE.
template <class C, bool kPipe, int kF>
__device__ __forceinline__ void kc_rc_consumers(const float* S0, const __half* u, const __half* P, const float* gl,
                                                __nv_bfloat16* o, float* end, long long bos0, long long eos,
                                                long long slot0, long long H, long long h, float scale,
                                                const tile::tmap* mq, const tile::tmap* mk, const tile::tmap* mg,
                                                const tile::tmap* mv, const int* flags, tile::u32 sB, tile::u32 sV,
                                                tile::u32 sO, tile::u32 sR, tile::u32 sE, int nch, int tid, int warp,
                                                int lane, int gq, int tq) {
  extern __shared__ __align__(1024) unsigned char smb[];
  unsigned char* const gen = smb + (sB - tile::smem_addr(smb));  // generic address of sB
  if (C::rc == 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 " KC_STR(KC_RCREGC) ";\n" ::: "memory");
  const int eh = warp >> 2, wi = warp & 3;
  const int er0 = 64 * eh + 16 * wi + gq, er1 = er0 + 8;  // this thread's rows of S^T
  constexpr int NI = C::ch / 8;
  kda::frag_c au[NI];
  tile::u32 vv[C::ch / 16][4];
  int pipe_hz = 0;  // (PIPE: the chunks [0, pipe_hz) are known published, see kc_rc_pipe_wait)
  auto pipe_wait = [&](int n) {
    if constexpr (kPipe)
      kc_rc_pipe_wait(pipe_hz, n, flags, slot0, H, h, nch, lane);
    else
      (void)n;
  };
  auto raw_issue = [&](int n) {
    kc_rc_raw_issue<C, kF>(n, sR, sV, mq, mk, mg, mv, P, u, gl, bos0, slot0, H, h, nch, warp, lane);
  };
  if (kPipe && warp == 7) pipe_wait(min(KC_RAWN, nch - 1));  // (chunks 0 .. KC_RAWN published: see pipe_wait)
#pragma unroll 1
  for (int r = 0; r < KC_RAWN; ++r) raw_issue(r);  // (RC 1: chunk n's raw copies once "full" of n - KC_RAWN is seen)
  if (nch > 0) tile::mbar_wait(sB + ChunkBuf<C>::mbar, 0u);
  raw_issue(KC_RAWN);
  constexpr bool kZ = C::rc == 1;                                            // (RC 1 forms no w: see WgmmaSmem::vring)
  if (!kZ) kc_ua_issue<C>(au, vv, sV, sB + ChunkBuf<C>::u, lane, er0 - gq);  // (unconditional, as in kc_state_gm2)
  kda::frag_c ST[16];
  if constexpr (kF == kc_full)
    kc_st_load(ST, S0, er0, er1, lane);
  else
    kc_rc_st_start<kF>(ST, S0, er0, er1, lane);
  for (int c = 0; c < nch; ++c) {
    const long long bos = bos0 + (long long)c * C::ch;
    const int len = (int)min((long long)C::ch, eos - bos);
    const int cur = c % WgmmaSmem<C>::nbuf;
    const tile::u32 bb = sB + cur * ChunkBuf<C>::bytes;
    const float* Gd = reinterpret_cast<const float*>(gen + cur * ChunkBuf<C>::bytes + ChunkBuf<C>::g);  // e^{G_last}
    tile::u32 sa[8][4];
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) kda::acc_to_a(sa[ks], ST[2 * ks], ST[2 * ks + 1]);
    kda::frag_c acc[NI];
    kc_rc_product_a<C, kF != kc_trans>(au, acc, vv, sa, bb, sV, c, lane, er0 - gq);
    tile::u32 va[C::ch / 16][4];
    kc_ua_vprime<C>(acc, au, len, tq);
#pragma unroll
    for (int ks = 0; ks < C::ch / 16; ++ks) kda::acc_to_a(va[ks], acc[2 * ks], acc[2 * ks + 1]);
    kc_gm2_bc<C, kF == kc_full>(ST, acc, sa, va, Gd, bb, tq);
    {  // the next chunk's -u^T behind B and C (unconditional: see kc_state_gm2)
      const int nx = (c + 1) % WgmmaSmem<C>::nbuf;
      if (kPipe && warp == 7) pipe_wait(c + 1 + KC_RAWN);
      if (c + 1 < nch)
        tile::mbar_wait(sB + nx * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar,
                        (tile::u32)(((c + 1) / WgmmaSmem<C>::nbuf) & 1));
      raw_issue(c + 1 + KC_RAWN);
      if (!kZ)
        kc_ua_issue<C>(au, vv, sV + ((c + 1) % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot,
                       sB + nx * ChunkBuf<C>::bytes + ChunkBuf<C>::u, lane, er0 - gq);
    }
    if (kZ)
      kda::wgmma_wait<1>();  // B is done (RC 1: no -u^T behind it)
    else
      kda::wgmma_wait<2>();
    if constexpr (kF == kc_full)
      kc_o_out<C>((WgmmaSmem<C>::osv ? sV + (c % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot : sO) + eh * (C::ch * 128),
                  acc, scale, er0, eh, tq, tid, len, o, bos, H, h);
    if (kZ)
      kda::wgmma_wait<0>();  // C is done: this warp is through with the buffer
    else
      kda::wgmma_wait<1>();
    kda::fence_async_shared();  // (its ordinary reads of the buffer and of v's slot, before their next copies)
    kc_mbar_arrive(sE + 8 * cur);
  }
  if (C::seg == 0 || end != nullptr) kc_st_store(end, ST, er0, er1, lane);  // (a segment not its sequence's last: none)
}

// RC (UA 1, CH 32, SEG 0): kc_state_gm2's UA chain (warpgroups 0 and 1, the consumers)
// fed by two more warpgroups (the producer) instead of bulk copies of the intra kernel's
// images. Per chunk n (its q, k, g and v copied by TMA KC_RAWN chunks ahead, issued by lane 0
// of the consumer warps) each producer warp, once the consumers have released buffer
// n % 3 ("empty" mbarrier, every consumer thread arriving), forms the gate and G of its 16
// channels in registers, writes their qg, kd, k e^G and e^{G_last}, copies its share of P's
// and -A diag(b)'s images (the consumers fold w into their products) and arrives on the
// buffer's "full" mbarrier (every producer thread arriving). The arithmetic per element is the
// intra kernel's; G's sums run in another order, so qg, kd and k e^G match UA 0's to fp32
// rounding, not bit for bit. Registers: setmaxnreg moves
// them from the producer (KC_RCREGP, 72) to the consumers (KC_RCREGC, 184). Rows past the sequence's end (len)
// hold the next sequence's q, k, g, v (TMA boxes are not cut at len): they meet zeros
// everywhere (1/|q| = 1/|k| = 0 from the intra kernel, the gate masked past len, the columns
// of -A diag(b) past len zero, v'^T masked), so they do not reach o or the state as long
// as they are finite after v's conversion to fp16: PREC 2's bound on every v row anyway.
template <class C, bool kPipe, int kF = kc_full>  // (kPipe: kda_chunk_state_beside, flags given; kF: KcForm)
__device__ __forceinline__ void kc_state_rc(const float* __restrict__ S0, const __half* __restrict__ qg,
                                            const __half* __restrict__ kd, const __half* __restrict__ w,
                                            const __half* __restrict__ u, const __half* __restrict__ P,
                                            const float* __restrict__ gl, __nv_bfloat16* __restrict__ o,
                                            float* __restrict__ end, long long bos0, long long eos, long long slot0,
                                            long long H, long long h, float scale, const tile::tmap* mq,
                                            const tile::tmap* mk, const tile::tmap* mg, const tile::tmap* mv,
                                            const float* __restrict__ A_log, const float* __restrict__ dt_bias,
                                            float lower_bound, const int* flags = nullptr) {
  extern __shared__ __align__(1024) unsigned char smb[];
  const tile::u32 s0 = tile::smem_addr(smb), sB = (s0 + 1023u) & ~1023u;
  const tile::u32 sV = sB + WgmmaSmem<C>::nbuf * ChunkBuf<C>::bytes;        // the v ring
  const tile::u32 sO = sV + WgmmaSmem<C>::vring * WgmmaSmem<C>::vslot;      // o's staging tile (WgmmaSmem::osv: none)
  const tile::u32 sR = sO + (WgmmaSmem<C>::osv ? 0 : ChunkBuf<C>::tile);    // the raw slots
  const tile::u32 sE = C::rc == 1 ? sR + KC_RAWN * RawSlot<C>::bytes : sR;  // the empty mbarriers
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int nch = (int)((eos - bos0 + C::ch - 1) / C::ch);
  if (tid == 0) kc_rc_init<C>(sB, sR, sE, mq, mk, mg, mv);
  __syncthreads();
  if (C::rc == 2 && warp >= 8) {  // ---- RC 2: the copier (one thread)
    if (lane == 0) kc_rc_copier<C>(sB, sV, sE, qg, kd, w, u, P, gl, mv, bos0, slot0, H, h, nch);
    return;
  }
  if (C::rc == 1 && warp >= 8) {  // ---- the producer, warp by warp
    kc_rc_producer<C, kF>(sB, sR, sE, A_log, dt_bias, lower_bound, bos0, eos, h, nch, warp, lane);
    return;
  }
  // ---- the consumers: kc_state_gm2's UA chain, its copies replaced by the producer's buffers
  kc_rc_consumers<C, kPipe, kF>(S0, u, P, gl, o, end, bos0, eos, slot0, H, h, scale, mq, mk, mg, mv, flags, sB, sV, sO, sR,
                            sE, nch, tid, warp, lane, gq, tq);
}
// The state kernel's threads: RC 1 two producer warpgroups beside the two consumer ones, RC 2
// one copier warp.
constexpr int kc_state_threads(int rc) {
  return rc == 1 ? 512 : rc == 2 ? 288 : 256;
}

// The body of kda_chunk_state without the sequence split (SEG 0): grid (NSEQ*H, 1, 1)
// (kc_item: one block per (sequence, head), longest first), block kc_state_threads(RC) (two
// consumer warpgroups, RC's producer warps), smem WgmmaSmem::bytes. vin: v (read with UA 1
// only); A_log, dt_bias, lower_bound and the tensor maps of q, k, g, v (RC 1:
// tmap:NAME:64x1x32:128): what the producer reads.
template <class C>
__device__ __forceinline__ void kc_state_wgmma(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale, const __nv_bfloat16* __restrict__ vin, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, float lower_bound, const tile::tmap* map_q, const tile::tmap* map_k,
    const tile::tmap* map_g, const tile::tmap* map_v) {
  static_assert(C::seg == 0, "the sequence split's state kernel is kc_state_seg");
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < WgmmaSmem<C>::bytes) __trap();  // spec.json smem too small?
  (void)T;
  (void)NSEQ;
  int n32, h32;
  kc_item(order, H, &n32, &h32);
  const long long n = n32, h = h32;
  const long long bos0 = cu[n], eos = cu[n + 1];
  if constexpr (C::rc >= 1) {
    if (blockDim.x != (C::rc == 1 ? 512 : 288)) __trap();  // spec.json's block: the producer's warps are missing
    (void)vin;
    kc_state_rc<C, false>(h0 + (n * H + h) * KC_KD * KC_KD, qg, kd, w, u, P, gl, o, ht + (n * H + h) * KC_KD * KC_KD,
                          bos0, eos, n + bos0 / C::ch, H, h, scale, map_q, map_k, map_g, map_v, A_log, dt_bias,
                          lower_bound);
  } else if constexpr (C::ua) {
    (void)A_log;
    (void)dt_bias;
    (void)lower_bound;
    kc_chain<C, false>(h0 + (n * H + h) * KC_KD * KC_KD, true, false, qg, kd, w, u, P, gl, o,
                       ht + (n * H + h) * KC_KD * KC_KD, bos0, eos, n + bos0 / C::ch, H, h, scale, vin, map_v);
  } else {
    (void)A_log;
    (void)dt_bias;
    (void)lower_bound;
    (void)vin;
    kc_chain<C, false>(h0 + (n * H + h) * KC_KD * KC_KD, true, false, qg, kd, w, u, P, gl, o,
                       ht + (n * H + h) * KC_KD * KC_KD, bos0, eos, n + bos0 / C::ch, H, h, scale);
  }
}

// The body of kda_chunk_state_beside (PIPE 1), beside the intra kernel on the side stream: one
// block (512 threads) per (sequence, head) by blockIdx (the order array is being written
// beside it), chunk n's P, -A diag(b) and norms read once flags[slot * H + h] is set (see
// PIPE in kernels/config.cuh). Arguments: as kc_state_wgmma's, then flags.
template <class C>
__device__ __forceinline__ void kc_state_beside(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale, const __nv_bfloat16* __restrict__ vin, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, float lower_bound, const tile::tmap* map_q, const tile::tmap* map_k,
    const tile::tmap* map_g, const tile::tmap* map_v, const int* flags) {
  static_assert(C::pipe == 1, "kda_chunk_state_beside exists with PIPE 1");
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < WgmmaSmem<C>::bytes) __trap();  // spec.json smem too small?
  if (blockDim.x != 512) __trap();  // spec.json's block: the producer's warps are missing
  (void)T;
  (void)NSEQ;
  (void)order;
  (void)vin;
  const long long n = blockIdx.x / H, h = blockIdx.x % H;
  const long long bos0 = cu[n], eos = cu[n + 1];
  kc_state_rc<C, true>(h0 + (n * H + h) * KC_KD * KC_KD, qg, kd, w, u, P, gl, o, ht + (n * H + h) * KC_KD * KC_KD,
                       bos0, eos, n + bos0 / C::ch, H, h, scale, map_q, map_k, map_g, map_v, A_log, dt_bias,
                       lower_bound, flags);
}
