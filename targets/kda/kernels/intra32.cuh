// targets/kda/kernels/intra32.cuh — the CH 32 intra kernels (kda_chunk_intra, and with PIPE the beside
// and lead ones) and kda_chunk_flags.
// Its body, kc_intra32, is a template over the parameters (template <class C>, C a KcParams) that
// runs its phases, each a device function: kc_intra32_load, _gate, _p_l (the products: _pl),
// _images (_qk), _v_inverse (_inverse), _out (_wu, _store). The entry points are in
// targets/kda/kda_chunk_wgmma.cu and kda_chunk_seg.cu. Included after kernels/config.cuh and
// kernels/common.cuh.
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
#define KC_LDL32 36
// (Phase 0's row addresses from 32-bit offsets: -6.8 % of the intra kernel's instructions
// against the 64-bit code before, eighteenth session; the knob KC_I32 retired 2026-12-03.)
#define KC_U32PL 4  // unroll of the P/L k-loop (8 steps)
#define KC_U32QK 8  // unroll of the qg/kd row loop (8 rows per thread)
// (Enumerators, not constexpr variables: under NVRTC's -default-device those become __device__
// variables of every module that includes this file.)
enum : int { kU32PL = KC_U32PL, kU32QK = KC_U32QK };
#define KC_XP32 2560  // the kh = 1 partial sums of P (bytes)
static_assert(KC_XP32 <= 32 * KC_LDB * 2, "UA 0: Xp fits in v's tile");
// The shared-memory layout above, byte offsets (enumerators: see ChunkBuf in state_wgmma.cuh).
template <class C>
struct Intra32Smem {
  enum : int {
    gc = 0,                        // f32 [32][LDG]
    la = gc + 4 * 32 * KC_LDG,     // f32 [32][LDL32]
    xr = la + 4 * 32 * KC_LDL32,   // Xp (phase 2), then v (UA 0, phases 3-4)
    qs = xr + (C::ua ? KC_XP32 : 32 * KC_LDB * 2),             // bf16 [32][LDB] (then A16)
    ks = qs + 2 * 32 * KC_LDB,     // bf16 [32][LDB]
    ps = ks + 2 * 32 * KC_LDB,     // the P image, fp16 [32][32]
    rq = ps + 2 * 32 * 32,         // f32 [32]
    rk = rq + 4 * 32,
    bs = rk + 4 * 32,
    bytes = bs + 4 * 32,
  };
  static_assert(bytes == (C::ua ? 44416 : 50560), "five blocks a SM with UA 1, four with UA 0");
};
// The CH 32 intra kernel's qg = q e^G and kd = k e^{G_last - G} (normalized) as their images,
// Ks <- k e^G (fp16, in place), and e^{G_last} (RC 0, 2). Thread = channels 4 lane .. 4 lane + 3
// of rows warp + 4 it: 8-byte loads and stores, a warp's store covering a whole image row (by
// channel pairs instead: intra +2 %). Rows past the sequence hold q = k = 0 and a finite G: zeros.
template <class C>
__device__ __forceinline__ void kc_intra32_qk(typename C::elem* __restrict__ qg, typename C::elem* __restrict__ kd,
                                              float* __restrict__ gl, const float* Gc, const __nv_bfloat16* Qs,
                                              __nv_bfloat16* Ks, const float* rq, const float* rk, long long slot,
                                              long long H, long long h, int len, int tid, int warp, int lane) {
  const int c4 = 4 * lane;
  const float4 GL = *reinterpret_cast<const float4*>(Gc + (len - 1) * KC_LDG + c4);
  const long long gb = (slot * H + h) * (C::ch * KC_KD);
  // (row i = warp + 4 it has swizzle i % 8, which alternates with it: the image offset is
  // that of row warp or warp + 4 plus (it / 2) 1024 bytes, an immediate of the store)
  const int io0 = (int)(kda::sw128_off<C::ch>(warp, c4) >> 1), io1 = (int)(kda::sw128_off<C::ch>(warp + 4, c4) >> 1);
  typename C::elem* const qg0 = qg + gb;
  typename C::elem* const kd0 = kd + gb;
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

// The CH 32 intra kernel's phase 4 (RC 0, 2): w = A16 (k e^G) and (UA 0) u = A16 v on fp16 mma
// (A diag(b) from A16, k e^G from Ks, v from Vs, bf16 converted in registers), staged as the
// sw128 images Ws, Us (zeros past len). Warp = columns 32 warp .. +31.
template <class C>
__device__ __forceinline__ void kc_intra32_wu(__half* Ws, __half* Us, const __nv_bfloat16* Ks, const __nv_bfloat16* Vs,
                                              const __half* A16, int len, int warp, int lane, int gq, int tq) {
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
      if (C::ua) continue;
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
          if (C::ua) continue;
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
      const int x0 = (int)(kda::sw128_off<C::ch>(i0, e) >> 1), x1 = (int)(kda::sw128_off<C::ch>(i1, e) >> 1);
      *reinterpret_cast<tile::u32*>(Ws + x0) = z0 ? 0u : kda::pack_f16x2(accW[I][nt].x[0], accW[I][nt].x[1]);
      *reinterpret_cast<tile::u32*>(Ws + x1) = z1 ? 0u : kda::pack_f16x2(accW[I][nt].x[2], accW[I][nt].x[3]);
      if (C::ua) continue;
      *reinterpret_cast<tile::u32*>(Us + x0) = z0 ? 0u : kda::pack_f16x2(accU[I][nt].x[0], accU[I][nt].x[1]);
      *reinterpret_cast<tile::u32*>(Us + x1) = z1 ? 0u : kda::pack_f16x2(accU[I][nt].x[2], accU[I][nt].x[3]);
    }
  }
}

// The CH 32 intra kernel's inverse (phase 3): A = (I+L)^-1 diag(b) into A16 ([32][LDA16] fp16)
// from L in LA ([32][LDL32]): the two diagonal blocks by forward substitution (warps 0, 1), then
// A10 = -A11 (L10 A00) on CUDA cores, Gc's first 256 floats its scratch. All 128 threads
// (barriers inside).
template <class C>
__device__ __forceinline__ void kc_intra32_inverse(float* LA, float* Gc, __half* A16, const float* bs, int warp, int tid) {
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
}

// The CH 32 intra kernel's P and L products (phase 2) over the warp's channel half kh, reference
// row r = 16 I, into accP, accL: units 0, 1 the diagonal block's column halves (columns 16I + 8s +
// g: the lane's own rows i0, i1), 2, 3 (I = 1) the columns 8s + g of row block 0. Lane t takes
// the channel pair c, c+1 (c = 8 st + 2t) as k = t, t+4 of the m16n8k8 step.
template <class C>
__device__ __forceinline__ void kc_intra32_pl(kda::frag_c (&accP)[4], kda::frag_c (&accL)[4], const float* Gc,
                                              const __nv_bfloat16* Qs, const __nv_bfloat16* Ks, int I, int kh, int gq,
                                              int tq) {
  const int r = 16 * I, i0 = r + gq, i1 = i0 + 8;
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
    aq.x[0] = kc_tf<C>(q0.x * e00);
    aq.x[1] = kc_tf<C>(q1.x * e10);
    aq.x[2] = kc_tf<C>(q0.y * e01);
    aq.x[3] = kc_tf<C>(q1.y * e11);
    ak.x[0] = kc_tf<C>(k0.x * e00);
    ak.x[1] = kc_tf<C>(k1.x * e10);
    ak.x[2] = kc_tf<C>(k0.y * e01);
    ak.x[3] = kc_tf<C>(k1.y * e11);
    kda::frag_b b0, b1;
    b0.x[0] = kc_tf<C>(k0.x * kda::ex2(-d00));
    b0.x[1] = kc_tf<C>(k0.y * kda::ex2(-d01));
    b1.x[0] = kc_tf<C>(k1.x * kda::ex2(-d10));
    b1.x[1] = kc_tf<C>(k1.y * kda::ex2(-d11));
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
        b.x[0] = kc_tf<C>(kj.x * kda::ex2(gr.x - gj.x));
        b.x[1] = kc_tf<C>(kj.y * kda::ex2(gr.y - gj.y));
        kda::mma(accP[2 + s], aq, b);
        kda::mma(accL[2 + s], ak, b);
      }
    }
  }
}

// The CH 32 intra kernel's phase 0: g's rows of the gate's thread mapping (channel pair cpc,
// rows 16 qr + r) into graw; cp.async of thread piece lc8 of rows lr + 8 it of k and q into Ks,
// Qs (rows past len read nothing, from the chunk's first row; their copies zero-fill).
// (row offsets within the chunk in 32 bits: 32 rows of H x 128 elements; one 64-bit base
// per tensor, so that each row's address is one wide multiply-add, not 64-bit arithmetic)
template <class C>
__device__ __forceinline__ void kc_intra32_load(tile::u32 (&graw)[16], __nv_bfloat16* Ks, __nv_bfloat16* Qs,
                                                const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                                                const __nv_bfloat16* __restrict__ g, long long bos, long long H,
                                                long long h, long long rstride, long long rbase, int len, int cpc, int qr,
                                                int lr, int lc8) {
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

// The CH 32 intra kernel's phase 1: the gate and its cumulative sum as G (log2 units) into Gc
// (thread = channel pair cpc x 16-row half qr, g's raw rows in graw; the first half's totals
// reach the second through tot), then the row norms 1/|q|, 1/|k| into rq, rk (warp = rows
// 8 warp .. + 7, lane = channels 4 lane .. + 3, summed across the warp; 0 past len). Waits for
// the thread's k and q copies; one barrier inside. (The norms as a function of their own
// changed the kernel's code: one function, SASS identical, 2026-12-04.)
template <class C>
__device__ __forceinline__ void kc_intra32_gate(float* Gc, float* tot, float* rq, float* rk, const __nv_bfloat16* Qs,
                                                const __nv_bfloat16* Ks, const tile::u32 (&graw)[16],
                                                const float* dt_bias, long long h, int cpc, int qr, int len, float ga2,
                                                float lb2, int warp, int lane) {
  {
    float s0[16], s1[16];
    kc_gate_quarter(
        s0, s1, [&](int i) { return kda::bf16x2_bits_to_f32(graw[i - 16 * qr]); }, dt_bias, h, cpc, qr, len, ga2, lb2);
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
}

// The CH 32 intra kernel's phase 2: P and L (kc_intra32_pl: warp = (16-row block I, channel half
// kh)), then their sums: the kh = 1 warps leave theirs in Xp (at Xr) and LA, the kh = 0 warps add
// them, scale, mask and write P (its sw64 image, Ps) and L (LA). Units: accX[0], accX[1] the
// diagonal block's column halves (columns 16I + 8s + g: the lane's own rows i0, i1), accX[2],
// accX[3] (I = 1) the columns 8s + g of row block 0. One barrier inside.
template <class C>
__device__ __forceinline__ void kc_intra32_p_l(kda::frag_c (&accP)[4], kda::frag_c (&accL)[4], float* LA,
                                               unsigned char* Xr, __half* Ps, const float* Gc, const __nv_bfloat16* Qs,
                                               const __nv_bfloat16* Ks, const float* rq, const float* rk,
                                               const float* bs, int warp, int lane, int gq, int tq) {
  const int I = warp >> 1, kh = warp & 1;
  const int r = 16 * I, i0 = r + gq, i1 = i0 + 8;
  kc_intra32_pl<C>(accP, accL, Gc, Qs, Ks, I, kh, gq, tq);
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
          *reinterpret_cast<float4*>(Xw + xoff(s)) =
              make_float4(accP[s].x[0], accP[s].x[1], accP[s].x[2], accP[s].x[3]);
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
        *reinterpret_cast<tile::u32*>(Ps + kc_pidx<C>(i0, j)) =
            kda::pack_f16x2(j <= i0 ? p00 : 0.f, j + 1 <= i0 ? p01 : 0.f);
        *reinterpret_cast<tile::u32*>(Ps + kc_pidx<C>(i1, j)) =
            kda::pack_f16x2(j <= i1 ? p10 : 0.f, j + 1 <= i1 ? p11 : 0.f);
        *reinterpret_cast<float2*>(LA + i0 * KC_LDL32 + j) =
            make_float2(j < i0 ? b0 * l00 : 0.f, j + 1 < i0 ? b0 * l01 : 0.f);
        *reinterpret_cast<float2*>(LA + i1 * KC_LDL32 + j) =
            make_float2(j < i1 ? b1 * l10 : 0.f, j + 1 < i1 ? b1 * l11 : 0.f);
      }
    }
  }
}

// The CH 32 intra kernel's images for the state kernel (after phase 2): RC 0, 2: qg, kd, Ks <-
// k e^G and e^{G_last} (kc_intra32_qk); RC 1 (its producer forms them): the row norms 1/|q|
// (gl[0..31]) and 1/|k| (gl[32..63]) instead.
template <class C>
__device__ __forceinline__ void kc_intra32_images(typename C::elem* qg, typename C::elem* kd, float* gl,
                                                  const float* Gc, const __nv_bfloat16* Qs, __nv_bfloat16* Ks,
                                                  const float* rq, const float* rk, long long slot, long long H,
                                                  long long h, int len, int tid, int warp, int lane) {
  if constexpr (C::rc == 1) {
    if (tid < 64) gl[(slot * H + h) * KC_KD + tid] = tid < 32 ? rq[tid] : rk[tid - 32];
    (void)qg;
    (void)kd;
  } else {
    kc_intra32_qk<C>(qg, kd, gl, Gc, Qs, Ks, rq, rk, slot, H, h, len, tid, warp, lane);
  }
}

// The CH 32 intra kernel's phase 3: UA 0: v's rows into Vs (cp.async, thread = 16-byte piece lc8
// of rows lr + 8 it, zeros past len), in flight during the inverse (kc_intra32_inverse, barriers
// inside); then the thread waits for its copies.
template <class C>
__device__ __forceinline__ void kc_intra32_v_inverse(__nv_bfloat16* Vs, float* LA, float* Gc, __half* A16,
                                                     const float* bs, const __nv_bfloat16* v, long long rbase,
                                                     long long rstride, int len, int lr, int lc8, int warp, int tid) {
  if constexpr (C::ua) {
    (void)v;
    (void)Vs;
  } else {
#pragma unroll
    for (int it = 0; it < 4; ++it) {
      const int i = lr + 8 * it;
      tile::cp_async16(tile::smem_addr(Vs) + ((i * KC_LDB + lc8) * 2), v + rbase + (i < len ? i * rstride : 0),
                       i < len ? 16u : 0u);
    }
    kda::cp_async_commit();
  }
  kc_intra32_inverse<C>(LA, Gc, A16, bs, warp, tid);
  kda::cp_async_wait_all();  // v (this thread's copies)
}

// The CH 32 intra kernel's end: w (Ws; RC 1: none), u (Us; UA 1: -A diag(b)'s image) and P (Ps)
// out by bulk copies from thread 0, once every thread's images are fenced and in place; kBeside:
// the chunk's flag set once the copies are complete.
template <class C, bool kBeside>
__device__ __forceinline__ void kc_intra32_store(typename C::elem* w, typename C::elem* u, typename C::elem* P,
                                                 int* flags, const __half* Ws, const __half* Us, const __half* Ps,
                                                 long long slot, long long H, long long h, int tid) {
  kda::fence_async_shared();  // (also the P image written in phase 2)
  __syncthreads();
  if (tid == 0) {
    const long long base = (slot * H + h) * (C::ch * KC_KD);
    if (C::rc != 1)
      tile::bulk_s2g(w + base, tile::smem_addr(Ws), C::ch * KC_KD * 2);  // (RC 1: the state kernel forms w)
    if (C::ua)
      tile::bulk_s2g(u + (slot * H + h) * (C::ch * C::ch), tile::smem_addr(Us), C::ch * C::ch * 2);
    else
      tile::bulk_s2g(u + base, tile::smem_addr(Us), C::ch * KC_KD * 2);
    tile::bulk_s2g(P + (slot * H + h) * (C::ch * C::ch), tile::smem_addr(Ps), C::ch * C::ch * 2);
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

// The CH 32 intra kernel's phase 4 and its end: w = A16 (k e^G), u = A16 v (kc_intra32_wu; warp =
// columns 32 warp .. +31; RC 1: neither), staged over Gc as Ws, Us; UA 1: -A diag(b) as the sw64
// image [32 i][32 j] in u's place (thread = row tid / 4, 16-byte piece tid % 4; zeros above the
// diagonal blocks, where A16 holds no values, and past len); then kc_intra32_store. x: the
// thread's piece of that image, zeros, declared by the caller (kc_intra32): as a local of this
// function, or of a function of the image alone, it changed the SASS, its four values' order at
// the branch's end (2026-12-04, and again 2026-12-05).
template <class C, bool kBeside>
__device__ __forceinline__ void kc_intra32_out(uint4& x, typename C::elem* w, typename C::elem* u, typename C::elem* P,
                                               int* flags, float* Gc, const __nv_bfloat16* Ks, const __nv_bfloat16* Vs,
                                               const __half* A16, const __half* Ps, long long slot, long long H,
                                               long long h, int len, int tid, int warp, int lane, int gq, int tq) {
  __half* Ws = reinterpret_cast<__half*>(Gc);
  __half* Us = Ws + C::ch * KC_KD;
  if constexpr (C::rc != 1) kc_intra32_wu<C>(Ws, Us, Ks, Vs, A16, len, warp, lane, gq, tq);
  if constexpr (C::ua) {
    const int i = tid >> 2, c8 = 8 * (tid & 3);  // -A diag(b) as the sw64 image in u's place
    if (i < len && (c8 >> 4) <= (i >> 4)) {
      x = *reinterpret_cast<const uint4*>(A16 + i * KC_LDA16 + c8);
      x.x ^= 0x80008000u;
      x.y ^= 0x80008000u;
      x.z ^= 0x80008000u;
      x.w ^= 0x80008000u;
    }
    *reinterpret_cast<uint4*>(Us + (kda::sw_off<64>(i, c8) >> 1)) = x;
  }
  kc_intra32_store<C, kBeside>(w, u, P, flags, Ws, Us, Ps, slot, H, h, tid);
}

// The CH 32 intra kernel's body (its entry points: kda_chunk_intra, and with PIPE
// kda_chunk_intra_beside and kda_chunk_intra_lead; launch bounds 128 threads and
// kc_intra_min_blocks); kBeside: flags set per chunk, blocks chunk-major from slot_off (the order
// the state blocks consume chunks in). Phase 0: the element offsets of the thread's four rows are
// shared by k and q, and rows past the sequence read nothing, from the chunk's first row. Phase 1
// needs no barrier before it: the gate reads only the thread's registers, and Ps and bs are next
// touched after phase 1's barriers. Phase 4 and the copies out: kc_intra32_out.
template <class C, bool kBeside>
__device__ __forceinline__ void kc_intra32(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
    const __nv_bfloat16* __restrict__ g, const __nv_bfloat16* __restrict__ beta, const float* __restrict__ A_log,
    const float* __restrict__ dt_bias, const long long* __restrict__ cu, typename C::elem* __restrict__ qg,
    typename C::elem* __restrict__ kd, typename C::elem* __restrict__ w, typename C::elem* __restrict__ u,
    typename C::elem* __restrict__ P, float* __restrict__ gl, int* __restrict__ order, long long T, long long H,
    long long K, long long V, long long NSEQ, float lower_bound, int* flags, long long slot_off) {
  static_assert(C::ch == 32 && C::gm == 2, "the CH 32 intra kernel (GM 2)");
  using L = Intra32Smem<C>;
  if (K != KC_KD || V != KC_KD || tile::dynamic_smem_bytes() < L::bytes) __trap();  // spec.json smem too small?
  extern __shared__ __align__(16) float sm[];
  unsigned char* const sb = reinterpret_cast<unsigned char*>(sm);
  float* Gc = sm;
  float* LA = reinterpret_cast<float*>(sb + L::la);
  unsigned char* Xr = sb + L::xr;
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(sb + L::qs);
  __nv_bfloat16* Ks = reinterpret_cast<__nv_bfloat16*>(sb + L::ks);
  [[maybe_unused]] __nv_bfloat16* Vs = reinterpret_cast<__nv_bfloat16*>(Xr);  // phases 3-4 (UA 0)
  __half* A16 = reinterpret_cast<__half*>(Qs);       // phases 3-4
  __half* Ps = reinterpret_cast<__half*>(sb + L::ps);
  static_assert(32 * KC_LDA16 <= 32 * KC_LDB, "A16 fits in Qs");
  float* rq = reinterpret_cast<float*>(sb + L::rq);
  float* rk = reinterpret_cast<float*>(sb + L::rk);
  float* bs = reinterpret_cast<float*>(sb + L::bs);
  float* tot = LA;  // phase 1 only
  const long long slot = kBeside ? blockIdx.y + slot_off : blockIdx.x, h = kBeside ? blockIdx.x : blockIdx.y;
  if (slot == 0 && h == 0) kc_order<C>(cu, NSEQ, T, order, reinterpret_cast<int*>(sm));
  long long n, c;
  if (!kc_slot(cu, NSEQ, slot, &n, &c, C::ch)) return;
  const long long bos = cu[n] + c * C::ch;
  const int len = (int)min((long long)C::ch, cu[n + 1] - bos);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;

  // ---- phase 0: g's rows of the gate's thread mapping (channel pair cpc, rows 16 qr + r)
  // into registers; then thread = 16-byte piece lc8 of rows lr + 8 it of k and q.
  const int cpc = 2 * (tid & 63), qr = tid >> 6;  // channel pair; 16-row half
  const long long rstride = H * KC_KD;
  tile::u32 graw[16];
  const int lr = tid >> 4, lc8 = (tid & 15) * 8;
  const long long rbase = (bos * H + h) * KC_KD + lc8;
  kc_intra32_load<C>(graw, Ks, Qs, q, k, g, bos, H, h, rstride, rbase, len, cpc, qr, lr, lc8);
  reinterpret_cast<uint4*>(Ps)[tid] = make_uint4(0u, 0u, 0u, 0u);  // (rows 0..15 x columns 16..31 stay 0)
  const float ga2 = expf(A_log[h]) * 1.4426950408889634f;
  const float lb2 = lower_bound * 1.4426950408889634f;
  if (tid < C::ch) bs[tid] = tid < len ? 1.0f / (1.0f + expf(-kc_bf(beta, (bos + tid) * H + h))) : 0.f;

  // ---- phase 1: gate, cumulative sum, norms (no barrier before: the header says why).
  kc_intra32_gate<C>(Gc, tot, rq, rk, Qs, Ks, graw, dt_bias, h, cpc, qr, len, ga2, lb2, warp, lane);
  __syncthreads();

  // ---- phase 2: P and L (P's image in Ps, L in LA), then the images for the state kernel.
  {
    kda::frag_c accP[4], accL[4];
    kc_intra32_p_l<C>(accP, accL, LA, Xr, Ps, Gc, Qs, Ks, rq, rk, bs, warp, lane, gq, tq);
  }
  kc_intra32_images<C>(qg, kd, gl, Gc, Qs, Ks, rq, rk, slot, H, h, len, tid, warp, lane);
  __syncthreads();  // (the partial sums in Xp and LA and q in Qs are consumed)

  // ---- phase 3: UA 0: v into Xr (in flight during the inverse); A = (I+L)^-1 diag(b) into A16.
  kc_intra32_v_inverse<C>(Vs, LA, Gc, A16, bs, v, rbase, rstride, len, lr, lc8, warp, tid);
  __syncthreads();

  // ---- phase 4: w = A16 (k e^G), u = A16 v (RC 1: neither); UA 1: -A diag(b) in u's place, the
  // thread's piece x (declared here: kc_intra32_out's header says why); then the copies out.
  uint4 x = make_uint4(0u, 0u, 0u, 0u);
  kc_intra32_out<C, kBeside>(x, w, u, P, flags, Gc, Ks, Vs, A16, Ps, slot, H, h, len, tid, warp, lane, gq, tq);
}
// PIPE: clears the intra kernel's flags, one per (chunk slot, head) (the body of
// kda_chunk_flags, grid cdiv(n, 256) x 256).
template <class C>
__device__ __forceinline__ void kc_flags(int* flags, long long T, long long H, long long NSEQ) {
  const long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < (NSEQ + T / C::ch) * H) flags[i] = 0;
}

// The intra kernel of either chunk length (kernels/intra64.cuh is included first): its body,
// its threads and the blocks per SM its registers are allocated for (CH 32: shared memory
// allows as many).
template <class C, class... Args>
__device__ __forceinline__ void kc_intra(Args... args) {
  if constexpr (C::ch == 64)
    kc_intra64<C>(args...);
  else
    kc_intra32<C, false>(args..., nullptr, 0);
}
constexpr int kc_intra_threads(int ch) {
  return ch == 64 ? 256 : 128;
}
constexpr int kc_intra_min_blocks(int ch, int ua) {
  return ch == 64 ? 2 : ua ? 5 : 4;
}
template <class C>
constexpr int kc_intra_smem() {
  if constexpr (C::ch == 64)
    return Intra64Smem<C>::bytes;
  else
    return Intra32Smem<C>::bytes;
}
