// fa_mma.cuh — flash_attention's mma.sync building blocks, shared by baseline.cu and
// fa2_mma.cu: shared tiles of D-wide rows, the warp's online-softmax step over one key
// tile, the epilogue, the ragged tile lookup and the whole block loop with an optional
// cp.async pipeline.
//
// Layout of the work: a block owns BM query rows of one sequence and one query head
// (grid (HQ, cdiv(TQ, BM) + B), tiles numbered sequence by sequence, the spare blocks
// exit); each of its Warps warps owns 16 rows (MI 1) or 32 (MI 2: two 16-row groups, every
// K and V fragment feeding two mma). Q is loaded once into shared memory and, with MI 1,
// kept in registers as mma A fragments (MI 2 reads it again per key tile, for want of
// registers); K and V tiles of BN keys go through
// shared memory (Stages buffers filled by cp.async; Stages 1: load, wait, compute).
// S = Q K^T (m16n8k16, fp32), scaled into the log2 domain, masked only on tiles that
// cross the causal diagonal or the key tail, online softmax with the running maximum and
// sum of the lane's two rows; P is rounded to bf16 and used straight from the S
// accumulators as the A operand of P V (the FlashAttention-2 register trick); V's B
// fragments come from ldmatrix.trans of its [key][d] rows.
//
// Not here (issue 31): the Hopper path (wgmma, TMA, mbarrier rings, warp specialization,
// a persistent longest-first schedule). Pieces that belong in targets/common/tile/ once
// the tile library's owners take them: ldmatrix_x4_trans, st_rows (multi-panel rows).
#pragma once
#include "tile/base.cuh"
#include "tile/cp_async.cuh"
#include "tile/mma.cuh"
#include "fa_common.cuh"

namespace fa {

using tile::u32;

// ldmatrix .trans: four 8x8 b16 matrices, each lane receiving column-major pieces.
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&d)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(addr));
}

// ROWS rows of D bf16 (D a multiple of 64) in shared memory as D/64 panels of
// [ROWS][64] with the 128-byte swizzle (tile/base.cuh): a 1024-byte-aligned base keeps
// cp.async stores and ldmatrix reads conflict free.
template <int ROWS, int D>
struct st_rows {
  static_assert(D % 64 == 0 && ROWS % 8 == 0, "st_rows: D a multiple of 64, ROWS of 8");
  static constexpr int bytes = ROWS * D * 2;
  u32 base;
  // address of element (r, c), c a multiple of 8
  __device__ __forceinline__ u32 at(int r, int c) const {
    return base + (u32)(c >> 6) * (ROWS * 128) + tile::swz128((u32)(r * 64 + (c & 63)) * 2u);
  }
  // Hot loops: a lane's offset for rows r0 + lr and columns c0 + lc (lc 0 or 8), once;
  // at(r0 + lr, c0 + lc) is then at(off, r0, c0) for r0 a multiple of 8 and c0 of 16 (the
  // swizzle of c0's chunk bits is an XOR with a constant: no per-load swizzle arithmetic).
  static __device__ __forceinline__ u32 lane_off(int lr, int lc) { return tile::swz128((u32)(lr * 64 + lc) * 2u); }
  __device__ __forceinline__ u32 at(u32 off, int r0, int c0) const {
    return base + (u32)(c0 >> 6) * (ROWS * 128) + (u32)r0 * 128u + (off ^ (u32)((c0 & 63) * 2));
  }
};

// Copies rows [0, ROWS) of a row-major tile (row stride ld elements) into s; rows at or
// past nrows are zero-filled. One commit group is left open (the caller commits).
template <int ROWS, int D, int NT>
__device__ __forceinline__ void load_rows(const st_rows<ROWS, D>& s, const __nv_bfloat16* g, long long ld,
                                          long long nrows) {
  constexpr int CPR = D / 8;  // 16-byte chunks per row
  static_assert((ROWS * CPR) % NT == 0, "load_rows: whole rounds of 16-byte chunks");
#pragma unroll
  for (int it = 0; it < ROWS * CPR / NT; ++it) {
    const int e = it * NT + (int)threadIdx.x;
    const int r = e / CPR, c = (e % CPR) * 8;
    const bool ok = r < nrows;
    tile::cp_async16(s.at(r, c), ok ? (const void*)(g + r * ld + c) : (const void*)g, ok ? 16u : 0u);
  }
}

// The warp's MI groups of 16 query rows: output accumulators, per lane the running maximum
// (log2 domain) and partial sum of rows lane/4 and lane/4 + 8 of each group, and with
// MI 1 the Q fragments (held in registers; with MI 2 they are read from shared memory
// for every key tile, which leaves the registers to the second group's accumulators).
template <int D, int MI>
struct WarpRows {
  static constexpr bool kQInRegisters = MI == 1;
  tile::rt_a qa[kQInRegisters ? D / 16 : 1];
  tile::rt_c o[MI][D / 8];
  float m[MI][2], l[MI][2];
};

// Where a tile's keys may be masked: key index limits of the lane's rows.
template <int MI>
struct Mask {
  int key0;          // first key of the tile (in the sequence)
  int lk;            // keys of the sequence
  int limit[MI][2];  // causal: last key row r may see (i + Lk - Lq); else lk - 1
};

// Online softmax of one 16-row group's scores s (scaled into the log2 domain and masked
// here): running maximum and sum updated, O rescaled, s replaced by the probabilities.
template <int D, int BN, int MI, bool MASKED>
__device__ __forceinline__ void softmax_rows(WarpRows<D, MI>& w, int g, tile::rt_c (&s)[BN / 8], const Mask<MI>& mk,
                                             float scale_log2) {
  const int lane = threadIdx.x & 31;
  float mx[2] = {neg_inf(), neg_inf()};
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float x = s[j].x[e] * scale_log2;
      if constexpr (MASKED) {
        const int key = mk.key0 + j * 8 + 2 * (lane & 3) + (e & 1);
        if (key >= mk.lk || key > mk.limit[g][e >> 1]) x = neg_inf();
      }
      s[j].x[e] = x;
      mx[e >> 1] = fmaxf(mx[e >> 1], x);
    }
  float alpha[2], muse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    const float mnew = fmaxf(w.m[g][r], mx[r]);
    muse[r] = mnew == neg_inf() ? 0.f : mnew;  // a row with nothing kept yet: p = 0, no NaN
    alpha[r] = exp2f(w.m[g][r] - muse[r]);
    w.m[g][r] = mnew;
  }
  float ps[2] = {0.f, 0.f};
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float p = exp2f(s[j].x[e] - muse[e >> 1]);
      s[j].x[e] = p;
      ps[e >> 1] += p;
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) w.l[g][r] = w.l[g][r] * alpha[r] + ps[r];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    w.o[g][n].x[0] *= alpha[0];
    w.o[g][n].x[1] *= alpha[0];
    w.o[g][n].x[2] *= alpha[1];
    w.o[g][n].x[3] *= alpha[1];
  }
}

// One key tile for the warp's rows (first row wrow of the block's Q tile qs):
// S = Q K^T, mask (MASKED), online softmax, O += P V. Every K and V fragment read from
// shared memory feeds MI mma instructions.
template <int D, int BM, int BN, int MI, bool MASKED>
__device__ __forceinline__ void attend_tile(WarpRows<D, MI>& w, const st_rows<BM, D>& qs, int wrow,
                                            const st_rows<BN, D>& ks, const st_rows<BN, D>& vs, const Mask<MI>& mk,
                                            float scale_log2) {
  const int lane = threadIdx.x & 31;
  // lane offsets: Q as A (ldmatrix), K as B ([key][d] = n-major), V as B (.trans of [key][d])
  const u32 offq = st_rows<BM, D>::lane_off(lane & 15, (lane >> 4) << 3);
  const u32 offk = st_rows<BN, D>::lane_off((lane & 7) + ((lane >> 4) << 3), ((lane >> 3) & 1) << 3);
  const u32 offv = st_rows<BN, D>::lane_off((lane & 7) + (((lane >> 3) & 1) << 3), (lane >> 4) << 3);
  tile::rt_c s[MI][BN / 8];
#pragma unroll
  for (int g = 0; g < MI; ++g)
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) tile::zero(s[g][j]);
#pragma unroll
  for (int kd = 0; kd < D / 16; ++kd) {
    tile::rt_a qf[MI];
    if constexpr (WarpRows<D, MI>::kQInRegisters) {
      qf[0] = w.qa[kd];
    } else {
#pragma unroll
      for (int g = 0; g < MI; ++g) tile::ldmatrix_x4(qf[g].x, qs.at(offq, wrow + g * 16, kd * 16));
    }
#pragma unroll
    for (int j = 0; j < BN / 16; ++j) {
      tile::rt_b kb;
      tile::ldmatrix_x4(kb.x, ks.at(offk, j * 16, kd * 16));
#pragma unroll
      for (int g = 0; g < MI; ++g) {
        tile::mma(s[g][2 * j], qf[g], kb, 0);
        tile::mma(s[g][2 * j + 1], qf[g], kb, 1);
      }
    }
  }
#pragma unroll
  for (int g = 0; g < MI; ++g) softmax_rows<D, BN, MI, MASKED>(w, g, s[g], mk, scale_log2);
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    tile::rt_a pa[MI];  // P rows x keys 16kk..16kk+15 from the accumulators of s[2kk], s[2kk+1]
#pragma unroll
    for (int g = 0; g < MI; ++g) {
      pa[g].x[0] = tile::pack_bf16x2(s[g][2 * kk].x[0], s[g][2 * kk].x[1]);
      pa[g].x[1] = tile::pack_bf16x2(s[g][2 * kk].x[2], s[g][2 * kk].x[3]);
      pa[g].x[2] = tile::pack_bf16x2(s[g][2 * kk + 1].x[0], s[g][2 * kk + 1].x[1]);
      pa[g].x[3] = tile::pack_bf16x2(s[g][2 * kk + 1].x[2], s[g][2 * kk + 1].x[3]);
    }
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
      tile::rt_b vb;
      ldmatrix_x4_trans(vb.x, vs.at(offv, kk * 16, n * 16));
#pragma unroll
      for (int g = 0; g < MI; ++g) {
        tile::mma(w.o[g][2 * n], pa[g], vb, 0);
        tile::mma(w.o[g][2 * n + 1], pa[g], vb, 1);
      }
    }
  }
}

// Normalizes and stores the warp's rows (group g's first row of the lane: row_a + 16 g):
// O as bf16 pairs, LSE = m + log2(l) (base 2).
template <int D, int MI>
__device__ __forceinline__ void store_rows(WarpRows<D, MI>& w, const Problem& p, long long q_begin, long long lq,
                                           long long row_a, long long h) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int g = 0; g < MI; ++g)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = w.l[g][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const long long i = row_a + 16 * g + 8 * r;
      if (i >= lq) continue;
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const long long row = (q_begin + i) * p.HQ + h;
      __nv_bfloat16* out = p.o + row * D + 2 * (lane & 3);
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        *reinterpret_cast<u32*>(out + n * 8) =
            tile::pack_bf16x2(w.o[g][n].x[2 * r] * inv, w.o[g][n].x[2 * r + 1] * inv);
      if ((lane & 3) == 0) p.lse[row] = l > 0.f ? w.m[g][r] + log2f(l) : neg_inf();
    }
}

// A warp's rows before the first key tile: no maximum, no sum, O zero; the mask's limits
// (row_a the lane's first row in the sequence).
template <int D, int MI>
__device__ __forceinline__ void start_rows(WarpRows<D, MI>& w, Mask<MI>& mk, bool causal, long long row_a,
                                           long long shift, long long lk) {
  mk.key0 = 0;
  mk.lk = (int)lk;
#pragma unroll
  for (int g = 0; g < MI; ++g)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      w.m[g][r] = neg_inf();
      w.l[g][r] = 0.f;
      mk.limit[g][r] = (int)(causal ? row_a + 16 * g + 8 * r + shift : lk - 1);
    }
#pragma unroll
  for (int g = 0; g < MI; ++g)
#pragma unroll
    for (int n = 0; n < D / 8; ++n) tile::zero(w.o[g][n]);
}

// The whole block: BM query rows (Warps = BM / (16 MI) warps) of the tile blockIdx.y, head
// blockIdx.x, over key tiles of BN; Stages K/V buffers (1: synchronous loads).
// Shared memory: (BM + 2 * Stages * BN) * D * 2 bytes, 1024-byte aligned.
template <int D, int BM, int BN, int Warps, int Stages>
__device__ __forceinline__ void attend_block(const Problem& p) {
  constexpr int MI = BM / (16 * Warps);  // 16-row groups per warp
  static_assert(BM == 16 * MI * Warps && (MI == 1 || MI == 2), "each warp owns 16 or 32 query rows");
  static_assert(BN % 16 == 0 && Stages >= 1, "BN a multiple of 16");
  constexpr int NT = Warps * 32;
  extern __shared__ __align__(1024) unsigned char smem[];
  long long seq, row0;
  if (!find_tile(p.cu_q, p.B, blockIdx.y, BM, p.causal, &seq, &row0)) return;
  const long long h = blockIdx.x, hk = h / (p.HQ / p.HKV);
  const long long q_begin = p.cu_q[seq], lq = p.cu_q[seq + 1] - q_begin;
  const long long k_begin = p.cu_k[seq], lk = p.cu_k[seq + 1] - k_begin;
  const long long shift = lk - lq;  // bottom-right causal alignment
  const long long kend = p.causal ? min(lk, min(row0 + BM, lq) + shift) : lk;
  const int nt = kend > 0 ? (int)((kend + BN - 1) / BN) : 0;
  const u32 sbase = tile::smem_addr(smem);
  const st_rows<BM, D> qs{sbase};
  auto kstage = [&](int s) { return st_rows<BN, D>{sbase + st_rows<BM, D>::bytes + 2 * s * st_rows<BN, D>::bytes}; };
  auto vstage = [&](int s) { return st_rows<BN, D>{kstage(s).base + st_rows<BN, D>::bytes}; };
  const long long ldq = p.HQ * D, ldk = p.HKV * D;
  const __nv_bfloat16* kg = p.k + (k_begin * p.HKV + hk) * D;
  const __nv_bfloat16* vg = p.v + (k_begin * p.HKV + hk) * D;
  auto load_kv = [&](int t, int s) {
    load_rows<BN, D, NT>(kstage(s), kg + (long long)t * BN * ldk, ldk, lk - (long long)t * BN);
    load_rows<BN, D, NT>(vstage(s), vg + (long long)t * BN * ldk, ldk, lk - (long long)t * BN);
  };
  load_rows<BM, D, NT>(qs, p.q + ((q_begin + row0) * p.HQ + h) * D, ldq, lq - row0);
  constexpr int PRE = Stages > 1 ? Stages - 1 : 0;
#pragma unroll
  for (int s = 0; s < PRE; ++s) {
    if (s < nt) load_kv(s, s);
    tile::cp_async_commit();
  }
  if constexpr (Stages == 1) tile::cp_async_commit();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  WarpRows<D, MI> w;
  const int wrow = warp * 16 * MI;  // the warp's first row in the block's tile
  const long long row_a = row0 + wrow + (lane >> 2);
  Mask<MI> mk;
  start_rows<D, MI>(w, mk, p.causal, row_a, shift, lk);
  bool q_loaded = false;
  for (int t = 0; t < nt; ++t) {
    if constexpr (Stages == 1) {
      __syncthreads();  // every warp is done with the previous tile
      load_kv(t, 0);
      tile::cp_async_commit();
      tile::cp_async_wait<0>();
    } else {
      tile::cp_async_wait<Stages - 2>();
    }
    __syncthreads();
    if constexpr (Stages > 1) {  // refill the buffer the previous iteration consumed
      if (t + Stages - 1 < nt) load_kv(t + Stages - 1, (t + Stages - 1) % Stages);
      tile::cp_async_commit();
    }
    if (WarpRows<D, MI>::kQInRegisters && !q_loaded) {
#pragma unroll
      for (int kd = 0; kd < D / 16; ++kd)
        tile::ldmatrix_x4(w.qa[kd].x, qs.at(wrow + (lane & 15), kd * 16 + ((lane >> 4) << 3)));
      q_loaded = true;
    }
    const int s = Stages == 1 ? 0 : t % Stages;
    mk.key0 = t * BN;
    // tiles past the key tail or across the diagonal of the block's first row are masked
    const bool masked = (long long)mk.key0 + BN > lk || (p.causal && (long long)mk.key0 + BN - 1 > row0 + shift);
    if (masked)
      attend_tile<D, BM, BN, MI, true>(w, qs, wrow, kstage(s), vstage(s), mk, p.scale_log2);
    else
      attend_tile<D, BM, BN, MI, false>(w, qs, wrow, kstage(s), vstage(s), mk, p.scale_log2);
  }
  tile::cp_async_wait<0>();
  store_rows<D, MI>(w, p, q_begin, lq, row_a, h);
}

// D is a shape symbol: the kernels dispatch on it (64 or 128; anything else traps).
template <int BM, int BN, int Warps, int Stages>
__device__ __forceinline__ void attend(const Problem& p, long long D) {
  if (D == 64)
    attend_block<64, BM, BN, Warps, Stages>(p);
  else if (D == 128)
    attend_block<128, BM, BN, Warps, Stages>(p);
  else
    __trap();
}

}  // namespace fa
