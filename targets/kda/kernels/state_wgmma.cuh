// targets/kda/kernels/state_wgmma.cuh — the fp16 state kernel on wgmma (GM 1 and 2), sm_90a only:
// its shared-memory layouts (ChunkBuf, RawSlot, WgmmaSmem), the chunk's copies, and the chains
// kc_state_gm (GM 1) and kc_state_gm2 (GM 2) with kc_chain, templates over the parameters
// (template <class C>, C a KcParams). RC's chain and the bodies of kda_chunk_state and
// kda_chunk_state_beside are in kernels/state_rc.cuh, the sequence split's in kernels/seg.cuh;
// the entry points in targets/kda/kda_chunk_wgmma.cu and kda_chunk_seg.cu. Included after
// kernels/config.cuh and kernels/common.cuh.

// Shared memory (bytes; every tile an sw128 tile of tile/wgmma.cuh, 1024-byte aligned):
//   Sh [128 d][128 e] (32 KB), Vh [64 i][128 e] (16 KB), then two chunk buffers of
//   W, Q, Kd [64 i][128 d] (16 KB each), Pm [64 i][64 j] (8 KB), U [64 i][128 e]
//   (16 KB), G f32 [128] (512 B) and an mbarrier, padded to 75,776; plus 1024 bytes of
//   alignment slack. CH 32 (GM 2): the same tiles with 32 rows, Pm [32 i][32 j] as an sw64
//   tile (2 KB, desc_kmajor64), a buffer of 35,840 bytes.
// One chunk buffer, offsets in bytes from its start: w at 0, then qg, kd, P, u, G_last and the
// buffer's mbarrier. (Enumerators, not static constexpr members: under NVRTC's
// -default-device those become __device__ variables of the module.)
template <class C>
struct ChunkBuf {
  enum : int {
    tile = C::ch * 2 * KC_KD,                           // one [CH][128] fp16 image
    p_img = C::ch * C::ch * 2,                          // the P image [CH][CH] (sw128, or sw64 for CH 32)
    u_img = C::ua ? C::ch * C::ch * 2 : tile,              // u's image (UA: -A diag(b), sw64)
    q = tile,
    kd = 2 * tile,
    p = 3 * tile,
    u = p + p_img,
    g = u + u_img,
    mbar = g + 512,
    bytes = C::ch == 64 ? 75776 : (mbar + 8 + 1023) / 1024 * 1024,  // (spec.json: 75776 | 35840 | UA 29696)
    copied = 3 * tile + p_img + u_img + 512,            // what one chunk's bulk copies bring
  };
  static_assert(mbar + 8 <= bytes && bytes % 1024 == 0, "a chunk buffer holds its mbarrier and keeps sw128 alignment");
  static_assert(q % 1024 == 0 && kd % 1024 == 0 && p % 1024 == 0 && u % 1024 == 0, "images 1024-byte aligned");
};
// The descriptor of the P image (CH 32: an sw64 tile).
template <class C>
__device__ __forceinline__ unsigned long long kc_pdesc(tile::u32 a) {
  if constexpr (C::ch == 32)
    return kda::desc_kmajor64(a);
  else
    return kda::desc_kmajor(a);
}
// UA: three chunk buffers (copies two chunks ahead: -u^T of chunk c + 1 is formed during
// chunk c, off the chain), then v's rows in a ring of KC_VD + 1 slots (sw128 images by TMA,
// with the chunk's copies), then o's staging tile. (UA, RC 0: v's rows by TMA on the chunk
// buffer's mbarrier, issued by thread 0 with the chunk's bulk copies; 512 cp.async pieces per
// chunk from every thread, the knob KC_UAV 0, made the state kernel 5-6 % slower on the
// 1x8192 workloads, 1-2 % elsewhere: journal, fifteenth session; retired 2026-12-03.)
#define KC_VD 3
// RC: then two raw slots of the producer (q, k, g, bf16 sw128 images; the P and
// -A diag(b) images; 1/|q| and 1/|k|; the slot's mbarrier), its G [CH][KC_LDG] (f32, log2
// units), the gate's quarter totals, and the buffers' "empty" mbarriers.
// The raw tiles are [CH][128] bf16 as sw128 images (two [CH][64] halves, the TMA boxes of
// tmap:q:64x1x32:128); with RC v's ring slots are such images too (WgmmaSmem::vslot).
// One raw slot, offsets in bytes: q at 0, then k, g, the P and -A diag(b) images, the norms
// and the slot's mbarrier (the copies' bytes).
template <class C>
struct RawSlot {
  enum : int {
    k = ChunkBuf<C>::tile,
    g = 2 * ChunkBuf<C>::tile,
    p = 3 * ChunkBuf<C>::tile,
    a = p + C::ch * C::ch * 2,
    n = a + C::ch * C::ch * 2,
    mbar = n + 256,
    bytes = (mbar + 8 + 1023) / 1024 * 1024,
  };
  static_assert(mbar + 8 <= bytes && bytes % 1024 == 0, "a raw slot holds its mbarrier and keeps sw128 alignment");
};
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
// The state kernel's shared memory as a whole (bytes): [Sh, Vh (GM 1)] the chunk buffers,
// [UA: v's ring and o's staging tile], [RC 1: the raw slots; RC: the "empty" mbarriers],
// and 1024 bytes of alignment slack.
template <class C>
struct WgmmaSmem {
  enum : int {
    nbuf = C::ua ? 3 : 2,                         // chunk buffers
    vslot = ChunkBuf<C>::tile,                    // one slot of v's ring
    vring = C::rc == 1 ? KC_RAWN + 3 : KC_VD + 1,  // v's ring slots
    osv = C::rc == 1,  // RC 1: o is staged in the chunk's own v slot (read at the top of the chunk,
                    // refilled only after every warp's "empty" of that chunk), not in a tile of its own
    rc = C::rc == 1 ? KC_RAWN * RawSlot<C>::bytes + 64 : C::rc == 2 ? 64 : 0,
    bytes = (C::gm == 2 ? 0 : 49152) + nbuf * ChunkBuf<C>::bytes + (C::ua ? vring * vslot + (osv ? 0 : ChunkBuf<C>::tile) : 0) + rc + 1024,  // (GM 2: no Sh, no Vh)
  };
  static_assert(bytes <= 232448, "the state kernel's shared memory exceeds the H200's 227 KB");
};

// One thread copies a chunk's operands into the buffer at shared address buf: the
// intra kernel wrote each as the sw128 (P at CH 32: sw64) image of its tile (rows past the sequence are
// zeros), so each is one bulk copy; completion is counted on the buffer's mbarrier.
// (The sequence split's first pass needs neither qg nor P, its transition part no u.)
template <class C>
__device__ __forceinline__ void kc_issue_gm(tile::u32 buf, const __half* __restrict__ qg,
                                            const __half* __restrict__ kd, const __half* __restrict__ w,
                                            const __half* __restrict__ u, const __half* __restrict__ P,
                                            const float* __restrict__ gl, long long slot, long long H, long long h,
                                            bool with_u = true, bool with_qp = true) {
  const tile::u32 mb = buf + ChunkBuf<C>::mbar;
  const long long img = (slot * H + h) * (C::ch * KC_KD), pim = (slot * H + h) * (C::ch * C::ch);
  tile::mbar_expect_tx(mb, ChunkBuf<C>::copied - (with_u ? 0 : ChunkBuf<C>::u_img) - (with_qp ? 0 : ChunkBuf<C>::tile + ChunkBuf<C>::p_img));
  tile::bulk_g2s(buf, w + img, ChunkBuf<C>::tile, mb);
  if (with_qp) tile::bulk_g2s(buf + ChunkBuf<C>::q, qg + img, ChunkBuf<C>::tile, mb);
  tile::bulk_g2s(buf + ChunkBuf<C>::kd, kd + img, ChunkBuf<C>::tile, mb);
  if (with_u) tile::bulk_g2s(buf + ChunkBuf<C>::u, u + (slot * H + h) * (ChunkBuf<C>::u_img / 2), ChunkBuf<C>::u_img, mb);
  if (with_qp) tile::bulk_g2s(buf + ChunkBuf<C>::p, P + pim, ChunkBuf<C>::p_img, mb);
  tile::bulk_g2s(buf + ChunkBuf<C>::g, gl + (slot * H + h) * KC_KD, 512, mb);
}
// UA (and RC's chains), one thread: rows bos.. of a [T, H, 128] bf16 tensor at head h
// (tensor map m, tmap:NAME:64x1x32:128) into the sw128 image at dst by two TMA boxes of 32
// rows x 64 channels, on mbarrier mb (which it arrives on with the bytes). Rows past the
// tensor arrive as zeros, rows of the next sequence as they are (each caller masks them).
template <class C>
__device__ __forceinline__ void kc_tma_tile(tile::u32 dst, const tile::tmap* m, long long h, long long bos,
                                            tile::u32 mb) {
  tile::mbar_expect_tx(mb, ChunkBuf<C>::tile);
  tile::tma_load_3d(dst, m, 0, (int)h, (int)bos, mb);
  tile::tma_load_3d(dst + ChunkBuf<C>::tile / 2, m, 64, (int)h, (int)bos, mb);
}
// UA, one warpgroup: au = -u^T = v^T (-A diag(b))^T of a chunk (v's rows at vs, rows past
// the sequence zero-filled; the -A diag(b) image at img), issued and committed, not waited
// for. v^T as A by ldmatrix.trans: the same matrices as u^T's in kc_state_gm2, whose
// order is the A fragment's (e0: the first of this thread's rows e, less gq); vv must stay
// untouched until the product is done.
template <class C>
__device__ __forceinline__ void kc_ua_issue(kda::frag_c (&au)[C::ch / 8], tile::u32 (&vv)[C::ch / 16][4], tile::u32 vs,
                                            tile::u32 img, int lane, int e0) {
#pragma unroll
  for (int p = 0; p < C::ch / 16; ++p) {
    const int m = lane >> 3, r = 16 * p + 8 * (m >> 1) + (lane & 7), c = e0 + 8 * (m & 1);
    kda::ldsm_x4_t(vv[p], vs + kda::sw128_off<C::ch>(r, c));  // (an sw128 image)
#pragma unroll
    for (int e = 0; e < 4; ++e) {  // bf16 pairs -> fp16 pairs (exact: v in fp16 range)
      const float2 f = kda::bf16x2_bits_to_f32(vv[p][e]);
      vv[p][e] = kda::pack_f16x2(f.x, f.y);
    }
  }
  const unsigned long long di = kda::desc_kmajor64(img);
  kda::wgmma_fence();
#pragma unroll
  for (int p = 0; p < C::ch / 16; ++p) {
    if (p == 0) kda::wgmma_m64nk16_rs<0, 0>(au, vv[p], di);
    else kda::wgmma_m64nk16_rs<0>(au, vv[p], kda::desc_add(di, p * 32));
  }
  kda::wgmma_commit();
}
// UA: v'^T = -(V^T - u^T) from product A's accumulator au (onto -u^T), columns i past len 0.
template <class C>
__device__ __forceinline__ void kc_ua_vprime(kda::frag_c (&acc)[C::ch / 8], const kda::frag_c (&au)[C::ch / 8], int len,
                                             int tq) {
#pragma unroll
  for (int j = 0; j < C::ch / 8; ++j) {
    const int i = 8 * j + 2 * tq;
    acc[j].x[0] = i < len ? -au[j].x[0] : 0.f;
    acc[j].x[1] = i + 1 < len ? -au[j].x[1] : 0.f;
    acc[j].x[2] = i < len ? -au[j].x[2] : 0.f;
    acc[j].x[3] = i + 1 < len ? -au[j].x[3] : 0.f;
  }
}

// GM 2: S^T's accumulator fragments (this thread's rows er0 and er1 = er0 + 8, columns
// d = 8j + 2tq, + 1, tq = lane % 4) from a [V][K] state (S^T row-major), and back.
__device__ __forceinline__ void kc_st_load(kda::frag_c (&ST)[16], const float* S0, int er0, int er1, int lane) {
  const int tq = lane & 3;
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
}
__device__ __forceinline__ void kc_st_store(float* end, const kda::frag_c (&ST)[16], int er0, int er1, int lane) {
  const int tq = lane & 3;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    *reinterpret_cast<float2*>(end + er0 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[0], ST[j].x[1]);
    *reinterpret_cast<float2*>(end + er1 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[2], ST[j].x[3]);
  }
}

// GM 1, one warpgroup: this thread's fragments of S (rows d = 64 db + i0, + 8, columns e = e0 +
// 8j + 2tq, + 1) as fp16 into the Sh image at sS; and, at the chain's end, as fp32 into `end`
// ([V][K]).
__device__ __forceinline__ void kc_gm_sh(tile::u32 sS, const kda::frag_c (&S)[2][8], int e0, int i0, int tq) {
#pragma unroll
  for (int db = 0; db < 2; ++db) {
    const int d0 = 64 * db + i0, d1 = d0 + 8;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int e = e0 + 8 * j + 2 * tq;
      kc_frag_to_f16(sS + kda::sw128_off<KC_KD>(d0, e), sS + kda::sw128_off<KC_KD>(d1, e), S[db][j]);
    }
  }
}
__device__ __forceinline__ void kc_gm_end(float* end, const kda::frag_c (&S)[2][8], int e0, int i0, int tq) {
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

// GM 1, one warpgroup (eh), a chunk's product A (buffer at bb, Sh at sS), waited for: [w; qg]
// Sh[:, eh] into aw, aq (kStateOnly: w's alone), written by the first k-step (ACC 0).
template <class C, bool kStateOnly>
__device__ __forceinline__ void kc_gm_product_a(kda::frag_c (&aw)[8], kda::frag_c (&aq)[8], tile::u32 bb, tile::u32 sS,
                                                int eh) {
  kda::wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) {
    const tile::u32 ka = (ks >> 2) * (C::ch * 128) + (ks & 3) * 32;
    const unsigned long long db = kda::desc_mnmajor(sS + eh * (KC_KD * 128) + ks * 2048, KC_KD * 128);
    if (ks == 0) {
      kda::wgmma_m64n64k16<0, 1, 0>(aw, kda::desc_kmajor(bb + ka), db);
      if (!kStateOnly) kda::wgmma_m64n64k16<0, 1, 0>(aq, kda::desc_kmajor(bb + ChunkBuf<C>::q + ka), db);
    } else {
      kda::wgmma_m64n64k16<0, 1>(aw, kda::desc_kmajor(bb + ka), db);
      if (!kStateOnly) kda::wgmma_m64n64k16<0, 1>(aq, kda::desc_kmajor(bb + ChunkBuf<C>::q + ka), db);
    }
  }
  kda::wgmma_commit();
  kda::wgmma_wait<0>();
}

// GM 1, one warpgroup, after product A: v' = u - w Sh (aw; u from buffer bb unless with_u is
// false, a transition) as fp16 into the Vh tile at sV (rows past len: 0).
template <class C>
__device__ __forceinline__ void kc_gm_vprime(tile::u32 sV, const kda::frag_c (&aw)[8], tile::u32 bb, bool with_u,
                                             int len, int e0, int i0, int i1, int tq) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int e = e0 + 8 * j + 2 * tq;
    const float2 u0 = with_u ? kda::unpack_f16x2(kda::ld_shared_u32(bb + ChunkBuf<C>::u + kda::sw128_off<C::ch>(i0, e)))
                             : make_float2(0.f, 0.f);
    const float2 u1 = with_u ? kda::unpack_f16x2(kda::ld_shared_u32(bb + ChunkBuf<C>::u + kda::sw128_off<C::ch>(i1, e)))
                             : make_float2(0.f, 0.f);
    kda::st_shared_u32(sV + kda::sw128_off<C::ch>(i0, e),
                       i0 < len ? kda::pack_f16x2(u0.x - aw[j].x[0], u0.y - aw[j].x[1]) : 0u);
    kda::st_shared_u32(sV + kda::sw128_off<C::ch>(i1, e),
                       i1 < len ? kda::pack_f16x2(u1.x - aw[j].x[2], u1.y - aw[j].x[3]) : 0u);
  }
}

// GM 1, one warpgroup (eh), a chunk's products after A (buffer bb, v' in Vh at sV; Gs: G_last):
// the decay S <- e^{G_last} S first, so that no register is touched between the two groups,
// then B: aq += P v' (o = scale (qg Sh + P v'); not with kStateOnly) and C behind it:
// S += kd^T v' (kd as an MN-major A operand); each a committed group, not waited for.
template <class C, bool kStateOnly>
__device__ __forceinline__ void kc_gm_bc(kda::frag_c (&S)[2][8], kda::frag_c (&aq)[8], const float* Gs, tile::u32 bb,
                                         tile::u32 sV, int eh, int i0, int i1) {
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
      kda::wgmma_m64n64k16<0, 1>(aq, kda::desc_kmajor(bb + ChunkBuf<C>::p + ks * 32),
                                 kda::desc_mnmajor(sV + eh * (C::ch * 128) + ks * 2048, C::ch * 128));
    kda::wgmma_commit();
  }
#pragma unroll
  for (int db = 0; db < 2; ++db)
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      kda::wgmma_m64n64k16<1, 1>(S[db],
                                 kda::desc_mnmajor(bb + ChunkBuf<C>::kd + db * (C::ch * 128) + ks * 2048, C::ch * 128),
                                 kda::desc_mnmajor(sV + eh * (C::ch * 128) + ks * 2048, C::ch * 128));
  kda::wgmma_commit();
}

// GM 1, one warpgroup, once B (aq) is done: o = scale aq through the dead U tile of buffer bb
// (bf16, sw128): a warp's 16 rows x 64 columns, then 16-byte coalesced stores (four 128-byte rows
// per warp instruction) of o's rows bos.. (len of them).
template <class C>
__device__ __forceinline__ void kc_gm_o(__nv_bfloat16* o, const kda::frag_c (&aq)[8], tile::u32 bb, float scale,
                                        long long bos, long long H, long long h, int len, int e0, int i0, int i1,
                                        int wi, int lane, int tq) {
  kda::wgmma_wait<1>();  // B is done
  const tile::u32 ot = bb + ChunkBuf<C>::u;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int e = e0 + 8 * j + 2 * tq;
    kda::st_shared_u32(ot + kda::sw128_off<C::ch>(i0, e), tile::pack_bf16x2(scale * aq[j].x[0], scale * aq[j].x[1]));
    kda::st_shared_u32(ot + kda::sw128_off<C::ch>(i1, e), tile::pack_bf16x2(scale * aq[j].x[2], scale * aq[j].x[3]));
  }
  __syncwarp();
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int r = 16 * wi + 4 * k + (lane >> 3), c8 = e0 + 8 * (lane & 7);
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(ot + kda::sw128_off<C::ch>(r, c8)));
    if (r < len) *reinterpret_cast<uint4*>(o + ((bos + r) * H + h) * KC_KD + c8) = v;
  }
}

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
template <class C, bool kStateOnly>
__device__ __forceinline__ void kc_state_gm(const float* __restrict__ S0, bool from_s0, bool ident,
                                            const __half* __restrict__ qg, const __half* __restrict__ kd,
                                            const __half* __restrict__ w, const __half* __restrict__ u,
                                            const __half* __restrict__ P, const float* __restrict__ gl,
                                            __nv_bfloat16* __restrict__ o, float* __restrict__ end, long long bos0,
                                            long long eos, long long slot0, long long H, long long h, float scale) {
  extern __shared__ __align__(1024) unsigned char smb[];
  const tile::u32 s0 = tile::smem_addr(smb), sS = (s0 + 1023u) & ~1023u;
  const tile::u32 sV = sS + 32768, sB = sS + 49152;
  const unsigned char* gbase = smb + (sB - s0) + ChunkBuf<C>::g;
  const bool with_u = !ident;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int eh = warp >> 2, wi = warp & 3, e0 = 64 * eh;
  const int i0 = 16 * wi + gq, i1 = i0 + 8;  // rows of this thread in an m64 block

  if (tid == 0) {
    tile::mbar_init(sB + ChunkBuf<C>::mbar, 1);
    tile::mbar_init(sB + ChunkBuf<C>::bytes + ChunkBuf<C>::mbar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (tid == 0 && bos0 < eos) kc_issue_gm<C>(sB, qg, kd, w, u, P, gl, slot0, H, h, with_u, !kStateOnly);
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
  for (long long c = 0; bos0 + c * C::ch < eos; ++c) {
    const long long bos = bos0 + c * C::ch, slot = slot0 + c;
    const int len = (int)min((long long)C::ch, eos - bos);
    const int cur = (int)(c & 1);
    const tile::u32 bb = sB + cur * ChunkBuf<C>::bytes;
    const float* Gs = reinterpret_cast<const float*>(gbase + cur * ChunkBuf<C>::bytes);
    const bool more = bos + C::ch < eos;
    if (tid == 0 && more)
      kc_issue_gm<C>(sB + (cur ^ 1) * ChunkBuf<C>::bytes, qg, kd, w, u, P, gl, slot + 1, H, h, with_u, !kStateOnly);
    tile::mbar_wait(bb + ChunkBuf<C>::mbar, (tile::u32)((c >> 1) & 1));
    // A: [w; qg] Sh[:, eh]
    kda::frag_c aw[8], aq[8];  // (written by the first k-step: ACC 0)
    kc_gm_product_a<C, kStateOnly>(aw, aq, bb, sS, eh);
    kc_gm_vprime<C>(sV, aw, bb, with_u, len, e0, i0, i1, tq);
    kda::fence_async_shared();
    __syncthreads();
    // B: o = scale (qg Sh + P v'), and C behind it: S <- e^{G_last} S + kd^T v'
    kc_gm_bc<C, kStateOnly>(S, aq, Gs, bb, sV, eh, i0, i1);
    if (!kStateOnly) kc_gm_o<C>(o, aq, bb, scale, bos, H, h, len, e0, i0, i1, wi, lane, tq);
    kda::wgmma_wait<0>();
    kc_gm_sh(sS, S, e0, i0, tq);  // Sh[:, eh] <- fp16(S)
    kda::fence_async_shared();    // (also orders this chunk's reads and o staging before the next bulk copy into bb)
    __syncthreads();
  }
  if (end == nullptr) return;
  kc_gm_end(end, S, e0, i0, tq);
}

// GM 2 with UA, before the first chunk (chunk 0's copies issued): chunk 1's copies and the first
// two chunks' v rows (thread 0), then, once chunk 0 is in place, its -u^T (kc_ua_issue, e0 =
// er0 - gq; unconditional, as in the chain's loop).
template <class C>
__device__ __forceinline__ void kc_gm2_ua_start(kda::frag_c (&au)[C::ch / 8], tile::u32 (&vv)[C::ch / 16][4],
                                                tile::u32 sB, tile::u32 sV, const __half* qg, const __half* kd,
                                                const __half* w, const __half* u, const __half* P, const float* gl,
                                                const tile::tmap* mv, long long bos0, long long eos, long long slot0,
                                                long long H, long long h, int tid, int lane, int e0) {
  if (tid == 0 && bos0 + C::ch < eos) kc_issue_gm<C>(sB + ChunkBuf<C>::bytes, qg, kd, w, u, P, gl, slot0 + 1, H, h);
  if (tid == 0)
    for (int d = 0; d < 2; ++d)
      if (bos0 + d * C::ch < eos)
        kc_tma_tile<C>(sV + d * WgmmaSmem<C>::vslot, mv, h, bos0 + d * C::ch,
                       sB + d * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar);
  if (bos0 < eos) tile::mbar_wait(sB + ChunkBuf<C>::mbar, 0u);
  kc_ua_issue<C>(au, vv, sV, sB + ChunkBuf<C>::u, lane, e0);
}

// GM 2, at the top of chunk c (rows bos.., slot `slot`): the copies ahead, from thread 0 (UA:
// chunk c + 2's and its v rows, three buffers; else chunk c + 1's, two buffers), and without UA
// the wait for chunk c's (UA: done before its -u^T was issued, in the chunk before).
template <class C, bool kStateOnly>
__device__ __forceinline__ void kc_gm2_next(tile::u32 sB, tile::u32 sV, const __half* qg, const __half* kd,
                                            const __half* w, const __half* u, const __half* P, const float* gl,
                                            const tile::tmap* mv, long long c, long long bos, long long eos,
                                            long long slot, long long H, long long h, bool with_u, int tid) {
  if constexpr (C::ua) {
    // (chunk c's buffer was waited for by every thread before its -u^T was issued)
    if (tid == 0 && bos + 2 * C::ch < eos) {
      kc_issue_gm<C>(sB + (int)((c + 2) % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes, qg, kd, w, u, P, gl, slot + 2, H,
                     h);
      kc_tma_tile<C>(sV + (int)((c + 2) % (KC_VD + 1)) * WgmmaSmem<C>::vslot, mv, h, bos + 2 * C::ch,
                     sB + (int)((c + 2) % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar);
    }
  } else {
    const int cur = (int)(c % WgmmaSmem<C>::nbuf);
    if (tid == 0 && bos + C::ch < eos)
      kc_issue_gm<C>(sB + (cur ^ 1) * ChunkBuf<C>::bytes, qg, kd, w, u, P, gl, slot + 1, H, h, with_u, !kStateOnly);
    tile::mbar_wait(sB + cur * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar, (tile::u32)((c >> 1) & 1));
  }
}

// GM 2, one warpgroup, a chunk's product A (buffer at bb; S^T's fp16 fragments sa), waited for:
// V^T = S^T w^T into acc (UA: onto -u^T in au, in flight since the previous chunk: -(v'^T)).
template <class C>
__device__ __forceinline__ void kc_gm2_product_a(kda::frag_c (&acc)[C::ch / 8], kda::frag_c (&au)[C::ch / 8],
                                                 const tile::u32 (&sa)[8][4], tile::u32 bb) {
  const unsigned long long dw = kda::desc_kmajor(bb);
  kda::wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) {
    const unsigned long long db = kda::desc_add(dw, (ks >> 2) * (C::ch * 128) + (ks & 3) * 32);
    if constexpr (C::ua)
      kda::wgmma_m64nk16_rs<0>(au, sa[ks], db);
    else if (ks == 0)
      kda::wgmma_m64nk16_rs<0, 0>(acc, sa[ks], db);
    else
      kda::wgmma_m64nk16_rs<0>(acc, sa[ks], db);
  }
  kda::wgmma_commit();
  kda::wgmma_wait<0>();
}

// GM 2, one warpgroup, a chunk's products after A (buffer at bb; S^T's fp16 fragments sa,
// v'^T's va): S^T <- S^T diag(e^{G_last}) (Gd: e^{G_last}; before C's accumulation, after
// A's last read of S^T), then B: O^T = S^T qg^T + v'^T P^T into acc (with_b), and C behind
// it: S^T += v'^T kd; each a committed group, not waited for.
template <class C, bool with_b>
__device__ __forceinline__ void kc_gm2_bc(kda::frag_c (&ST)[16], kda::frag_c (&acc)[C::ch / 8], const tile::u32 (&sa)[8][4],
                                          const tile::u32 (&va)[C::ch / 16][4], const float* Gd, tile::u32 bb, int tq) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const float2 f = *reinterpret_cast<const float2*>(Gd + 8 * j + 2 * tq);
    ST[j].x[0] *= f.x;
    ST[j].x[1] *= f.y;
    ST[j].x[2] *= f.x;
    ST[j].x[3] *= f.y;
  }
  // (each product's descriptors from one built here: kda::desc_add)
  const unsigned long long dq = kda::desc_kmajor(bb + ChunkBuf<C>::q), dp = kc_pdesc<C>(bb + ChunkBuf<C>::p),
                           dk = kda::desc_mnmajor(bb + ChunkBuf<C>::kd, C::ch * 128);
  kda::wgmma_fence();
  if (with_b) {
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const unsigned long long db = kda::desc_add(dq, (ks >> 2) * (C::ch * 128) + (ks & 3) * 32);
      if (ks == 0) kda::wgmma_m64nk16_rs<0, 0>(acc, sa[ks], db);
      else kda::wgmma_m64nk16_rs<0>(acc, sa[ks], db);
    }
#pragma unroll
    for (int ks = 0; ks < C::ch / 16; ++ks) kda::wgmma_m64nk16_rs<0>(acc, va[ks], kda::desc_add(dp, ks * 32));
    kda::wgmma_commit();
  }
#pragma unroll
  for (int ks = 0; ks < C::ch / 16; ++ks) kda::wgmma_m64n128k16_rs<1>(ST, va[ks], kda::desc_add(dk, ks * 2048));
  kda::wgmma_commit();
}

// GM 2, one warpgroup (eh): o = scale O^T of a chunk (O^T's accumulator acc, this thread's
// value rows er0 and er0 + 8) staged as a bf16 [CH i][64 e] sw128 tile at os, then written
// to o's rows bos.. (len of them) by 16-byte coalesced stores. The warpgroup's barrier
// before the staging also tells racecheck, which does not count wgmma as one, that every
// warp is through with the reads before B.
template <class C>
__device__ __forceinline__ void kc_o_out(tile::u32 os, const kda::frag_c (&acc)[C::ch / 8], float scale, int er0, int eh,
                                         int tq, int tid, int len, __nv_bfloat16* __restrict__ o, long long bos,
                                         long long H, long long h) {
  auto ooff = [](int r, int c) { return kda::sw128_off<C::ch>(r, c); };
  const int el = er0 - 64 * eh;
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + eh) : "memory");
  if constexpr (C::ch == 32) {
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
  } else {
#pragma unroll
    for (int j = 0; j < C::ch / 8; ++j) {
      const int i = 8 * j + 2 * tq;
      kda::st_shared_bf16(os + ooff(i, el), scale * acc[j].x[0]);
      kda::st_shared_bf16(os + ooff(i + 1, el), scale * acc[j].x[1]);
      kda::st_shared_bf16(os + ooff(i, el + 8), scale * acc[j].x[2]);
      kda::st_shared_bf16(os + ooff(i + 1, el + 8), scale * acc[j].x[3]);
    }
  }
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + eh) : "memory");
  const int t = tid & 127;
#pragma unroll
  for (int k4 = 0; k4 < C::ch / 16; ++k4) {
    const int r = (t >> 3) + 16 * k4, c8 = 8 * (t & 7);
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(os + ooff(r, c8)));
    if (r < len) *reinterpret_cast<uint4*>(o + ((bos + r) * H + h) * KC_KD + 64 * eh + c8) = v;
  }
}

// GM 2, one thread: the chunk buffers' mbarriers (UA: two arrivals, the bulk copies' and v's
// TMA); UA: v's tensor map's descriptor prefetched.
template <class C>
__device__ __forceinline__ void kc_gm2_init(tile::u32 sB, const tile::tmap* mv) {
#pragma unroll
  for (int b = 0; b < WgmmaSmem<C>::nbuf; ++b)
    tile::mbar_init(sB + b * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar, C::ua ? 2 : 1);
  if (C::ua) tile::tma_prefetch_desc(mv);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// GM 2 with UA, after chunk c's B and C are issued: chunk c + 1's -u^T behind them, once its
// buffer and v rows are in place (kc_ua_issue, e0 = er0 - gq). Issued after the last chunk too,
// on stale operands, never read: a conditional product makes ptxas serialize every wgmma of
// the loop.
template <class C>
__device__ __forceinline__ void kc_gm2_ua_next(kda::frag_c (&au)[C::ch / 8], tile::u32 (&vv)[C::ch / 16][4],
                                               tile::u32 sB, tile::u32 sV, long long c, long long bos, long long eos,
                                               int lane, int e0) {
  const tile::u32 nb = sB + (int)((c + 1) % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes;
  if (bos + C::ch < eos) tile::mbar_wait(nb + ChunkBuf<C>::mbar, (tile::u32)(((c + 1) / WgmmaSmem<C>::nbuf) & 1));
  kc_ua_issue<C>(au, vv, sV + (int)((c + 1) % (KC_VD + 1)) * WgmmaSmem<C>::vslot, nb + ChunkBuf<C>::u, lane, e0);
}

// GM 2, one warpgroup (eh), once B is done: o = scale O^T (acc) through kc_o_out, staged as a
// bf16 [CH i][64 e] sw128 tile over this warpgroup's half of U at buffer bb (its e columns: only
// this warpgroup read them; not over W: the other warpgroup may still be reading all of W in its
// A), then 16-byte coalesced row stores. (UA: in an sw128 tile of its own after the v ring at sV;
// staged over v's 272-byte rows, the 2-byte stores conflict and the state kernel was 6-9 % slower.)
// (Every warp of the warpgroup read its u^T before B's issue, which needs all four.)
template <class C>
__device__ __forceinline__ void kc_gm2_o(const kda::frag_c (&acc)[C::ch / 8], tile::u32 sV, tile::u32 bb, float scale,
                                         int er0, int eh, int tq, int tid, int len, __nv_bfloat16* o, long long bos,
                                         long long H, long long h) {
  kda::wgmma_wait<C::ua ? 2 : 1>();  // B is done
  const tile::u32 os = (C::ua ? sV + (KC_VD + 1) * WgmmaSmem<C>::vslot : bb + ChunkBuf<C>::u) + eh * (C::ch * 128);
  kc_o_out<C>(os, acc, scale, er0, eh, tq, tid, len, o, bos, H, h);
}

// GM 2: fragment j of S^T (ST[j]: this thread's rows er0 and er1 = er0 + 8, columns d = 8j + 2tq,
// + 1) from a [V][K] state (S^T row-major): kc_state_gm2's start from S0.
__device__ __forceinline__ void kc_gm2_st_frag(kda::frag_c& st, const float* S0, int er0, int er1, int d) {
  const float2 a = *reinterpret_cast<const float2*>(S0 + er0 * KC_KD + d);
  const float2 b = *reinterpret_cast<const float2*>(S0 + er1 * KC_KD + d);
  st.x[0] = a.x;
  st.x[1] = a.y;
  st.x[2] = b.x;
  st.x[3] = b.y;
}

// GM 2 without UA: v'^T = u^T - V^T (V^T in acc, from product A on the buffer at bb; columns i
// past len: 0) as A fragments' worth over i, pair p of them (acc[2p], acc[2p + 1]). u^T in V^T's
// layout by ldmatrix.trans from u's [64 i][128 e] tile into ut: matrix m of pair p holds rows
// i = 8(2p + m/2).. at columns e = e0 + 8(m%2).. (e0 = er0 - gq); its transpose gives this thread
// (e = er0 or er1, i = 8j + 2tq, +1). A transition has u = 0 (!with_u: ut stays the caller's
// zeros). ut is declared by the caller (kc_state_gm2): as a local of this function it changed
// kda_chunk_seg's code, its four values' order after the load (2026-12-05).
template <class C>
__device__ __forceinline__ void kc_gm2_vprime_pair(kda::frag_c (&acc)[C::ch / 8], tile::u32 (&ut)[4], tile::u32 bb,
                                                   int p, int e0, int lane, int len, bool with_u) {
  const int m = lane >> 3, tq = lane & 3;
  if (with_u)
    kda::ldsm_x4_t(ut, bb + ChunkBuf<C>::u +
                           kda::sw128_off<C::ch>(16 * p + 8 * (m >> 1) + (lane & 7), e0 + 8 * (m & 1)));
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

// Accumulator fragments as fp16 A fragments (acc_to_a): n8 blocks 2s and 2s + 1 as k-slice s.
template <int N>
__device__ __forceinline__ void kc_frags_to_a(tile::u32 (&a)[N][4], const kda::frag_c (&f)[2 * N]) {
#pragma unroll
  for (int ks = 0; ks < N; ++ks) kda::acc_to_a(a[ks], f[2 * ks], f[2 * ks + 1]);
}

// GM 2, a chunk's end: C is done (UA: the next chunk's -u^T may run on), this chunk's reads and
// o staging fenced before the buffer's next copy, then the block's barrier.
template <class C>
__device__ __forceinline__ void kc_gm2_chunk_end() {
  kda::wgmma_wait<C::ua ? 1 : 0>();
  kda::fence_async_shared();
  __syncthreads();
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
// v'^T without UA: kc_gm2_vprime_pair, over ut declared here (its header says why). S^T's start
// as the identity (a transition) or 0 stays in the body: as a function (given er0 and er1, or
// forming them from threadIdx.x) it changed kda_chunk_seg's code, its comparisons simplified
// otherwise (2026-12-04, 2026-12-05); its start from S0 is kc_gm2_st_frag.
template <class C, bool kStateOnly>
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
  const unsigned char* gbase = smb + (sB - s0) + ChunkBuf<C>::g;
  const bool with_u = !ident;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int eh = warp >> 2, wi = warp & 3;
  const int er0 = 64 * eh + 16 * wi + gq, er1 = er0 + 8;  // this thread's rows of S^T
  if (tid == 0) kc_gm2_init<C>(sB, mv);
  __syncthreads();
  if (tid == 0 && bos0 < eos) kc_issue_gm<C>(sB, qg, kd, w, u, P, gl, slot0, H, h, with_u, !kStateOnly);
  constexpr int NI = C::ch / 8;  // n8 blocks over the chunk's rows i
  (void)vin;
  // UA: the v ring, -u^T of the next chunk (formed a chunk ahead), its v^T fragments (in flight)
  const tile::u32 sV = sB + WgmmaSmem<C>::nbuf * ChunkBuf<C>::bytes;
  kda::frag_c au[NI];
  tile::u32 vv[C::ch / 16][4];
  if constexpr (C::ua)
    kc_gm2_ua_start<C>(au, vv, sB, sV, qg, kd, w, u, P, gl, mv, bos0, eos, slot0, H, h, tid, lane, er0 - gq);
  kda::frag_c ST[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int d = 8 * j + 2 * tq;
    if (from_s0) {  // [V][K]: S^T row-major
      kc_gm2_st_frag(ST[j], S0, er0, er1, d);
    } else {  // the identity (a transition), or 0
      const float one = ident ? 1.f : 0.f;
      ST[j].x[0] = er0 == d ? one : 0.f;
      ST[j].x[1] = er0 == d + 1 ? one : 0.f;
      ST[j].x[2] = er1 == d ? one : 0.f;
      ST[j].x[3] = er1 == d + 1 ? one : 0.f;
    }
  }
  for (long long c = 0; bos0 + c * C::ch < eos; ++c) {
    const long long bos = bos0 + c * C::ch, slot = slot0 + c;
    const int len = (int)min((long long)C::ch, eos - bos);
    const int cur = (int)(c % WgmmaSmem<C>::nbuf);
    const tile::u32 bb = sB + cur * ChunkBuf<C>::bytes;
    const float* Gd = reinterpret_cast<const float*>(gbase + cur * ChunkBuf<C>::bytes);  // e^{G_last}
    kc_gm2_next<C, kStateOnly>(sB, sV, qg, kd, w, u, P, gl, mv, c, bos, eos, slot, H, h, with_u, tid);
    tile::u32 sa[8][4];  // S^T (fp16) as A, k-slices over d
    kc_frags_to_a(sa, ST);
    kda::frag_c acc[NI];
    kc_gm2_product_a<C>(acc, au, sa, bb);
    // v'^T = u^T - V^T (header: "v'^T without UA"; ut: u^T's pair p, zeros for a transition)
    tile::u32 va[C::ch / 16][4];
    if constexpr (C::ua) {
      kc_ua_vprime<C>(acc, au, len, tq);
    } else {
#pragma unroll
      for (int p = 0; p < C::ch / 16; ++p) {
        tile::u32 ut[4] = {0u, 0u, 0u, 0u};
        kc_gm2_vprime_pair<C>(acc, ut, bb, p, er0 - gq, lane, len, with_u);
      }
    }
    kc_frags_to_a(va, acc);
    // the decay of C; B: O^T = S^T qg^T + v'^T P^T;  C behind it: S^T += v'^T kd
    kc_gm2_bc<C, !kStateOnly>(ST, acc, sa, va, Gd, bb, tq);
    if constexpr (C::ua) kc_gm2_ua_next<C>(au, vv, sB, sV, c, bos, eos, lane, er0 - gq);
    if (!kStateOnly) kc_gm2_o<C>(acc, sV, bb, scale, er0, eh, tq, tid, len, o, bos, H, h);
    kc_gm2_chunk_end<C>();
  }
  if (end == nullptr) return;
  kc_st_store(end, ST, er0, er1, lane);
}
// The chain of GM: kc_state_gm (GM 1) or kc_state_gm2 (GM 2, on the transposed state).
template <class C, bool kStateOnly, class... Args>
__device__ __forceinline__ void kc_chain(Args... args) {
  if constexpr (C::gm == 2)
    kc_state_gm2<C, kStateOnly>(args...);
  else
    kc_state_gm<C, kStateOnly>(args...);
}

