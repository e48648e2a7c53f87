// targets/kda/kernels/state_wgmma.cuh — the fp16 state kernels on wgmma (GM 1 and 2): the bodies of
// kda_chunk_state and, with PIPE, kda_chunk_state_beside, as templates over the parameters
// (template <class C>, C a KcParams). Their entry points are in targets/kda/kda_chunk_wgmma.cu
// and, for the sequence split, kda_chunk_seg.cu (with kernels/seg.cuh). sm_90a only.
// Included after kernels/config.cuh and kernels/common.cuh.

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
    kda::fence_async_shared();
    __syncthreads();
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
        kda::wgmma_m64n64k16<0, 1>(aq, kda::desc_kmajor(bb + ChunkBuf<C>::p + ks * 32),
                                   kda::desc_mnmajor(sV + eh * (C::ch * 128) + ks * 2048, C::ch * 128));
      kda::wgmma_commit();
    }
#pragma unroll
    for (int db = 0; db < 2; ++db)
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        kda::wgmma_m64n64k16<1, 1>(S[db], kda::desc_mnmajor(bb + ChunkBuf<C>::kd + db * (C::ch * 128) + ks * 2048, C::ch * 128),
                                   kda::desc_mnmajor(sV + eh * (C::ch * 128) + ks * 2048, C::ch * 128));
    kda::wgmma_commit();
    if (!kStateOnly) {
      kda::wgmma_wait<1>();  // B is done
      // o through the dead U tile (bf16, sw128): a warp's 16 rows x 64 columns, then
      // 16-byte coalesced stores (four 128-byte rows per warp instruction)
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
    kda::fence_async_shared();  // (also orders this chunk's reads and o staging before the next bulk copy into bb)
    __syncthreads();
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
  if (tid == 0) {
#pragma unroll
    for (int b = 0; b < WgmmaSmem<C>::nbuf; ++b) tile::mbar_init(sB + b * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar, C::ua ? 2 : 1);
    if (C::ua) tile::tma_prefetch_desc(mv);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (tid == 0 && bos0 < eos) kc_issue_gm<C>(sB, qg, kd, w, u, P, gl, slot0, H, h, with_u, !kStateOnly);
  constexpr int NI = C::ch / 8;  // n8 blocks over the chunk's rows i
  (void)vin;
  // UA: the v ring, -u^T of the next chunk (formed a chunk ahead) and its v^T fragments
  // (the operands of the product in flight)
  const tile::u32 sV = sB + WgmmaSmem<C>::nbuf * ChunkBuf<C>::bytes;
  kda::frag_c au[NI];
  tile::u32 vv[C::ch / 16][4];
  if constexpr (C::ua) {
    if (tid == 0 && bos0 + C::ch < eos) kc_issue_gm<C>(sB + ChunkBuf<C>::bytes, qg, kd, w, u, P, gl, slot0 + 1, H, h);
    if (tid == 0)
      for (int d = 0; d < 2; ++d)
        if (bos0 + d * C::ch < eos)
          kc_tma_tile<C>(sV + d * WgmmaSmem<C>::vslot, mv, h, bos0 + d * C::ch, sB + d * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar);
    if (bos0 < eos) tile::mbar_wait(sB + ChunkBuf<C>::mbar, 0u);
    kc_ua_issue<C>(au, vv, sV, sB + ChunkBuf<C>::u, lane, er0 - gq);  // (unconditional, as below)
  }
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
  for (long long c = 0; bos0 + c * C::ch < eos; ++c) {
    const long long bos = bos0 + c * C::ch, slot = slot0 + c;
    const int len = (int)min((long long)C::ch, eos - bos);
    const int cur = (int)(c % WgmmaSmem<C>::nbuf);
    const tile::u32 bb = sB + cur * ChunkBuf<C>::bytes;
    const float* Gd = reinterpret_cast<const float*>(gbase + cur * ChunkBuf<C>::bytes);  // e^{G_last}
    if constexpr (C::ua) {
      // (chunk c's buffer was waited for by every thread before its -u^T was issued)
      if (tid == 0 && bos + 2 * C::ch < eos) {
        kc_issue_gm<C>(sB + (int)((c + 2) % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes, qg, kd, w, u, P, gl, slot + 2, H, h);
        kc_tma_tile<C>(sV + (int)((c + 2) % (KC_VD + 1)) * WgmmaSmem<C>::vslot, mv, h, bos + 2 * C::ch,
                    sB + (int)((c + 2) % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar);
      }
    } else {
      if (tid == 0 && bos + C::ch < eos)
        kc_issue_gm<C>(sB + (cur ^ 1) * ChunkBuf<C>::bytes, qg, kd, w, u, P, gl, slot + 1, H, h, with_u, !kStateOnly);
      tile::mbar_wait(bb + ChunkBuf<C>::mbar, (tile::u32)((c >> 1) & 1));
    }
    tile::u32 sa[8][4];  // S^T (fp16) as A, k-slices over d
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) kda::acc_to_a(sa[ks], ST[2 * ks], ST[2 * ks + 1]);
    // A: V^T = S^T w^T (UA: onto -u^T, in flight since the previous chunk: -(v'^T))
    kda::frag_c acc[NI];
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
    // v'^T = u^T - V^T (columns i past len: 0), as A fragments over i. u^T in V^T's layout
    // by ldmatrix.trans from u's [64 i][128 e] tile: matrix m of pair p holds rows
    // i = 8(2p + m/2).. at columns e = er0 - gq + 8(m%2)..; its transpose gives this thread
    // (e = er0 or er1, i = 8j + 2tq, +1). (A transition has u = 0.)
    tile::u32 va[C::ch / 16][4];
    if constexpr (C::ua) {
      kc_ua_vprime<C>(acc, au, len, tq);
    } else {
#pragma unroll
      for (int p = 0; p < C::ch / 16; ++p) {
        const int m = lane >> 3;
        tile::u32 ut[4] = {0u, 0u, 0u, 0u};
        if (with_u)
          kda::ldsm_x4_t(ut, bb + ChunkBuf<C>::u +
                                 kda::sw128_off<C::ch>(16 * p + 8 * (m >> 1) + (lane & 7), er0 - gq + 8 * (m & 1)));
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
    }
#pragma unroll
    for (int ks = 0; ks < C::ch / 16; ++ks) kda::acc_to_a(va[ks], acc[2 * ks], acc[2 * ks + 1]);
    // the decay of C; B: O^T = S^T qg^T + v'^T P^T;  C behind it: S^T += v'^T kd
    kc_gm2_bc<C, !kStateOnly>(ST, acc, sa, va, Gd, bb, tq);
    if constexpr (C::ua) {
      // the next chunk's -u^T behind B and C (its buffer and v rows are in place). Issued
      // after the last chunk too, on stale operands, never read: a conditional product
      // makes ptxas serialize every wgmma of the loop.
      const tile::u32 nb = sB + (int)((c + 1) % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes;
      if (bos + C::ch < eos) tile::mbar_wait(nb + ChunkBuf<C>::mbar, (tile::u32)(((c + 1) / WgmmaSmem<C>::nbuf) & 1));
      kc_ua_issue<C>(au, vv, sV + (int)((c + 1) % (KC_VD + 1)) * WgmmaSmem<C>::vslot, nb + ChunkBuf<C>::u, lane, er0 - gq);
    }
    if (!kStateOnly) {
      kda::wgmma_wait<C::ua ? 2 : 1>();  // B is done
      // o: O^T [e][i] staged as a bf16 [64 i][64 e] sw128 tile over this warpgroup's half
      // of U (its e columns: only this warpgroup read them), then 16-byte coalesced row
      // stores. (Not over W: the other warpgroup may still be reading all of W in its A.)
      // (UA: in an sw128 tile of its own after the v ring; staged over v's 272-byte rows, the
      // 2-byte stores conflict and the state kernel was 6-9 % slower)
      const tile::u32 os = (C::ua ? sV + (KC_VD + 1) * WgmmaSmem<C>::vslot : bb + ChunkBuf<C>::u) + eh * (C::ch * 128);
      // (Every warp of the warpgroup read its u^T before B's issue, which needs all four.)
      kc_o_out<C>(os, acc, scale, er0, eh, tq, tid, len, o, bos, H, h);
    }
    kda::wgmma_wait<C::ua ? 1 : 0>();  // C is done (UA: the next chunk's -u^T may run on)
    kda::fence_async_shared();  // (this chunk's reads and o staging, before the buffer's next copy)
    __syncthreads();
  }
  if (end == nullptr) return;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    *reinterpret_cast<float2*>(end + er0 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[0], ST[j].x[1]);
    *reinterpret_cast<float2*>(end + er1 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[2], ST[j].x[3]);
  }
}
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
template <class C>
__device__ __forceinline__ void kc_rc_issue(int pw, tile::u32 rs, tile::u32 vs, const tile::tmap* tq, const tile::tmap* tk,
                                            const tile::tmap* tg, const tile::tmap* tv, const __half* __restrict__ P,
                                            const __half* __restrict__ u, const float* __restrict__ gl, long long slot,
                                            long long H, long long h, long long bos) {
  const tile::u32 mb = rs + RawSlot<C>::mbar;
  if (pw < 4) {
    const tile::tmap* m = pw == 0 ? tq : pw == 1 ? tk : pw == 2 ? tg : tv;
    kc_tma_tile<C>(pw == 3 ? vs : rs + pw * ChunkBuf<C>::tile, m, h, bos, mb);
  } else {
    const long long pim = (slot * H + h) * (C::ch * C::ch);
    tile::mbar_expect_tx(mb, 2 * C::ch * C::ch * 2 + 256);
    tile::bulk_g2s(rs + RawSlot<C>::p, P + pim, C::ch * C::ch * 2, mb);
    tile::bulk_g2s(rs + RawSlot<C>::a, u + pim, C::ch * C::ch * 2, mb);
    tile::bulk_g2s(rs + RawSlot<C>::n, gl + (slot * H + h) * KC_KD, 256, mb);
  }
}

// RC 1, producer warp pw: columns j0 .. j0 + NJ - 1 (8 channels each) of the
// chunk in raw slot rs: the gate and its sums G in registers, then qg, kd and k e^G as fp16
// images by stmatrix.trans (qg, kd into buffer bb, k e^G over k) and e^{G_last}; gb is
// buffer bb's generic address. Lane l holds channel 16 pw + 8 j + l / 4 of rows 8 m + 2 t,
// + 1 (t = l % 4, m = 0..3). NJ 2 interleaves the two columns' chains stage by stage.
template <class C, int NJ>
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
    kda::stsm_x4_t(bb + ChunkBuf<C>::q + lo[j0 + jj], oq);
    kda::stsm_x4_t(bb + ChunkBuf<C>::kd + lo[j0 + jj], okd);
    if (t == 0) *reinterpret_cast<float*>(gb + ChunkBuf<C>::g + (16 * pw + 8 * (j0 + jj) + (lane >> 2)) * 4) = kda::ex2(GL[jj]);
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
template <class C, bool kPipe>  // (kPipe: kda_chunk_state_beside, flags given)
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
  const tile::u32 sV = sB + WgmmaSmem<C>::nbuf * ChunkBuf<C>::bytes;               // the v ring
  const tile::u32 sO = sV + WgmmaSmem<C>::vring * WgmmaSmem<C>::vslot;             // o's staging tile (WgmmaSmem::osv: none)
  const tile::u32 sR = sO + (WgmmaSmem<C>::osv ? 0 : ChunkBuf<C>::tile);          // the raw slots
  const tile::u32 sE = C::rc == 1 ? sR + KC_RAWN * RawSlot<C>::bytes : sR;  // the empty mbarriers
  unsigned char* const gen = smb + (sB - s0);                // generic address of sB
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int nch = (int)((eos - bos0 + C::ch - 1) / C::ch);
  if (tid == 0) {
#pragma unroll
    for (int b = 0; b < WgmmaSmem<C>::nbuf; ++b) {
      // full: RC 1 each producer warp; RC 2 the copier's two arrivals with bytes
      tile::mbar_init(sB + b * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar, C::rc == 1 ? 8 : 2);
      tile::mbar_init(sE + 8 * b, 8);  // empty: the consumers' 8 warps
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
  __syncthreads();
  if (C::rc == 2 && warp >= 8) {  // ---- RC 2: the copier (one thread)
    if (lane == 0)
      for (int n = 0; n < nch; ++n) {
        const long long bos = bos0 + (long long)n * C::ch;
        const tile::u32 bb = sB + (n % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes, vs = sV + (n % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot;
        if (n >= WgmmaSmem<C>::nbuf) tile::mbar_wait(sE + 8 * (n % WgmmaSmem<C>::nbuf), (tile::u32)((n / WgmmaSmem<C>::nbuf - 1) & 1));
        kc_issue_gm<C>(bb, qg, kd, w, u, P, gl, slot0 + n, H, h);
        kc_tma_tile<C>(vs, mv, h, bos, bb + ChunkBuf<C>::mbar);
      }
    return;
  }
  if (C::rc == 1 && warp >= 8) {  // ---- the producer, warp by warp
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
      lo[j] = kda::sw128_off<C::ch>(lane, 16 * pw + 8 * j);
    }
    for (int n = 0; n < nch; ++n) {
      const long long bos = bos0 + (long long)n * C::ch;
      const int len = (int)min((long long)C::ch, eos - bos);
      const tile::u32 rs = sR + (n % KC_RAWN) * RawSlot<C>::bytes, bb = sB + (n % WgmmaSmem<C>::nbuf) * ChunkBuf<C>::bytes;
      const float* const rn = reinterpret_cast<const float*>(gen + (rs - sB) + RawSlot<C>::n);
      tile::mbar_wait(rs + RawSlot<C>::mbar, (tile::u32)((n / KC_RAWN) & 1));  // chunk n's copies
      // (the buffer's "empty" first: the chain runs ahead of the producer, so it is free by
      // now, and each column's images go out as soon as they are formed)
      if (n >= WgmmaSmem<C>::nbuf) tile::mbar_wait(sE + 8 * (n % WgmmaSmem<C>::nbuf), (tile::u32)((n / WgmmaSmem<C>::nbuf - 1) & 1));
      // (both columns stage by stage, which needs 80 registers (at 72: 0.713 against 0.699 ms
      // geomean with spills, fourteenth session); column by column, the knob KC_RCIL 0, ran
      // 1.7 % slower and was retired 2026-12-03)
      kc_rc_cols<C, 2>(0, rs, bb, gen + (bb - sB), lo, oc, rn, ga2, lb2, len, lane, pw);
      {  // P's pieces (threads 0..127 of the producer), -A diag(b)'s (128..255)
        const int pt = 32 * pw + lane, pp = pt & 127;
        const int so = pt < 128 ? RawSlot<C>::p : RawSlot<C>::a, dof = pt < 128 ? ChunkBuf<C>::p : ChunkBuf<C>::u;
        *reinterpret_cast<uint4*>(gen + (bb - sB) + dof + pp * 16) =
            *reinterpret_cast<const uint4*>(gen + (rs - sB) + so + pp * 16);
      }
      kda::fence_async_shared();  // (this warp's images, for the consumers' wgmma; its raw reads, before the slot's next copy)
      __syncwarp();
      if (lane == 0) kc_mbar_arrive(bb + ChunkBuf<C>::mbar);
    }
    return;
  }
  // ---- the consumers: kc_state_gm2's UA chain, its copies replaced by the producer's buffers
  if (C::rc == 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 " KC_STR(KC_RCREGC) ";\n" ::: "memory");
  const int eh = warp >> 2, wi = warp & 3;
  const int er0 = 64 * eh + 16 * wi + gq, er1 = er0 + 8;  // this thread's rows of S^T
  constexpr int NI = C::ch / 8;
  kda::frag_c au[NI];
  tile::u32 vv[C::ch / 16][4];
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
    if (C::rc == 1 && lane == 0 && n < nch) {
      const tile::u32 rs = sR + (n % KC_RAWN) * RawSlot<C>::bytes;
      const long long bos = bos0 + (long long)n * C::ch;
      if (warp < 6) {
        const tile::tmap* m = warp < 2 ? mq : warp < 4 ? mk : mg;
        tile::mbar_expect_tx(rs + RawSlot<C>::mbar, ChunkBuf<C>::tile / 2);
        tile::tma_load_3d(rs + (warp >> 1) * ChunkBuf<C>::tile + (warp & 1) * (ChunkBuf<C>::tile / 2), m, 64 * (warp & 1), (int)h, (int)bos,
                          rs + RawSlot<C>::mbar);
      } else {
        kc_rc_issue<C>(warp == 6 ? 3 : 4, rs, sV + (n % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot, mq, mk, mg, mv, P, u, gl, slot0 + n, H, h, bos);
      }
    }
  };
  if (kPipe && warp == 7) pipe_wait(min(KC_RAWN, nch - 1));  // (chunks 0 .. KC_RAWN published: see pipe_wait)
#pragma unroll 1
  for (int r = 0; r < KC_RAWN; ++r) raw_issue(r);
  if (nch > 0) tile::mbar_wait(sB + ChunkBuf<C>::mbar, 0u);
  raw_issue(KC_RAWN);
  constexpr bool kZ = C::rc == 1;  // (RC 1 forms no w: see WgmmaSmem::vring)
  if (!kZ) kc_ua_issue<C>(au, vv, sV, sB + ChunkBuf<C>::u, lane, er0 - gq);  // (unconditional, as in kc_state_gm2)
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
    const long long bos = bos0 + (long long)c * C::ch;
    const int len = (int)min((long long)C::ch, eos - bos);
    const int cur = c % WgmmaSmem<C>::nbuf;
    const tile::u32 bb = sB + cur * ChunkBuf<C>::bytes;
    const float* Gd = reinterpret_cast<const float*>(gen + cur * ChunkBuf<C>::bytes + ChunkBuf<C>::g);  // e^{G_last}
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
        const unsigned long long db = kda::desc_add(dw, (ks >> 2) * (C::ch * 128) + (ks & 3) * 32);
        if (ks == 0) kda::wgmma_m64nk16_rs<0, 0>(acc, sa[ks], db);
        else kda::wgmma_m64nk16_rs<0>(acc, sa[ks], db);
      }
      kda::wgmma_commit();
      const tile::u32 vs = sV + (c % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot;
#pragma unroll
      for (int p = 0; p < C::ch / 16; ++p) {  // (kc_ua_issue's matrices: the A fragment's order)
        const int m = lane >> 3, r = 16 * p + 8 * (m >> 1) + (lane & 7), cc = er0 - gq + 8 * (m & 1);
        kda::ldsm_x4_t(vv[p], vs + kda::sw128_off<C::ch>(r, cc));
      }
      kda::wgmma_wait<0>();
      // X^T = v^T - Z^T (fp32, then fp16 once) as A fragments: pairs in acc_to_a's order
#pragma unroll
      for (int p = 0; p < C::ch / 16; ++p)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 f = kda::bf16x2_bits_to_f32(vv[p][e]);
          const kda::frag_c& z = acc[2 * p + (e >> 1)];
          vv[p][e] = kda::pack_f16x2(f.x - z.x[2 * (e & 1)], f.y - z.x[2 * (e & 1) + 1]);
        }
      // au = X^T (-A diag(b))^T = -v'^T
      const unsigned long long di = kda::desc_kmajor64(bb + ChunkBuf<C>::u);
      kda::wgmma_fence();
#pragma unroll
      for (int p = 0; p < C::ch / 16; ++p) {
        if (p == 0) kda::wgmma_m64nk16_rs<0, 0>(au, vv[p], di);
        else kda::wgmma_m64nk16_rs<0>(au, vv[p], kda::desc_add(di, p * 32));
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
    tile::u32 va[C::ch / 16][4];
    kc_ua_vprime<C>(acc, au, len, tq);
#pragma unroll
    for (int ks = 0; ks < C::ch / 16; ++ks) kda::acc_to_a(va[ks], acc[2 * ks], acc[2 * ks + 1]);
    kc_gm2_bc<C, true>(ST, acc, sa, va, Gd, bb, tq);
    {  // the next chunk's -u^T behind B and C (unconditional: see kc_state_gm2)
      const int nx = (c + 1) % WgmmaSmem<C>::nbuf;
      if (kPipe && warp == 7) pipe_wait(c + 1 + KC_RAWN);
      if (c + 1 < nch) tile::mbar_wait(sB + nx * ChunkBuf<C>::bytes + ChunkBuf<C>::mbar, (tile::u32)(((c + 1) / WgmmaSmem<C>::nbuf) & 1));
      raw_issue(c + 1 + KC_RAWN);
      if (!kZ) kc_ua_issue<C>(au, vv, sV + ((c + 1) % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot, sB + nx * ChunkBuf<C>::bytes + ChunkBuf<C>::u, lane, er0 - gq);
    }
    if (kZ) kda::wgmma_wait<1>();  // B is done (RC 1: no -u^T behind it)
    else kda::wgmma_wait<2>();
    kc_o_out<C>((WgmmaSmem<C>::osv ? sV + (c % WgmmaSmem<C>::vring) * WgmmaSmem<C>::vslot : sO) + eh * (C::ch * 128), acc, scale, er0, eh, tq, tid, len, o,
             bos, H, h);
    if (kZ) kda::wgmma_wait<0>();  // C is done: this warp is through with the buffer
    else kda::wgmma_wait<1>();
    kda::fence_async_shared();  // (its ordinary reads of the buffer and of v's slot, before their next copies)
    __syncwarp();
    if (lane == 0) kc_mbar_arrive(sE + 8 * cur);
  }
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    *reinterpret_cast<float2*>(end + er0 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[0], ST[j].x[1]);
    *reinterpret_cast<float2*>(end + er1 * KC_KD + 8 * j + 2 * tq) = make_float2(ST[j].x[2], ST[j].x[3]);
  }
}
// The chain of GM: kc_state_gm (GM 1) or kc_state_gm2 (GM 2, on the transposed state).
template <class C, bool kStateOnly, class... Args>
__device__ __forceinline__ void kc_chain(Args... args) {
  if constexpr (C::gm == 2)
    kc_state_gm2<C, kStateOnly>(args...);
  else
    kc_state_gm<C, kStateOnly>(args...);
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
