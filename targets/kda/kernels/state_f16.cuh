// targets/kda/kernels/state_f16.cuh — the fp16 state kernel on mma.sync (kda_chunk_state, PREC 2, GM 0).
// A template over its parameters; its entry point is in targets/kda/kda_chunk_tf32.cu
// (PREC 2). Included after kernels/config.cuh and kernels/common.cuh.

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
// The layout above, in bytes: Sh and Vh, then the chunk parts; offsets within a part.
// (Enumerators: see ChunkBuf in state_wgmma.cuh.)
template <int kCH, int kBV, int kSTG>
struct F16Smem {
  enum : int {
    rbs = 2 * kBV,  // bytes per row of Sh, Vh, U
    big = 3 * kCH * 2 * KC_KD,                           // W, Q, Kd f16 [CH][KD]
    q = kCH * 2 * KC_KD,                                 // in the big part
    kd = 2 * q,
    small = kCH * 2 * kCH + kCH * rbs + 4 * KC_KD,  // Pm f16 [CH][CH], U f16 [CH][BV], G f32 [KD]
    u = kCH * 2 * kCH,                                 // in the small part
    g = u + kCH * rbs,
    buf = big + small,
    bytes = (KC_KD + kCH) * rbs + (kSTG == 0 ? 2 * buf : big + 2 * small),
  };
  static_assert(kSTG == 0 || kBV != 64 || bytes == 107520, "STG 1, BV 64: two blocks a SM");
};
// kc_issue_f16's parts: W and Q, Kd, the small part (P, U and G_last), all.
enum KcF16Part : int { KC_WQ = 1, KC_KDP = 2, KC_SMP = 4, KC_ALL = 7 };

// Issues the cp.async copies of the chosen parts of one chunk's operands: W, Q, Kd into
// the big part at shared address big, P, U, G_last into the small part at small; rows
// past len are zero-filled (cp.async with 0 source bytes).
template <int kCH, int kBV, int kSW, int kSTG>
__device__ __forceinline__ void kc_issue_f16(tile::u32 big, tile::u32 small, int parts,
                                             const __half* __restrict__ qg, const __half* __restrict__ kd,
                                             const __half* __restrict__ w, const __half* __restrict__ u,
                                             const __half* __restrict__ P, const float* __restrict__ gl,
                                             long long bos, int len, long long slot, long long H, long long h,
                                             int v0) {
  // Thread tid copies the 16-byte chunks tid % CPR of rows tid / CPR + k * (SW*32 / CPR)
  // (CPR chunks per row); rows at or past len copy 0 bytes from row 0 (a valid address).
  using L = F16Smem<kCH, kBV, kSTG>;
  constexpr int kRBS = L::rbs;
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
      for (int k = 0; k < kCH * 16 / (kSW * 32); ++k) {
        const int i = r0 + k * (kSW * 2);
        tile::cp_async16(d0 + t * L::q + k * (kSW * 2) * 2 * KC_KD, i < len ? base + s0 + k * (kSW * 2) * rs : base + o0,
                         i < len ? 16u : 0u);
      }
    }
  }
  if (!(parts & KC_SMP)) return;
  {  // P: 8 chunks per row
    const int r0 = tid >> 3, ch = tid & 7;
    const __half* Pc = P + (slot * H + h) * kCH * kCH;
    const tile::u32 d0 = small + kda::sw_off<2 * kCH>(r0, ch * 8);
#pragma unroll
    for (int k = 0; k < kCH * 8 / (kSW * 32); ++k) {
      const int i = r0 + k * (kSW * 4);
      tile::cp_async16(d0 + k * (kSW * 4) * 2 * kCH, Pc + (i < len ? i * kCH + ch * 8 : 0), i < len ? 16u : 0u);
    }
  }
  {  // U: BV/8 chunks per row
    constexpr int CPR = kBV / 8, RPI = kSW * 32 / CPR;  // chunks per row, rows per iteration
    const int r0 = tid / CPR, ch = tid % CPR;
    const tile::u32 d0 = small + L::u + kda::sw_off<kRBS>(r0, ch * 8);
    const __half* s0 = u + o0 + r0 * rs + v0 + ch * 8;
#pragma unroll
    for (int k = 0; k < kCH / RPI; ++k) {
      const int i = r0 + k * RPI;
      tile::cp_async16(d0 + k * RPI * kRBS, i < len ? s0 + k * RPI * rs : u + o0, i < len ? 16u : 0u);
    }
  }
  if (tid < KC_KD / 4) tile::cp_async16(small + L::g + tid * 16, gl + (slot * H + h) * KC_KD + tid * 4, 16u);
}

// The fp16 state kernel's start: the warp's block of S (rows sr0.., columns sc0..) from h0s
// (h0's [BV][KD] slice of this block, V-major) into registers, and its fp16 copy into Sh at sS.
template <int kBV, int kSW>
__device__ __forceinline__ void kc_f16_state_in(kda::frag_c (&S)[16 / kSW][kBV / 16], const float* h0s, tile::u32 sS,
                                                int sr0, int sc0, int gq, int tq) {
  constexpr int MTS = 16 / kSW, NS = kBV / 16, kRBS = 2 * kBV;
#pragma unroll
  for (int mt = 0; mt < MTS; ++mt) {
    const int d0 = sr0 + mt * 16 + gq, d1 = d0 + 8;
#pragma unroll
    for (int nt = 0; nt < NS; ++nt) {
      const int e = sc0 + nt * 8 + 2 * tq;
      kc_frag_from_vk(S[mt][nt], h0s, d0, e);
      kc_frag_to_f16(sS + kda::sw_off<kRBS>(d0, e), sS + kda::sw_off<kRBS>(d1, e), S[mt][nt]);
    }
  }
}

// Phase A of the fp16 state kernel: acc = [w; qg] Sh (w, qg in the big part at bb, Sh at sS),
// then v' = u - w Sh into Vh at sV (fp16, 0 in rows at or past len; u in the small part at sm).
// acc[1] (qg Sh) stays for phase B. Warp = (16-row block wm, column group wn).
template <int kCH, int kBV, int kSW, int kSTG>
__device__ __forceinline__ void kc_f16_vprime(kda::frag_c (&acc)[2][kBV / 8 / (kSW / 4)], tile::u32 bb, tile::u32 sm,
                                              tile::u32 sS, tile::u32 sV, int len, int wm, int wn, int i0, int i1,
                                              int tq) {
  using L = F16Smem<kCH, kBV, kSTG>;
  constexpr int NTW = kBV / 8 / (kSW / 4), kRBS = L::rbs;
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int nt = 0; nt < NTW; ++nt) kda::zero(acc[r][nt]);
  {
    const tile::u32 a2[2] = {bb, bb + L::q};
    kda::mma_strip_f16<KC_KD, NTW, 2, 2 * KC_KD, kRBS>(acc, a2, 16 * wm, sS, wn * NTW * 8);
  }
#pragma unroll
  for (int nt = 0; nt < NTW; ++nt) {
    const int e = (wn * NTW + nt) * 8 + 2 * tq;
    const float2 u0 = kda::unpack_f16x2(kda::ld_shared_u32(sm + L::u + kda::sw_off<kRBS>(i0, e)));
    const float2 u1 = kda::unpack_f16x2(kda::ld_shared_u32(sm + L::u + kda::sw_off<kRBS>(i1, e)));
    kda::st_shared_u32(sV + kda::sw_off<kRBS>(i0, e),
                       i0 < len ? kda::pack_f16x2(u0.x - acc[0][nt].x[0], u0.y - acc[0][nt].x[1]) : 0u);
    kda::st_shared_u32(sV + kda::sw_off<kRBS>(i1, e),
                       i1 < len ? kda::pack_f16x2(u1.x - acc[0][nt].x[2], u1.y - acc[0][nt].x[3]) : 0u);
  }
}

// grid (NSEQ*H, 1, 128/BV) (kc_item), block SW * 32, smem F16Smem::bytes. The state slice
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
// Phase B of the fp16 state kernel: o = scale (qg Sh + P v') out (bf16, rows below len), onto
// aq (qg Sh, from phase A); P at shared address pm, v' at sV. Warp = (16-row block wm, column
// group wn).
template <int kCH, int kBV, int kSW>
__device__ __forceinline__ void kc_f16_out(__nv_bfloat16* __restrict__ o, const kda::frag_c (&aq)[kBV / 8 / (kSW / 4)],
                                           tile::u32 pm, tile::u32 sV, long long bos, long long H, long long h, int v0,
                                           int len, float scale, int wm, int wn, int i0, int i1, int tq) {
  constexpr int NTW = kBV / 8 / (kSW / 4), kRBS = 2 * kBV;
  kda::frag_c pv[1][NTW];
#pragma unroll
  for (int nt = 0; nt < NTW; ++nt) pv[0][nt] = aq[nt];
  const tile::u32 a1[1] = {pm};
  kda::mma_strip_f16<kCH, NTW, 1, 2 * kCH, kRBS>(pv, a1, 16 * wm, sV, wn * NTW * 8);
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

// Phase C of the fp16 state kernel: S <- e^{G_last} S + kd^T v' on the warp's block of S
// (registers, rows sr0.., columns sc0..; G_last in Gs, kd at shared address kdh, v' at sV), then
// Sh <- fp16(S) at sS.
template <int kCH, int kBV, int kSW>
__device__ __forceinline__ void kc_f16_update(kda::frag_c (&S)[16 / kSW][kBV / 16], const float* Gs, tile::u32 kdh,
                                              tile::u32 sS, tile::u32 sV, int sr0, int sc0, int gq, int tq) {
  constexpr int MTS = 16 / kSW, NS = kBV / 16, kRBS = 2 * kBV;
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
  kda::mma_tile_f16_kk<kCH, MTS, NS, 2 * KC_KD, kRBS>(S, kdh, sr0, sV, sc0);
#pragma unroll
  for (int mt = 0; mt < MTS; ++mt) {
    const int d0 = sr0 + mt * 16 + gq, d1 = d0 + 8;
#pragma unroll
    for (int nt = 0; nt < NS; ++nt) {
      const int e = sc0 + nt * 8 + 2 * tq;
      kc_frag_to_f16(sS + kda::sw_off<kRBS>(d0, e), sS + kda::sw_off<kRBS>(d1, e), S[mt][nt]);
    }
  }
}

// The fp16 state kernel's end: the warp's block of S (registers) out to hts (ht's [BV][KD]
// slice of this block, V-major).
template <int kBV, int kSW>
__device__ __forceinline__ void kc_f16_state_out(float* hts, const kda::frag_c (&S)[16 / kSW][kBV / 16], int sr0,
                                                 int sc0, int gq, int tq) {
  constexpr int MTS = 16 / kSW, NS = kBV / 16;
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

// The body of kda_chunk_state for PREC 2, GM 0 (its entry point: kda_chunk_tf32.cu, launch
// bounds SW * 32 threads and kc_state_f16_blocks): chunk length kCH, kBV value columns per
// block, kSW warps, the operand buffering kSTG. (SW 16: 16 warps hide more of the latency of
// the per-chunk chain than 8 do. SW 4 is left out of the search by spec.json: BV 64 and 32
// spill under NVRTC for sm_100a/sm_103a.)
template <int kCH, int kBV, int kSW, int kSTG>
__device__ __forceinline__ void kc_state_f16(
    const float* __restrict__ h0, const long long* __restrict__ cu, const __half* __restrict__ qg,
    const __half* __restrict__ kd, const __half* __restrict__ w, const __half* __restrict__ u,
    const __half* __restrict__ P, const float* __restrict__ gl, const int* __restrict__ order,
    __nv_bfloat16* __restrict__ o, float* __restrict__ ht, long long T, long long H, long long K, long long V,
    long long NSEQ, float scale) {
  using L = F16Smem<kCH, kBV, kSTG>;
  constexpr int kRBS = L::rbs;
  static_assert(kSW == 4 || kSW == 8 || kSW == 16, "SW must be 4, 8 or 16");
  static_assert(kBV == 32 || kBV == 64 || kBV == 128, "BV must be 32, 64 or 128");
  static_assert(kSTG == 0 || kSTG == 1, "STG must be 0 or 1");
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < L::bytes) __trap();  // spec.json smem too small?
  (void)T;
  (void)NSEQ;
  constexpr int WN = kSW / 4;        // column groups in the [CH x BV] products
  constexpr int NTW = kBV / 8 / WN;  // n8 tiles per warp there
  constexpr int RG = kSW / 2;        // row groups of S (times 2 column halves)
  constexpr int MTS = 16 / kSW;      // 16-row blocks of S per warp
  constexpr int NS = kBV / 16;       // n8 tiles of S per warp
  static_assert(NTW % 2 == 0, "PREC 2 needs BV >= 16 * SW / 4");
  extern __shared__ __align__(128) unsigned char smb[];
  const tile::u32 sS = tile::smem_addr(smb), sV = sS + KC_KD * kRBS, sB = sV + kCH * kRBS;
  // The big and small parts of chunk c's buffer (STG 0: buffer c % 2; STG 1: one big part).
  auto big_of = [&](int cur) -> tile::u32 { return sB + (kSTG == 0 ? cur * L::buf : 0); };
  auto small_of = [&](int cur) -> tile::u32 { return sB + L::big + cur * (kSTG == 0 ? L::buf : L::small); };
  int n32, h32;
  kc_item(order, H, &n32, &h32);
  const long long n = n32, h = h32;
  const int v0 = blockIdx.z * kBV;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int wm = warp & 3, wn = warp >> 2;
  const int i0 = 16 * wm + gq, i1 = i0 + 8;
  const int sr0 = (warp % RG) * MTS * 16, sc0 = (warp / RG) * (kBV / 2);  // this warp's block of S

  const long long bos0 = cu[n], eos = cu[n + 1], slot0 = n + bos0 / kCH;
  if (bos0 < eos)
    kc_issue_f16<kCH, kBV, kSW, kSTG>(big_of(0), small_of(0), kSTG == 0 ? KC_ALL : KC_WQ | KC_SMP, qg, kd, w, u, P, gl, bos0,
                 (int)min((long long)kCH, eos - bos0), slot0, H, h, v0);
  tile::cp_async_commit();
  kda::frag_c S[MTS][NS];
  kc_f16_state_in<kBV, kSW>(S, h0 + ((n * H + h) * KC_KD + v0) * KC_KD, sS, sr0, sc0, gq, tq);
  kda::cp_async_wait_all();
  __syncthreads();
  for (long long c = 0; bos0 + c * kCH < eos; ++c) {
    const long long bos = bos0 + c * kCH, slot = slot0 + c;
    const int len = (int)min((long long)kCH, eos - bos);
    const int cur = (int)(c & 1);
    const tile::u32 bb = big_of(cur), sm = small_of(cur);
    const float* Gs = reinterpret_cast<const float*>(smb + (sm - sS) + L::g);
    const bool more = bos + kCH < eos;
    const int nlen = more ? (int)min((long long)kCH, eos - bos - kCH) : 0;
    if (kSTG == 1) {  // this chunk's Kd (its previous contents were last read before the barrier)
      kc_issue_f16<kCH, kBV, kSW, kSTG>(bb, sm, KC_KDP, qg, kd, w, u, P, gl, bos, len, slot, H, h, v0);
      tile::cp_async_commit();
    }
    if (more)  // STG 0: the whole next chunk; STG 1: its small part
      kc_issue_f16<kCH, kBV, kSW, kSTG>(big_of(cur ^ 1), small_of(cur ^ 1), kSTG == 0 ? KC_ALL : KC_SMP, qg, kd, w, u, P, gl,
                   bos + kCH, nlen, slot + 1, H, h, v0);
    tile::cp_async_commit();  // (possibly empty: STG 1 counts groups)
    // A: [w; qg] Sh; v' = u - w Sh -> Vh
    kda::frag_c acc[2][NTW];
    kc_f16_vprime<kCH, kBV, kSW, kSTG>(acc, bb, sm, sS, sV, len, wm, wn, i0, i1, tq);
    if (kSTG == 1) tile::cp_async_wait<1>();  // this chunk's Kd (the next small part may still be in flight)
    __syncthreads();
    if (kSTG == 1) {  // W and Q are consumed: the next chunk's
      if (more)
        kc_issue_f16<kCH, kBV, kSW, kSTG>(bb, sm, KC_WQ, qg, kd, w, u, P, gl, bos + kCH, nlen, slot + 1, H, h, v0);
      tile::cp_async_commit();
    }
    // B: o = scale (qg Sh + P v')
    kc_f16_out<kCH, kBV, kSW>(o, acc[1], sm, sV, bos, H, h, v0, len, scale, wm, wn, i0, i1, tq);
    // C: S <- e^{G_last} S + kd^T v'; Sh <- fp16(S)
    kc_f16_update<kCH, kBV, kSW>(S, Gs, bb + L::kd, sS, sV, sr0, sc0, gq, tq);
    kda::cp_async_wait_all();
    __syncthreads();
  }
  // (n reloaded: one register less across the chunk loop, which is at the 128 cap for BV 64 STG 1)
  kc_f16_state_out<kBV, kSW>(ht + (((long long)kc_seq_again(order, H) * H + h) * KC_KD + v0) * KC_KD, S, sr0, sc0, gq,
                             tq);
}
// kda_chunk_state's blocks per SM (its launch bounds): two for STG 1 at BV <= 64.
constexpr int kc_state_f16_blocks(int stg, int bv) {
  return (stg == 1 && bv <= 64) ? 2 : 1;
}
