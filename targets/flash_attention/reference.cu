// reference.cu — tessera flash_attention reference: ragged (varlen) GQA attention forward
// in float64 on the GPU.
//
// For each sequence s, query head h and query row i of s: scores x_j = scale * q_i . k_j
// over the keys j of s that the mask keeps (causal: j <= i + Lk - Lq, bottom-right
// aligned), O_i = sum_j softmax(x)_j v_j, LSE_i = log2(sum_j exp(x_j)) (base 2, as in
// FlashInfer's definitions). Every product and sum in double (bf16 -> double is exact);
// the softmax is the online form (running maximum and sum, rescaled per key tile), in
// double, which is as exact as the two-pass form up to a few ulps.
// A row that keeps no key (only where Lk < Lq) gets O = 0 and LSE = -inf.
//
// Work split: one block of 256 threads per (query head, tile of 32 query rows of one
// sequence); grid (HQ, cdiv(TQ, 32) + B): the tiles of all sequences, numbered sequence
// by sequence (sum of cdiv(Lq, 32) is at most that), the extra blocks exit. Key tiles of
// 32 rows of K and V are staged in shared memory as double; thread t owns query row
// t / 8 of the tile: 4 of its 32 scores and 16 of its D <= 128 output columns
// (column t % 8 + 8 j). Dynamic shared memory: Q and K padded to D+1 doubles a row,
// V, and the 32 x 33 probabilities: 32*(D+1)*8*2 + 32*D*8 + 32*33*8 bytes.
// The 32k-token causal benchmark shape (8.8e12 float64 flops) takes about a second
// or two on an H200.
#include <cuda_bf16.h>

namespace fa_ref {

constexpr int BQ = 32;   // query rows per block
constexpr int BK = 32;   // keys per tile
constexpr int NT = 256;  // threads

// -inf (NVRTC has neither INFINITY nor __builtin_huge_val)
__device__ __forceinline__ double neg_inf() {
  return __longlong_as_double(0xfff0000000000000ULL);
}

__device__ __forceinline__ double bf(const __nv_bfloat16 x) {
  return (double)__bfloat162float(x);
}

// The block's (sequence, first query row of the sequence); false when past the last tile.
__device__ bool find_tile(const int* cu_q, long long B, long long tile, long long* seq, long long* row0) {
  for (long long s = 0; s < B; ++s) {
    const long long n = (cu_q[s + 1] - cu_q[s] + BQ - 1) / BQ;
    if (tile < n) {
      *seq = s;
      *row0 = tile * BQ;
      return true;
    }
    tile -= n;
  }
  return false;
}

// Head h's query rows row0 .. row0 + BQ of the sequence that starts at row q_begin into Qs
// ([BQ][D+1] doubles), zero past its Lq rows.
__device__ __forceinline__ void load_q(double* Qs, const __nv_bfloat16* q, long long q_begin, long long row0,
                                       long long Lq, long long HQ, long long h, long long D) {
  const int DP = (int)D + 1;
  for (int e = threadIdx.x; e < BQ * D; e += NT) {
    const int rr = e / (int)D, d = e % (int)D;
    const long long gi = row0 + rr;
    Qs[rr * DP + d] = gi < Lq ? bf(q[((q_begin + gi) * HQ + h) * D + d]) : 0.0;
  }
}

// Key head hk's keys and values k0 .. k0 + BK of the sequence that starts at key k_begin into
// Ks ([BK][D+1] doubles) and Vs ([BK][D]), zero past its Lk keys.
__device__ __forceinline__ void load_kv(double* Ks, double* Vs, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                        long long k_begin, long long k0, long long Lk, long long HKV, long long hk,
                                        long long D) {
  const int DP = (int)D + 1;
  for (int e = threadIdx.x; e < BK * D; e += NT) {
    const int rr = e / (int)D, d = e % (int)D;
    const long long gj = k0 + rr;
    const bool ok = gj < Lk;
    const long long at = ((k_begin + gj) * HKV + hk) * D + d;
    Ks[rr * DP + d] = ok ? bf(k[at]) : 0.0;
    Vs[rr * (int)D + d] = ok ? bf(v[at]) : 0.0;
  }
}

}  // namespace fa_ref

using fa_ref::neg_inf;

extern "C" __global__ void __launch_bounds__(256)
    flash_attention_reference(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* cu_q,
                              const int* cu_k, double* o, double* lse, long long B, long long TQ, long long TK,
                              long long HQ, long long HKV, long long D, long long CAUSAL, float scale) {
  using namespace fa_ref;
  extern __shared__ double sm[];
  const int DP = (int)D + 1;
  double* Qs = sm;                // [BQ][D+1]
  double* Ks = Qs + BQ * DP;      // [BK][D+1]
  double* Vs = Ks + BK * DP;      // [BK][D]
  double* Ps = Vs + BK * (int)D;  // [BQ][BK+1]
  long long seq, row0;
  if (!find_tile(cu_q, B, blockIdx.y, &seq, &row0)) return;
  const long long h = blockIdx.x, hk = h / (HQ / HKV);
  const long long q_begin = cu_q[seq], Lq = cu_q[seq + 1] - q_begin;
  const long long k_begin = cu_k[seq], Lk = cu_k[seq + 1] - k_begin;
  const long long shift = Lk - Lq;  // bottom-right causal alignment
  const int tid = threadIdx.x, r = tid / 8, cl = tid % 8;
  const long long i = row0 + r;  // this thread's query row in the sequence

  load_q(Qs, q, q_begin, row0, Lq, HQ, h, D);
  // keys [0, kend): causal, up to the last row of the tile's diagonal
  long long kend = Lk;
  if (CAUSAL) {
    const long long last = (row0 + BQ < Lq ? row0 + BQ : Lq) - 1;
    kend = last + shift + 1 < Lk ? last + shift + 1 : Lk;
    if (kend < 0) kend = 0;
  }
  double m = neg_inf(), l = 0.0, acc[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) acc[j] = 0.0;

  for (long long k0 = 0; k0 < kend; k0 += BK) {
    __syncthreads();  // the previous tile's K, V and P are consumed
    load_kv(Ks, Vs, k, v, k_begin, k0, Lk, HKV, hk, D);
    __syncthreads();
    double x[4], tmax = neg_inf();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = cl + 8 * j;
      const long long gj = k0 + c;
      double s = 0.0;
      for (int d = 0; d < D; ++d) s = fma(Qs[r * DP + d], Ks[c * DP + d], s);
      const bool keep = gj < Lk && (!CAUSAL || gj <= i + shift);
      x[j] = keep ? s * (double)scale : neg_inf();
      tmax = fmax(tmax, x[j]);
    }
#pragma unroll
    for (int w = 1; w < 8; w <<= 1) tmax = fmax(tmax, __shfl_xor_sync(0xffffffffu, tmax, w));
    const double mnew = fmax(m, tmax);
    const double alpha = mnew == neg_inf() ? 1.0 : exp(m - mnew);
    double psum = 0.0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const double p = x[j] == neg_inf() ? 0.0 : exp(x[j] - mnew);
      Ps[r * (BK + 1) + cl + 8 * j] = p;
      psum += p;
    }
#pragma unroll
    for (int w = 1; w < 8; w <<= 1) psum += __shfl_xor_sync(0xffffffffu, psum, w);
    l = l * alpha + psum;
    m = mnew;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int d = cl + 8 * j;
      if (d >= D) break;
      double a = acc[j] * alpha;
      for (int c = 0; c < BK; ++c) a = fma(Ps[r * (BK + 1) + c], Vs[c * (int)D + d], a);
      acc[j] = a;
    }
  }
  if (i >= Lq) return;
  const long long row = (q_begin + i) * HQ + h;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int d = cl + 8 * j;
    if (d < D) o[row * D + d] = l > 0.0 ? acc[j] / l : 0.0;
  }
  if (cl == 0) lse[row] = l > 0.0 ? (m + log(l)) * 1.4426950408889634 : neg_inf();
}
