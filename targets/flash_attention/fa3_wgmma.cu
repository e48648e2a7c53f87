// fa3_wgmma.cu — tessera flash_attention template for Hopper (sm_90a): FlashAttention-3's
// structure on wgmma, TMA and an mbarrier ring, with warp specialization.
//
// Parameters (#defined by tessera):
//   BLOCK_N    keys per K/V tile (64, 128, 192): with 192 two consumers at D 128 take 240
//              registers (S, P and O live at once need them), two stages only (shared
//              memory), and three at D 64 only serial (overlapped, 160 registers spill)
//   CONSUMERS  consumer warpgroups, 64 query rows each (1, 2): the block's query tile is
//              64 * CONSUMERS rows
//   STAGES     K/V buffers in the ring (2, 3)
//   INTRA      0: per tile S = Q K^T, softmax, O += P V in turn; 1: tile t's S and tile t-1's
//              P V issued together, the softmax overlapping P V (FlashAttention-3)
//   PINGPONG   with INTRA 1 and two or more consumers: 1 makes them take turns issuing
//              products (named barriers), one's softmax overlapping the others' products
//   CONSUMERS64  consumer warpgroups at head size 64 (2, 3): FlashAttention-3 takes 192
//              query rows there, where a key tile's products are half as long as at 128
//              and the softmax weighs twice as much against them
//   POLY       0: every exponential on the multi-function unit (16 a clock per SM); k: one
//              fragment in k of the unmasked tiles' on the FMA pipe (tile::exp2_poly), as
//              FlashAttention-4 does where the exponentials and not the products bind
//   LAZY       0: O rescaled at every key tile; 1: a warp's rows keep their maxima while none
//              grows by more than 8 (log2), and O is rescaled only when one does
//              (FlashAttention-4's conditional rescale: most key tiles after the first few
//              skip the D/2 multiplications a thread; P then reaches up to 2^8)
//   PERSIST    0: a block per query tile; 1: persistent, min(SMS, tiles) blocks, each
//              taking every gridDim-th query tile of the same order, so that a block's
//              next Q and K/V tiles load while it finishes the last one (the producer runs
//              ahead across tiles; Q has its own empty barrier); 2: persistent with the
//              tiles handed out as blocks free up: after its first (blockIdx.x) a block
//              takes gridDim.x + atomicAdd(sched) (its first consumer thread, for the
//              producer) and the producer passes the number on to the consumers beside Q (a greedy list schedule of the longest-first order, as
//              the hardware's for PERSIST 0: simulated balance 0.98 at B 8 N 2048 causal,
//              where a snaking stride gives 0.90). The counter is zeroed by the plan's
//              first step (fa3_sched_reset: the judge poisons scratch before each launch),
//              and the kernel is its programmatic dependent: the thread that takes the
//              numbers waits for it (griddepcontrol.wait) before its first atomicAdd, the
//              block's first tile loads under the reset
//   ORDER      bit 0: query tiles numbered heads fastest (0) or query tiles fastest within
//              a head (1: the tiles running at once share few heads, whose K and V stay in
//              L2; heads fastest, 132 tiles at once read the K and V of every head); bit 1
//              (PERSIST 1 only): round k of gridDim tiles gives block b tile k G + b (0) or
//              snakes, odd rounds from the other end, k G + G - 1 - b (2): causal tiles come
//              longest first, so a stride gives the first blocks the longer tile of every
//              round (simulated balance, ideal over the busiest block, B 1 N 8192 causal:
//              0.94 by stride, 1.00 snaking; measured 4.4 % faster, 2026-12-04). Causal
//              tiles by level across a batch (longest first over the batch) were tried and
//              lost 13-20 % at B 4 and 8: every head's K and V wanted at once (journal)
// Two entry points, one per head size, because the block size (and with it the register
// budget a warpgroup gets) differs: fa3_wgmma for D 128 (CONSUMERS), fa3_wgmma_d64 for
// D 64 (CONSUMERS64); the launch plan picks one by `when`. Launch: grid
// (HQ, cdiv(TQ, 64 * C) + B) or, persistent, min(SMS, HQ (cdiv(TQ, 64 * C) + B)) blocks;
// block 128 * (C + 1); dynamic shared memory (64 * C + 2 * STAGES * BLOCK_N) * D * 2 + 256
// bytes, C the entry's consumers; tensor maps of q, k and v with boxes of 64 channels x
// 1 head x 64 tokens, 128-byte swizzle.
//
// Query tiles (one sequence, one query head, 64 * C rows) are numbered head fastest (or, ORDER
// odd, tile fastest), the tiles of a head as fa2_mma's within the batch (causal ones from a
// sequence's end: longest first). Per tile:
//   warpgroup 0, the producer: one thread loads the Q tile and every K and V tile through
//     the rings (tile/pipeline.cuh), K and V on separate "full" barriers so S = Q K^T
//     starts before V has landed; its registers go to the consumers (setmaxnreg).
//   warpgroups 1..C: 64 query rows each. Per key tile: S = Q K^T (wgmma, both operands
//     from shared memory, K-major), the online softmax in registers
//     (tile/online_softmax.cuh; masked only on tiles crossing the causal diagonal or the
//     key tail), P rounded to bf16 straight from S's accumulators into wgmma A fragments,
//     O += P V (wgmma, A from registers, V MN-major from shared memory), the buffer
//     released; Q released after the consumer's last S. Consumers overlap one's softmax
//     with the others' products.
//   Epilogue: O / l as bf16 and LSE = m + log2 l (base 2) from registers, rows past the
//     sequence's end not written.
// Shared memory: Q [D/64][64 C][64], then per stage K and V [D/64][BLOCK_N][64] (sw128
// tiles, tile/warpgroup.cuh), then the barriers. Rows a box reads past the sequence's end
// belong to the next sequence (or are zeros past the tensor): masked keys, unwritten
// query rows.
#include "fa_common.cuh"
#include "tile/grid_dependency.cuh"
#include "tile/online_softmax.cuh"
#include "tile/pipeline.cuh"
#include "tile/tma.cuh"
#include "tile/warpgroup.cuh"

#ifndef LAZY
#define LAZY 0  // (configurations written before the parameter, e.g. in tests)
#endif
#ifndef ORDER
#define ORDER 0  // (likewise)
#endif

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
  static constexpr u32 barriers = q_bytes + 2 * NS * kv_bytes;  // Q's two barriers, K ring, V ring
  // PERSIST 2: the number of the tile whose Q is in (for the consumers), the next tile's
  // number (from the first consumer thread, for the producer) and that number's two barriers
  static constexpr u32 slot = barriers + 8 * (2 + 4 * NS), next = slot + 4, next_barriers = slot + 8;
  static constexpr u32 bytes = next_barriers + 16;
  static_assert(bytes - q_bytes - 2 * NS * kv_bytes <= 256, "barriers and slot within the plan's 256 bytes");
  static_assert(q_bytes % 1024 == 0 && kv_bytes % 1024 == 0, "sw128 tiles stay 1024-byte aligned");
  u32 base;
  __device__ __forceinline__ u32 q() const { return base; }
  __device__ __forceinline__ u32 k(int s) const { return base + q_bytes + 2 * s * kv_bytes; }
  __device__ __forceinline__ u32 v(int s) const { return k(s) + kv_bytes; }
  __device__ __forceinline__ tile::Ring<1> q_ring() const { return {base + barriers}; }
  __device__ __forceinline__ tile::Ring<NS> k_ring() const { return {base + barriers + 16}; }
  __device__ __forceinline__ tile::Ring<NS> v_ring() const { return {base + barriers + 16 + 16 * NS}; }
  __device__ __forceinline__ tile::Ring<1> next_ring() const { return {base + next_barriers}; }
  __device__ __forceinline__ void put_tile(int f, u32 at = slot) const {
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(base + at), "r"(f) : "memory");
  }
  __device__ __forceinline__ int tile(u32 at = slot) const {
    int f;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(f) : "r"(base + at) : "memory");
    return f;
  }
};

// A query tile: its sequence, head and rows, and the key tiles its last row needs.
struct Work {
  int seq, row0, h, hk, q_begin, lq, k_begin, lk, shift;  // (32 bits: the consumers' registers are few)
  int tiles;
};

// A head's query tiles in the batch: the sum over the sequences of cdiv(lq, bm).
__device__ __forceinline__ int head_tiles(const fa::Problem& p, int bm) {
  int n = 0;
  for (int s = 0; s < (int)p.B; ++s) n += (p.cu_q[s + 1] - p.cu_q[s] + bm - 1) / bm;
  return n;
}

// Query tile f (in the order ORDER names); false for the spare numbers (the grid's tile count
// has B more a head than there are tiles), all past HQ x head_tiles in either order.
// per_head: head_tiles(p, BM) where ORDER is odd (counted once a block, in attend), unused
// otherwise.
template <int BM, int BN>
__device__ __forceinline__ bool work_of(const fa::Problem& p, int per_head, int f, Work* w) {
  long long seq, row0;
  int g = f / (int)p.HQ, h = f % (int)p.HQ;  // a tile of the batch, a query head
  if constexpr (ORDER & 1) {
    // (per_head counted once a block: counted here, at every tile, its loop made ptxas keep
    // the consumers' descriptors in ordinary registers and move them to uniform ones before
    // 17 of the D 64 entry's 28 products, R2UR, which cost 2.5-6 % where removed before:
    // JOURNAL.md, 2026-12-03 #4)
    if (f >= per_head * (int)p.HQ) return false;  // (also no division by an empty batch's 0)
    g = f % per_head;
    h = f / per_head;
  }
  if (!fa::find_tile(p.cu_q, p.B, g, BM, p.causal, &seq, &row0)) return false;
  w->seq = (int)seq;
  w->row0 = (int)row0;
  w->h = h;
  w->hk = w->h / ((int)p.HQ / (int)p.HKV);  // (32-bit: a 64-bit division is a call, and registers)
  w->q_begin = p.cu_q[w->seq];
  w->lq = p.cu_q[w->seq + 1] - w->q_begin;
  w->k_begin = p.cu_k[w->seq];
  w->lk = p.cu_k[w->seq + 1] - w->k_begin;
  w->shift = w->lk - w->lq;  // bottom-right causal alignment
  const int kend = p.causal ? min(w->lk, min(w->row0 + BM, w->lq) + w->shift) : w->lk;
  w->tiles = kend > 0 ? (int)((kend + BN - 1) / BN) : 0;
  return true;
}

// The block's query tiles: round k of `step` tiles gives it tile k step + first, or with
// kSnake in odd rounds k step + step - 1 - first; `end` tiles in all. A block per tile:
// first = its tile, step = end (one round).
template <bool kSnake>
struct Schedule {
  int first, step, end;
  __device__ __forceinline__ int tile(int k) const {
    return k * step + (kSnake && (k & 1) ? step - 1 - first : first);
  }
  __device__ __forceinline__ int rounds() const { return (end + step - 1) / step; }
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

// The producer thread's loads for query tile f (w): K of the first key tile (its ring
// buffer may be free before the consumers are done with the previous tile's Q), Q once
// every consumer released the last one (with f beside it, for PERSIST 2's consumers), then
// V and every further K and V through the rings.
template <int D, int BM, int BN, int NS>
__device__ __forceinline__ void produce_tile(const Layout<D, BM, BN, NS>& L, const Maps& m, const Work& w, int f,
                                             tile::RingPos& pos, const tile::RingPos& qpos) {
  using Lay = Layout<D, BM, BN, NS>;
  const auto qr = L.q_ring();
  const auto kr = L.k_ring(), vr = L.v_ring();
  const auto load_q = [&] {
    qr.acquire(qpos);
    L.put_tile(f);
    qr.expect(qpos, Lay::q_bytes);
    load_rows<D, BM>(L.q(), m.q, w.q_begin + w.row0, w.h, qr.full(0));
  };
  if (w.tiles == 0) load_q();  // (no keys: the consumers still take and release a Q)
  for (int t = 0; t < w.tiles; ++t, pos.next<NS>()) {
    const int key = w.k_begin + t * BN;
    kr.acquire(pos);
    kr.expect(pos, Lay::kv_bytes);
    load_rows<D, BN>(L.k(pos.stage), m.k, key, w.hk, kr.full(pos.stage));
    if (t == 0) load_q();
    vr.acquire(pos);
    vr.expect(pos, Lay::kv_bytes);
    load_rows<D, BN>(L.v(pos.stage), m.v, key, w.hk, vr.full(pos.stage));
  }
}

// The producer thread over the block's tiles of a fixed schedule (PERSIST 0, 1).
template <int D, int BM, int BN, int NS, bool kSnake>
__device__ __forceinline__ void produce(const Layout<D, BM, BN, NS>& L, const Maps& m, const fa::Problem& p,
                                        const Schedule<kSnake>& sc, int per_head) {
  tile::tma_prefetch_desc(m.k);
  tile::tma_prefetch_desc(m.v);
  tile::RingPos pos, qpos;
  for (int k = 0; k < sc.rounds(); ++k) {
    const int f = sc.tile(k);
    Work w;
    if (f >= sc.end || !work_of<BM, BN>(p, per_head, f, &w)) continue;
    produce_tile<D, BM, BN, NS>(L, m, w, f, pos, qpos);
    qpos.next<1>();
  }
}

// The producer thread taking its tiles from the next-tile slot (PERSIST 2): its first tile
// is blockIdx.x, each next one what the first consumer thread put there; at the first number
// past the last tile (HQ x head_tiles: every number below is a tile, which the consumers
// must see, for they put the next number only when one begins), Q's slot says -1 and its
// full barrier completes without bytes.
template <int D, int BM, int BN, int NS>
__device__ __forceinline__ void produce_dynamic(const Layout<D, BM, BN, NS>& L, const Maps& m, const fa::Problem& p,
                                                int per_head) {
  tile::tma_prefetch_desc(m.k);
  tile::tma_prefetch_desc(m.v);
  const auto nr = L.next_ring();
  tile::RingPos pos, qpos, npos;
  const int tiles = (int)p.HQ * head_tiles(p, BM);
  for (int f = blockIdx.x; f < tiles; npos.next<1>()) {
    Work w;
    work_of<BM, BN>(p, per_head, f, &w);
    produce_tile<D, BM, BN, NS>(L, m, w, f, pos, qpos);
    qpos.next<1>();
    nr.wait(npos);
    f = L.tile(L.next);
    nr.release(npos);
  }
  L.q_ring().acquire(qpos);
  L.put_tile(-1);
  tile::mbar_arrive(L.q_ring().full(0));
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

// A consumer's rows and key range: its first row r0, the lane's rows ra and ra + 8 and the
// last key each may see, the key tiles it computes (a causal consumer above the diagonal
// needs fewer than the block), and its softmax state.
struct Rows {
  int r0, ra, lim[2];
  int mine;
  tile::SoftmaxRows st;
};

__device__ __forceinline__ Rows rows_of(const fa::Problem& p, const Work& w, int c, int bn) {
  const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
  Rows r;
  r.r0 = w.row0 + 64 * c;
  r.ra = r.r0 + 16 * warp + (lane >> 2);
  const int kend = p.causal ? min(w.lk, min(r.r0 + 64, w.lq) + w.shift) : w.lk;
  r.mine = r.r0 < w.lq && kend > 0 ? (int)((kend + bn - 1) / bn) : 0;
  // (min: a causal row past the sequence's end, never written, keeps the keys a row of it
  // would; every other causal row's limit is below lk already)
  r.lim[0] = p.causal ? min(r.ra + w.shift, w.lk - 1) : w.lk - 1;
  r.lim[1] = p.causal ? min(r.ra + 8 + w.shift, w.lk - 1) : w.lk - 1;
  r.st.init();
  return r;
}

// The online softmax of key tile t's scores (masked where the tile crosses the causal
// diagonal of the consumer's first row or the key tail); alpha: O's factor. Returns
// whether O needs rescaling (always, but with LAZY 1).
template <int BN>
__device__ __forceinline__ bool softmax_tile(Rows& r, rt_c (&s)[BN / 8], int t, const fa::Problem& p, const Work& w,
                                             float (&alpha)[2]) {
  const int lane = threadIdx.x & 31;
  const int key0 = t * BN;
  if (key0 + BN > w.lk || (p.causal && key0 + BN - 1 > r.r0 + w.shift)) {
    // element (j, e) is key key0 + 2 (lane % 4) + 8 j + (e & 1): kept while that is at most
    // the row's limit, one comparison with a constant per element
    const int room[2] = {r.lim[0] - key0 - 2 * (lane & 3), r.lim[1] - key0 - 2 * (lane & 3)};
    const auto keep = [&](int j, int e) { return j * 8 + (e & 1) <= room[e >> 1]; };
    return r.st.step<BN / 8, true, 0, LAZY == 1>(s, p.scale_log2, keep, alpha);
  }
  return r.st.step<BN / 8, false, POLY, LAZY == 1>(s, p.scale_log2, [](int, int) { return true; }, alpha);
}

template <int BN>
__device__ __forceinline__ void to_p(tile::frag_a (&pa)[BN / 16], const rt_c (&s)[BN / 8]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) tile::to_frag_a<tile::Ab::bf16>(pa[kk], s[2 * kk], s[2 * kk + 1]);
}

// O / l as bf16 and the base-2 LSE of the lane's two rows (rows past the sequence unwritten).
template <int D>
__device__ __forceinline__ void store(const Rows& r, const rt_c (&o)[D / 8], const fa::Problem& p, const Work& w) {
  const int lane = threadIdx.x & 31;
  float inv[2], lse[2];
  r.st.finish(inv, lse);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int i = r.ra + 8 * h;
    if (i >= w.lq) continue;
    const int row = (w.q_begin + i) * (int)p.HQ + w.h;  // (32 bits: tokens x heads < 2^31)
    __nv_bfloat16* out = p.o + (long long)row * D + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      *reinterpret_cast<u32*>(out + j * 8) = tile::pack_bf16x2(o[j].x[2 * h] * inv[h], o[j].x[2 * h + 1] * inv[h]);
    if ((lane & 3) == 0) p.lse[row] = lse[h];
  }
}

// One consumer warpgroup (c: its index) on query tile w, key tile after key tile: S =
// Q K^T, wait, softmax, O += P V, wait (INTRA 0). pos: the rings' position, kept from
// query tile to query tile; qpos: Q's.
template <int D, int BM, int BN, int NS>
__device__ __forceinline__ void consume_serial(const Layout<D, BM, BN, NS>& L, const fa::Problem& p, const Work& w,
                                               int c, tile::RingPos& pos, const tile::RingPos& qpos) {
  Rows r = rows_of(p, w, c, BN);
  rt_c o[D / 8];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) tile::zero(o[j]);
  const auto qr = L.q_ring();
  const auto kr = L.k_ring(), vr = L.v_ring();
  qr.wait(qpos);
  const u32 q = L.q() + c * kBoxBytes;
  for (int t = 0; t < w.tiles; ++t, pos.next<NS>()) {
    kr.wait(pos);
    if (t >= r.mine) {  // past this consumer's diagonal: released unread
      kr.release(pos);
      vr.wait(pos);
      vr.release(pos);
      continue;
    }
    rt_c s[BN / 8];
    scores<D, BM, BN>(s, q, L.k(pos.stage));
    tile::wgmma_wait<0>();
    tile::fence_operand(s);
    kr.release(pos);
    float alpha[2];
    if (softmax_tile<BN>(r, s, t, p, w, alpha)) tile::rescale(o, alpha);
    tile::frag_a pa[BN / 16];
    to_p<BN>(pa, s);
    vr.wait(pos);
    accumulate<D, BN>(o, pa, L.v(pos.stage));
    tile::wgmma_wait<0>();
    tile::fence_operand(o);
    vr.release(pos);
  }
  qr.release(qpos);
  store<D>(r, o, p, w);
}

// The same with FlashAttention-3's overlap inside the warpgroup (INTRA 1): tile t's
// S = Q K^T and tile t-1's O += P V are issued together, t's softmax runs while P V is on
// the tensor cores, then O is rescaled and t's P formed. PINGPONG: two consumers take
// turns issuing their products (named barriers 1 and 2), so one's softmax overlaps the
// other's products; every consumer passes every key tile's turn (its skipped ones too),
// the last consumer having opened the first turn once (in attend). Q is released once the
// last S is complete, before the last P V and the epilogue.
template <int D, int NC, int BN, int NS, bool kPingPong>
__device__ __forceinline__ void consume_overlapped(const Layout<D, 64 * NC, BN, NS>& L, const fa::Problem& p,
                                                   const Work& w, int c, tile::RingPos& pos,
                                                   const tile::RingPos& qpos) {
  constexpr int BM = 64 * NC;
  // (the turn's products are issued on straight paths: a product under a condition makes
  // ptxas serialize every wgmma of the kernel)
  // (consumer c waits on barrier 1 + c, then hands the turn to c + 1, the last to the first)
  const auto turn_begin = [&] {
    if constexpr (kPingPong) tile::named_barrier_sync(1 + c, 256);
  };
  const auto turn_end = [&] {
    if constexpr (kPingPong) tile::named_barrier_arrive(1 + (c + 1) % NC, 256);
  };
  Rows r = rows_of(p, w, c, BN);
  rt_c o[D / 8];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) tile::zero(o[j]);
  tile::frag_a pa[BN / 16];
  const auto qr = L.q_ring();
  const auto kr = L.k_ring(), vr = L.v_ring();
  qr.wait(qpos);
  const u32 q = L.q() + c * kBoxBytes;
  tile::RingPos prev;
  float alpha[2];
  if (r.mine > 0) {  // tile 0: S only
    rt_c s[BN / 8];
    kr.wait(pos);
    turn_begin();
    scores<D, BM, BN>(s, q, L.k(pos.stage));
    turn_end();
    tile::wgmma_wait<0>();
    tile::fence_operand(s);
    kr.release(pos);
    softmax_tile<BN>(r, s, 0, p, w, alpha);
    to_p<BN>(pa, s);
    prev = pos;
    pos.next<NS>();
  }
  for (int t = 1; t < r.mine; ++t) {  // tile t's S with tile t-1's P V
    rt_c s[BN / 8];
    kr.wait(pos);
    vr.wait(prev);
    turn_begin();
    scores<D, BM, BN>(s, q, L.k(pos.stage));
    accumulate<D, BN>(o, pa, L.v(prev.stage));
    turn_end();
    tile::wgmma_wait<1>();
    tile::fence_operand(s);
    kr.release(pos);
    const bool moved = softmax_tile<BN>(r, s, t, p, w, alpha);
    tile::wgmma_wait<0>();
    tile::fence_operand(o);
    vr.release(prev);
    if (moved) tile::rescale(o, alpha);
    to_p<BN>(pa, s);
    prev = pos;
    pos.next<NS>();
  }
  qr.release(qpos);
  if (r.mine > 0) {  // the last tile's P V
    vr.wait(prev);
    accumulate<D, BN>(o, pa, L.v(prev.stage));
    tile::wgmma_wait<0>();
    tile::fence_operand(o);
    vr.release(prev);
  }
  for (int t = r.mine; t < w.tiles; ++t, pos.next<NS>()) {  // past the diagonal: released unread
    kr.wait(pos);
    kr.release(pos);
    vr.wait(pos);
    vr.release(pos);
    turn_begin();
    turn_end();
  }
  store<D>(r, o, p, w);
}

// Per-thread registers of the producer and of each consumer warpgroup after setmaxnreg
// (0: left as launched). setmaxnreg only moves registers between the block's warps: the
// pool is what the launch allocated, 128 (NC + 1) threads at ptxas's count under
// __launch_bounds__ (65536 / threads, a multiple of 8: 168 with two consumers, 128 with
// three), and a request past it waits forever (a hang, seen on the H200 on 2026-12-03 with
// 32 / 240). The producer's loop keeps 64-bit state (24 spilled it while the warpgroup
// index came from threadIdx; 40 and 32 never did). Two consumers on key tiles of 192 take
// 240 (at 232 ptxas spills 48 bytes and serializes the products), leaving the producer 24;
// key tiles up to 128 keep the split they were measured with. PERSIST 2's producer takes 56
// beside two consumers of 224 (set while it took the tile numbers itself and spilled at
// 40; kept as measured since the first consumer thread took that over) and 32 beside three
// of 160; key tiles of 192 at D 128 leave it nothing (a constraint).
template <int D, int NC, int BN, bool kDynamic>
struct Registers {
  static constexpr bool wide = NC == 2 && BN > 128 && (D == 128 || !kDynamic);
  static constexpr int producer = wide ? 24 : NC == 2 ? (kDynamic ? 56 : 40) : NC == 3 ? 32 : 0;
  static constexpr int consumer = wide ? 240 : NC == 2 ? (kDynamic ? 224 : 232) : NC == 3 ? 160 : 0;
  static constexpr int launched = 65536 / (128 * (NC + 1)) / 8 * 8;
  static_assert(producer + NC * consumer <= (NC + 1) * launched, "setmaxnreg within the launch's registers");
};

// PERSIST 2's consumers: the tile whose number the producer put beside each Q, until it puts
// -1. The first consumer thread takes the numbers (gridDim.x + atomicAdd(sched, 1)) and puts
// them in the next-tile slot for the producer, one ahead: at a tile's start the number taken
// at the last one's, so that the atomic's latency is never waited for. sched was zeroed by the
// plan's step before, which this launch depends on. (In the producer warpgroup, 32 registers a
// thread beside three consumers at D 64, the atomic spilled.) (__syncwarp: the warp's other
// lanes must not go on to the products, warp-wide .aligned instructions, while the fetcher
// waits: without it the kernel hung)
template <int D, int BM, int BN, int NS, typename Consume>
__device__ __forceinline__ void consume_dynamic(const Layout<D, BM, BN, NS>& L, int* sched, const tile::RingPos& qpos,
                                                const Consume& consume) {
  const bool fetcher = threadIdx.x == 128;
  int next = 0;
  if (fetcher) {
    tile::grid_dependency_wait();
    next = (int)gridDim.x + atomicAdd(sched, 1);
  }
  __syncwarp();
  for (tile::RingPos npos;; npos.next<1>()) {
    L.q_ring().wait(qpos);
    const int f = L.tile();
    if (f < 0) break;
    if (fetcher) {
      L.next_ring().acquire(npos);
      L.put_tile(next, L.next);
      tile::mbar_arrive(L.next_ring().full(0));
      next = (int)gridDim.x + atomicAdd(sched, 1);  // (past the last tile: never read)
    }
    __syncwarp();
    consume(f);  // (moves qpos on)
  }
}

template <int D, int BN, int NC, int NS, bool kIntra, bool kPingPong, int kSched>
__device__ __forceinline__ void attend(const fa::Problem& p, const Maps& m, long long TQ, int* sched) {
  constexpr bool kPersist = kSched == 1, kDynamic = kSched == 2;
  constexpr int BM = 64 * NC;
  extern __shared__ __align__(1024) unsigned char smem[];
  const Layout<D, BM, BN, NS> L{tile::smem_addr(smem)};
  if (tile::dynamic_smem_bytes() < Layout<D, BM, BN, NS>::bytes) __trap();
  const int tiles = (int)(p.HQ * ((TQ + BM - 1) / BM + p.B));  // (the grid when not persistent)
  const int mine = (int)(blockIdx.y * p.HQ + blockIdx.x);
  constexpr bool kSnake = kPersist && (ORDER & 2) != 0;
  const Schedule<kSnake> sc =
      kPersist ? Schedule<kSnake>{(int)blockIdx.x, (int)gridDim.x, tiles} : Schedule<kSnake>{mine, tiles, tiles};
  const int per_head = (ORDER & 1) != 0 ? head_tiles(p, BM) : 0;  // (work_of's)
  if (threadIdx.x == 0) {
    L.q_ring().init(128 * NC);
    L.k_ring().init(128 * NC);
    L.v_ring().init(128 * NC);
    if constexpr (kDynamic) L.next_ring().init(1);
  }
  __syncthreads();
  // (broadcast from lane 0 so that ptxas knows it is warp-uniform: the consumer's Q offset,
  // and with it every wgmma descriptor, then lives in uniform registers; from threadIdx it
  // took three R2UR a product, 82 in the D 128 entry's product region, 1 now)
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
  using R = Registers<D, NC, BN, kDynamic>;
  if (wg == 0) {
    if constexpr (R::producer > 0) tile::set_max_registers<false, R::producer>();
    if constexpr (kDynamic) {
      if (threadIdx.x == 0) produce_dynamic<D, BM, BN, NS>(L, m, p, per_head);
    } else {
      if (threadIdx.x == 0) produce<D, BM, BN, NS, kSnake>(L, m, p, sc, per_head);
    }
    return;
  }
  if constexpr (R::producer > 0) tile::set_max_registers<true, R::consumer>();
  constexpr bool kTurns = kIntra && kPingPong && NC >= 2;
  if (kTurns && wg == NC) tile::named_barrier_arrive(1, 256);  // consumer 0 takes the first turn
  // (the consumers walk the producer's schedule sc, written out: holding sc cost registers
  // that three consumers at 160 do not have)
  tile::RingPos pos, qpos;
  const auto consume = [&](int f) {
    Work w;
    if (!work_of<BM, BN>(p, per_head, f, &w)) return;
    if constexpr (!kIntra)
      consume_serial<D, BM, BN, NS>(L, p, w, wg - 1, pos, qpos);
    else
      consume_overlapped<D, NC, BN, NS, kTurns>(L, p, w, wg - 1, pos, qpos);
    qpos.next<1>();
  };
  if constexpr (kDynamic) {
    consume_dynamic<D, BM, BN, NS>(L, sched, qpos, consume);
  } else if constexpr (kPersist) {
    for (int k = 0; k < (tiles + (int)gridDim.x - 1) / (int)gridDim.x; ++k) {
      const int f = k * (int)gridDim.x + (kSnake && (k & 1) ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x);
      if (f < tiles) consume(f);
    }
  } else {
    consume(mine);
  }
}

// The two entry points take the same arguments (the plan's `when` picks one by D).
template <int D, int NC>
__device__ __forceinline__ void entry(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                      const int* cu_q, const int* cu_k, __nv_bfloat16* o, float* lse, long long B,
                                      long long TQ, long long HQ, long long HKV, long long d, long long causal,
                                      float scale, const tile::tmap* tq, const tile::tmap* tk, const tile::tmap* tv,
                                      int* sched) {
  if (d != D) __trap();
  const fa::Problem p{q, k, v, cu_q, cu_k, o, lse, B, HQ, HKV, causal != 0, scale * 1.4426950408889634f};
  attend<D, BLOCK_N, NC, STAGES, INTRA == 1, PINGPONG == 1, PERSIST>(p, Maps{tq, tk, tv}, TQ, sched);
}
}  // namespace fa3

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    fa3_wgmma(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* cu_q, const int* cu_k,
              __nv_bfloat16* o, float* lse, long long B, long long TQ, long long TK, long long HQ, long long HKV,
              long long D, long long CAUSAL, float scale, const __grid_constant__ tile::tmap tq,
              const __grid_constant__ tile::tmap tk, const __grid_constant__ tile::tmap tv, int* sched) {
  fa3::entry<128, CONSUMERS>(q, k, v, cu_q, cu_k, o, lse, B, TQ, HQ, HKV, D, CAUSAL, scale, &tq, &tk, &tv, sched);
}

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS64 + 1), 1)
    fa3_wgmma_d64(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* cu_q,
                  const int* cu_k, __nv_bfloat16* o, float* lse, long long B, long long TQ, long long TK, long long HQ,
                  long long HKV, long long D, long long CAUSAL, float scale, const __grid_constant__ tile::tmap tq,
                  const __grid_constant__ tile::tmap tk, const __grid_constant__ tile::tmap tv, int* sched) {
  fa3::entry<64, CONSUMERS64>(q, k, v, cu_q, cu_k, o, lse, B, TQ, HQ, HKV, D, CAUSAL, scale, &tq, &tk, &tv, sched);
}

// PERSIST 2's first step: the tile counter zeroed; the attention kernel after it is its
// programmatic dependent.
extern "C" __global__ void fa3_sched_reset(int* sched) {
  tile::allow_dependents();
  if (threadIdx.x == 0) sched[0] = 0;
}
