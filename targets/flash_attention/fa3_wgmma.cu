// fa3_wgmma.cu — tessera flash_attention template for Hopper (sm_90a): FlashAttention-3's
// structure on wgmma, TMA and an mbarrier ring, with warp specialization.
//
// Parameters (#defined by tessera):
//   BLOCK_N    keys per K/V tile (64, 128)
//   CONSUMERS  consumer warpgroups, 64 query rows each (1, 2): the block's query tile is
//              64 * CONSUMERS rows
//   STAGES     K/V buffers in the ring (2, 3)
// Launch: grid (HQ, cdiv(TQ, 64 * CONSUMERS) + B), block 128 * (CONSUMERS + 1), dynamic
// shared memory (64 * CONSUMERS + 2 * STAGES * BLOCK_N) * D * 2 + 256 bytes; tensor maps of
// q, k and v with boxes of 64 channels x 1 head x 64 tokens, 128-byte swizzle.
//
// Per block (one sequence, one query head, its query tile; tiles numbered as fa2_mma's,
// causal ones longest first):
//   warpgroup 0, the producer: one thread loads the Q tile once and then every K and V
//     tile through the ring (tile/pipeline.cuh), K and V on separate "full" barriers so
//     S = Q K^T starts before V has landed; its registers go to the consumers (setmaxnreg).
//   warpgroups 1..CONSUMERS: 64 query rows each. Per key tile: S = Q K^T (wgmma, both
//     operands from shared memory, K-major), the online softmax in registers
//     (tile/online_softmax.cuh; masked only on tiles crossing the causal diagonal or the
//     key tail), P rounded to bf16 straight from S's accumulators into wgmma A fragments,
//     O += P V (wgmma, A from registers, V MN-major from shared memory), the buffer
//     released. Two consumers overlap one's softmax with the other's products.
//   Epilogue: O / l as bf16 and LSE = m + log2 l (base 2) from registers, rows past the
//     sequence's end not written.
// Shared memory: Q [D/64][64 CONSUMERS][64], then per stage K and V [D/64][BLOCK_N][64]
// (sw128 tiles, tile/warpgroup.cuh), then the barriers. Rows a box reads past the
// sequence's end belong to the next sequence (or are zeros past the tensor): masked keys,
// unwritten query rows.
#include "fa_common.cuh"
#include "tile/online_softmax.cuh"
#include "tile/pipeline.cuh"
#include "tile/tma.cuh"
#include "tile/warpgroup.cuh"

namespace fa3 {

using tile::rt_c;
using tile::u32;

constexpr int kBox = 64;                // rows (tokens) per TMA box; 64 channels wide
constexpr u32 kBoxBytes = kBox * 128u;  // one box: 64 rows of 128 bytes

struct Maps {
  const tile::tmap *q, *k, *v;
};

// The block's shared memory: Q, NS pairs of K and V buffers, barriers.
template <int D, int BM, int BN, int NS>
struct Layout {
  static constexpr u32 q_bytes = BM * D * 2, kv_bytes = BN * D * 2;
  static constexpr u32 barriers = q_bytes + 2 * NS * kv_bytes;  // Q's barrier, K ring, V ring
  static constexpr u32 bytes = barriers + 8 * (1 + 4 * NS);
  static_assert(q_bytes % 1024 == 0 && kv_bytes % 1024 == 0, "sw128 tiles stay 1024-byte aligned");
  u32 base;
  __device__ __forceinline__ u32 q() const { return base; }
  __device__ __forceinline__ u32 k(int s) const { return base + q_bytes + 2 * s * kv_bytes; }
  __device__ __forceinline__ u32 v(int s) const { return k(s) + kv_bytes; }
  __device__ __forceinline__ u32 q_full() const { return base + barriers; }
  __device__ __forceinline__ tile::Ring<NS> k_ring() const { return {base + barriers + 8}; }
  __device__ __forceinline__ tile::Ring<NS> v_ring() const { return {base + barriers + 8 + 16 * NS}; }
};

// What a block works on.
struct Work {
  long long seq, row0, h, hk, q_begin, lq, k_begin, lk, shift;
  int tiles;  // key tiles the block's last row needs
};

// Loads ROWS rows from token `row` of head `head` as D/64 column blocks of ROWS rows.
template <int D, int ROWS>
__device__ __forceinline__ void load_rows(u32 dst, const tile::tmap* m, long long row, long long head, u32 bar) {
#pragma unroll
  for (int cb = 0; cb < D / 64; ++cb)
#pragma unroll
    for (int i = 0; i < ROWS / kBox; ++i)
      tile::tma_load_3d(dst + cb * ROWS * 128 + i * kBoxBytes, m, cb * 64, (int)head, (int)(row + i * kBox), bar);
}

// The producer thread: Q once, then K and V of every key tile through the rings.
template <int D, int BM, int BN, int NS>
__device__ __forceinline__ void produce(const Layout<D, BM, BN, NS>& L, const Maps& m, const Work& w) {
  tile::tma_prefetch_desc(m.k);
  tile::tma_prefetch_desc(m.v);
  tile::mbar_expect_tx(L.q_full(), Layout<D, BM, BN, NS>::q_bytes);
  load_rows<D, BM>(L.q(), m.q, w.q_begin + w.row0, w.h, L.q_full());
  const auto kr = L.k_ring(), vr = L.v_ring();
  tile::RingPos pos;
  for (int t = 0; t < w.tiles; ++t, pos.next<NS>()) {
    const long long key = w.k_begin + (long long)t * BN;
    kr.acquire(pos);
    kr.expect(pos, Layout<D, BM, BN, NS>::kv_bytes);
    load_rows<D, BN>(L.k(pos.stage), m.k, key, w.hk, kr.full(pos.stage));
    vr.acquire(pos);
    vr.expect(pos, Layout<D, BM, BN, NS>::kv_bytes);
    load_rows<D, BN>(L.v(pos.stage), m.v, key, w.hk, vr.full(pos.stage));
  }
}

// S = Q K^T for the consumer's 64 rows: D/16 products over the column blocks.
template <int D, int BM, int BN>
__device__ __forceinline__ void scores(rt_c (&s)[BN / 8], u32 q, u32 k) {
  const tile::u64 dq = tile::desc_kmajor(q), dk = tile::desc_kmajor(k);
  tile::wgmma_fence();
#pragma unroll
  for (int kd = 0; kd < D / 16; ++kd) {
    const u32 qo = (kd / 4) * BM * 128 + (kd % 4) * 32, ko = (kd / 4) * BN * 128 + (kd % 4) * 32;
    tile::wgmma_ss<tile::Ab::bf16, 0, 0>(s, tile::desc_advance(dq, qo), tile::desc_advance(dk, ko), kd > 0);
  }
  tile::wgmma_commit();
}

// O += P V with P's bf16 fragments from registers and V MN-major.
template <int D, int BN>
__device__ __forceinline__ void accumulate(rt_c (&o)[D / 8], const tile::frag_a (&p)[BN / 16], u32 v) {
  const tile::u64 dv = tile::desc_mnmajor(v, BN * 128);
  tile::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) tile::wgmma_rs<tile::Ab::bf16, 1>(o, p[kk], tile::desc_advance(dv, kk * 2048), 1);
  tile::wgmma_commit();
}

// One consumer warpgroup (c: its index) over all the block's key tiles.
template <int D, int BM, int BN, int NS>
__device__ __forceinline__ void consume(const Layout<D, BM, BN, NS>& L, const fa::Problem& p, const Work& w, int c) {
  const int ct = threadIdx.x - 128 * (c + 1), lane = ct & 31;
  const long long r0 = w.row0 + 64 * c;  // the consumer's first row in the sequence
  const long long ra = r0 + 16 * (ct >> 5) + (lane >> 2);
  // the consumer's own key tiles (a causal consumer above the diagonal needs fewer)
  const long long kend = p.causal ? min(w.lk, min(r0 + 64, w.lq) + w.shift) : w.lk;
  const int mine = r0 < w.lq && kend > 0 ? (int)((kend + BN - 1) / BN) : 0;
  const long long lim0 = p.causal ? ra + w.shift : w.lk - 1, lim1 = p.causal ? ra + 8 + w.shift : w.lk - 1;
  rt_c o[D / 8];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) tile::zero(o[j]);
  tile::SoftmaxRows st;
  st.init();
  tile::mbar_wait(L.q_full(), 0);
  const u32 q = L.q() + c * kBoxBytes;
  const auto kr = L.k_ring(), vr = L.v_ring();
  tile::RingPos pos;
  for (int t = 0; t < w.tiles; ++t, pos.next<NS>()) {
    kr.wait(pos);
    if (t >= mine) {  // past this consumer's diagonal: released unread
      kr.release(pos);
      vr.wait(pos);
      vr.release(pos);
      continue;
    }
    rt_c s[BN / 8];
    scores<D, BM, BN>(s, q, L.k(pos.stage));
    tile::wgmma_wait<0>();
    kr.release(pos);
    const long long key0 = (long long)t * BN;
    const bool masked = key0 + BN > w.lk || (p.causal && key0 + BN - 1 > r0 + w.shift);
    float alpha[2];
    if (masked) {
      const auto keep = [&](int j, int e) {
        const long long key = key0 + j * 8 + 2 * (lane & 3) + (e & 1);
        return key < w.lk && key <= ((e >> 1) ? lim1 : lim0);
      };
      st.step<BN / 8, true>(s, p.scale_log2, keep, alpha);
    } else {
      st.step<BN / 8, false>(s, p.scale_log2, [](int, int) { return true; }, alpha);
    }
    tile::rescale(o, alpha);
    tile::frag_a pa[BN / 16];
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) tile::to_frag_a<tile::Ab::bf16>(pa[kk], s[2 * kk], s[2 * kk + 1]);
    vr.wait(pos);
    accumulate<D, BN>(o, pa, L.v(pos.stage));
    tile::wgmma_wait<0>();
    vr.release(pos);
  }
  float inv[2], lse[2];
  st.finish(inv, lse);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const long long i = ra + 8 * r;
    if (i >= w.lq) continue;
    const long long row = (w.q_begin + i) * p.HQ + w.h;
    __nv_bfloat16* out = p.o + row * D + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      *reinterpret_cast<u32*>(out + j * 8) = tile::pack_bf16x2(o[j].x[2 * r] * inv[r], o[j].x[2 * r + 1] * inv[r]);
    if ((lane & 3) == 0) p.lse[row] = lse[r];
  }
}

template <int D, int BN, int NC, int NS>
__device__ __forceinline__ void attend(const fa::Problem& p, const Maps& m) {
  constexpr int BM = 64 * NC;
  extern __shared__ __align__(1024) unsigned char smem[];
  const Layout<D, BM, BN, NS> L{tile::smem_addr(smem)};
  if (tile::dynamic_smem_bytes() < Layout<D, BM, BN, NS>::bytes) __trap();
  Work w;
  if (!fa::find_tile(p.cu_q, p.B, blockIdx.y, BM, p.causal, &w.seq, &w.row0)) return;
  w.h = blockIdx.x;
  w.hk = w.h / (p.HQ / p.HKV);
  w.q_begin = p.cu_q[w.seq];
  w.lq = p.cu_q[w.seq + 1] - w.q_begin;
  w.k_begin = p.cu_k[w.seq];
  w.lk = p.cu_k[w.seq + 1] - w.k_begin;
  w.shift = w.lk - w.lq;  // bottom-right causal alignment
  const long long kend = p.causal ? min(w.lk, min(w.row0 + BM, w.lq) + w.shift) : w.lk;
  w.tiles = kend > 0 ? (int)((kend + BN - 1) / BN) : 0;
  if (threadIdx.x == 0) {
    tile::mbar_init(L.q_full(), 1);
    L.k_ring().init(128 * NC);
    L.v_ring().init(128 * NC);
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    if constexpr (NC > 1) tile::set_max_registers<false, 40>();
    if (threadIdx.x == 0) produce<D, BM, BN, NS>(L, m, w);
  } else {
    if constexpr (NC > 1) tile::set_max_registers<true, 232>();
    consume<D, BM, BN, NS>(L, p, w, wg - 1);
  }
}

}  // namespace fa3

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    fa3_wgmma(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* cu_q, const int* cu_k,
              __nv_bfloat16* o, float* lse, long long B, long long TQ, long long TK, long long HQ, long long HKV,
              long long D, long long CAUSAL, float scale, const __grid_constant__ tile::tmap tq,
              const __grid_constant__ tile::tmap tk, const __grid_constant__ tile::tmap tv) {
  const fa::Problem p{q, k, v, cu_q, cu_k, o, lse, B, HQ, HKV, CAUSAL != 0, scale * 1.4426950408889634f};
  const fa3::Maps m{&tq, &tk, &tv};
  if (D == 64)
    fa3::attend<64, BLOCK_N, CONSUMERS, STAGES>(p, m);
  else if (D == 128)
    fa3::attend<128, BLOCK_N, CONSUMERS, STAGES>(p, m);
  else
    __trap();
}
