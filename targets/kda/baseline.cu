// targets/kda/baseline.cu — the straightforward chunked KDA forward, fp32 on CUDA
// cores. It is the baseline tessera's speedup column is measured against: the
// textbook chunk algorithm, four kernels, no tensor cores, no tuning.
//
//  1. kda_base_prep    per token: L2-normalized q, k; log-decay g; sigmoid(beta).
//  2. kda_base_intra   per chunk of BC=64 tokens: cumulative log-decay G (in place
//                      of g); L[i,j] = b_i sum_d k_i k_j exp(G_i-G_j) (j<i) and the
//                      causal scores P[i,j] = sum_d q_i k_j exp(G_i-G_j) (j<=i),
//                      exponents taken pairwise so nothing over- or underflows
//                      badly; A = (I+L)^-1 by forward substitution; WY factors
//                      w = A (b k exp(G)), u = A (b v).
//  3. kda_base_state   per (sequence, head, 32 value columns), sequential over
//                      chunks: saves the chunk's starting state, v' = u - w S,
//                      S <- exp(G_last) S + (k exp(G_last-G))^T v'.
//  4. kda_base_output  per chunk: o = scale (q exp(G)) S + scale P v'.
// Chunk slots: sequence n owns slots n + floor(bos_n/BC) + c, c < cdiv(len_n, BC);
// every slot is < NSEQ + floor(T/BC), so per-chunk scratch needs no prefix pass.
#include <cuda_bf16.h>

#define BC 64        // chunk length
#define BV_STATE 32  // value columns per block in kda_base_state

__device__ __forceinline__ float kda_bf(const __nv_bfloat16* p, long long i) {
  return __bfloat162float(p[i]);
}

// Maps a chunk slot to (sequence, chunk index); false for an unused slot.
__device__ bool kda_base_slot(const long long* cu, long long NSEQ, long long slot,
                              long long* n_out, long long* c_out) {
  long long lo = 0, hi = NSEQ - 1;  // largest n with n + cu[n]/BC <= slot
  if (slot < cu[0] / BC) return false;
  while (lo < hi) {
    long long mid = (lo + hi + 1) / 2;
    if (mid + cu[mid] / BC <= slot) lo = mid;
    else hi = mid - 1;
  }
  long long c = slot - (lo + cu[lo] / BC);
  long long len = cu[lo + 1] - cu[lo];
  if (c * BC >= len) return false;
  *n_out = lo;
  *c_out = c;
  return true;
}

// 1. grid (T, H), block 128.
extern "C" __global__ void kda_base_prep(
    const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* g,
    const __nv_bfloat16* beta, const float* A_log, const float* dt_bias, float* qn,
    float* kn, float* gl, float* bs, long long H, long long K, float lower_bound) {
  __shared__ float red[2][32];
  const long long t = blockIdx.x, h = blockIdx.y, base = (t * H + h) * K;
  float sq = 0, sk = 0;
  for (long long d = threadIdx.x; d < K; d += blockDim.x) {
    float x = kda_bf(q, base + d), y = kda_bf(k, base + d);
    sq += x * x;
    sk += y * y;
  }
  for (int off = 16; off > 0; off >>= 1) {
    sq += __shfl_xor_sync(0xffffffffu, sq, off);
    sk += __shfl_xor_sync(0xffffffffu, sk, off);
  }
  if ((threadIdx.x & 31) == 0) {
    red[0][threadIdx.x / 32] = sq;
    red[1][threadIdx.x / 32] = sk;
  }
  __syncthreads();
  sq = 0;
  sk = 0;
  for (int w = 0; w < (int)(blockDim.x + 31) / 32; ++w) {
    sq += red[0][w];
    sk += red[1][w];
  }
  const float rq = rsqrtf(sq + 1e-6f), rk = rsqrtf(sk + 1e-6f);
  const float a = expf(A_log[h]);
  for (long long d = threadIdx.x; d < K; d += blockDim.x) {
    qn[base + d] = kda_bf(q, base + d) * rq;
    kn[base + d] = kda_bf(k, base + d) * rk;
    float x = a * (kda_bf(g, base + d) + dt_bias[h * K + d]);
    gl[base + d] = lower_bound / (1.0f + expf(-x));
  }
  if (threadIdx.x == 0) bs[t * H + h] = 1.0f / (1.0f + expf(-kda_bf(beta, t * H + h)));
}

// 2. grid (NSEQ + T/BC, H), block 256, smem 4*(3*BC*(K+1) + BC*V + 2*BC*(BC+1) + BC).
extern "C" __global__ void kda_base_intra(
    const __nv_bfloat16* v, const long long* cu, const float* qn, const float* kn,
    float* gcum, const float* bs, float* w, float* u, float* P, long long H, long long K,
    long long V, long long NSEQ) {
  extern __shared__ float sm[];
  const long long KP = K + 1;
  float* qs = sm;              // [BC][KP]
  float* ks = qs + BC * KP;    // [BC][KP]
  float* gs = ks + BC * KP;    // [BC][KP] cumulative log-decay
  float* vs = gs + BC * KP;    // [BC][V]
  float* L = vs + BC * V;      // [BC][BC+1]
  float* A = L + BC * (BC + 1);  // [BC][BC+1]
  float* b = A + BC * (BC + 1);  // [BC]
  const long long slot = blockIdx.x, h = blockIdx.y;
  long long n, c;
  if (!kda_base_slot(cu, NSEQ, slot, &n, &c)) return;
  const long long bos = cu[n] + c * BC, len = min((long long)BC, cu[n + 1] - bos);
  const int tid = threadIdx.x, nt = blockDim.x;

  for (long long idx = tid; idx < BC * K; idx += nt) {
    long long i = idx / K, d = idx % K;
    bool in = i < len;
    long long gi = ((bos + i) * H + h) * K + d;
    qs[i * KP + d] = in ? qn[gi] : 0.f;
    ks[i * KP + d] = in ? kn[gi] : 0.f;
    gs[i * KP + d] = in ? gcum[gi] : 0.f;  // still the per-token log-decay here
  }
  for (long long idx = tid; idx < BC * V; idx += nt) {
    long long i = idx / V, e = idx % V;
    vs[i * V + e] = i < len ? kda_bf(v, ((bos + i) * H + h) * V + e) : 0.f;
  }
  if (tid < BC) b[tid] = tid < len ? bs[(bos + tid) * H + h] : 0.f;
  __syncthreads();
  for (long long d = tid; d < K; d += nt) {  // cumulative sum over the chunk
    float acc = 0;
    for (int i = 0; i < BC; ++i) {
      acc += gs[i * KP + d];
      gs[i * KP + d] = acc;
      if (i < len) gcum[((bos + i) * H + h) * K + d] = acc;
    }
  }
  __syncthreads();
  for (int idx = tid; idx < BC * BC; idx += nt) {
    int i = idx / BC, j = idx % BC;
    float l = 0, pp = 0;
    if (j <= i) {
      for (long long d = 0; d < K; ++d) {
        float e = expf(gs[i * KP + d] - gs[j * KP + d]) * ks[j * KP + d];
        l += ks[i * KP + d] * e;
        pp += qs[i * KP + d] * e;
      }
    }
    L[i * (BC + 1) + j] = j < i ? b[i] * l : 0.f;
    if (i < len) P[((slot * H + h) * BC + i) * BC + j] = pp;
  }
  __syncthreads();
  // Forward substitution: (I + L) A = I, row by row.
  for (int i = 0; i < BC; ++i) {
    if (tid < BC) {
      int m = tid;
      float acc = (m == i) ? 1.f : 0.f;
      for (int j = m; j < i; ++j) acc -= L[i * (BC + 1) + j] * A[j * (BC + 1) + m];
      A[i * (BC + 1) + m] = m <= i ? acc : 0.f;
    }
    __syncthreads();
  }
  for (long long idx = tid; idx < BC * K; idx += nt) {
    long long i = idx / K, d = idx % K;
    if (i >= len) continue;
    float acc = 0;
    for (long long j = 0; j <= i; ++j)
      acc += A[i * (BC + 1) + j] * b[j] * ks[j * KP + d] * expf(gs[j * KP + d]);
    w[((bos + i) * H + h) * K + d] = acc;
  }
  for (long long idx = tid; idx < BC * V; idx += nt) {
    long long i = idx / V, e = idx % V;
    if (i >= len) continue;
    float acc = 0;
    for (long long j = 0; j <= i; ++j) acc += A[i * (BC + 1) + j] * b[j] * vs[j * V + e];
    u[((bos + i) * H + h) * V + e] = acc;
  }
}

// 3. grid (NSEQ, H, cdiv(V, BV_STATE)), block 256,
//    smem 4*(K*BV_STATE + 2*BC*(K+1) + BC*BV_STATE + K).
extern "C" __global__ void kda_base_state(
    const float* h0, const long long* cu, const float* kn, const float* gcum,
    const float* w, const float* u, float* vnew, float* hs, float* ht, long long H,
    long long K, long long V) {
  extern __shared__ float sm[];
  const long long KP = K + 1;
  float* S = sm;                 // [K][BV_STATE]
  float* ws = S + K * BV_STATE;  // [BC][KP]
  float* kd = ws + BC * KP;      // [BC][KP]
  float* vn = kd + BC * KP;      // [BC][BV_STATE]
  float* glast = vn + BC * BV_STATE;  // [K]
  const long long n = blockIdx.x, h = blockIdx.y, v0 = blockIdx.z * BV_STATE;
  const int tid = threadIdx.x, nt = blockDim.x;
  const long long bw = min((long long)BV_STATE, V - v0);
  for (long long idx = tid; idx < K * BV_STATE; idx += nt) {
    long long d = idx / BV_STATE, e = idx % BV_STATE;
    S[idx] = e < bw ? h0[((n * H + h) * V + v0 + e) * K + d] : 0.f;
  }
  const long long bos0 = cu[n], eos = cu[n + 1];
  const long long slot0 = n + bos0 / BC;
  for (long long c = 0; bos0 + c * BC < eos; ++c) {
    const long long bos = bos0 + c * BC, len = min((long long)BC, eos - bos);
    const long long slot = slot0 + c;
    __syncthreads();
    for (long long d = tid; d < K; d += nt) glast[d] = gcum[((bos + len - 1) * H + h) * K + d];
    for (long long idx = tid; idx < K * BV_STATE; idx += nt) {
      long long d = idx / BV_STATE, e = idx % BV_STATE;
      if (e < bw) hs[((slot * H + h) * K + d) * V + v0 + e] = S[idx];
    }
    __syncthreads();
    for (long long idx = tid; idx < BC * K; idx += nt) {
      long long i = idx / K, d = idx % K;
      long long gi = ((bos + i) * H + h) * K + d;
      bool in = i < len;
      ws[i * KP + d] = in ? w[gi] : 0.f;
      kd[i * KP + d] = in ? kn[gi] * expf(glast[d] - gcum[gi]) : 0.f;
    }
    __syncthreads();
    for (long long idx = tid; idx < BC * BV_STATE; idx += nt) {
      long long i = idx / BV_STATE, e = idx % BV_STATE;
      float acc = 0;
      if (i < len && e < bw) {
        acc = u[((bos + i) * H + h) * V + v0 + e];
        for (long long d = 0; d < K; ++d) acc -= ws[i * KP + d] * S[d * BV_STATE + e];
        vnew[((bos + i) * H + h) * V + v0 + e] = acc;
      }
      vn[idx] = (i < len && e < bw) ? acc : 0.f;
    }
    __syncthreads();
    for (long long idx = tid; idx < K * BV_STATE; idx += nt) {
      long long d = idx / BV_STATE, e = idx % BV_STATE;
      float acc = expf(glast[d]) * S[idx];
      for (int i = 0; i < BC; ++i) acc += kd[i * KP + d] * vn[i * BV_STATE + e];
      S[idx] = acc;
    }
  }
  __syncthreads();
  for (long long idx = tid; idx < K * BV_STATE; idx += nt) {
    long long d = idx / BV_STATE, e = idx % BV_STATE;
    if (e < bw) ht[((n * H + h) * V + v0 + e) * K + d] = S[idx];
  }
}

// 4. grid (NSEQ + T/BC, H), block 256, smem 4*(BC*(K+1) + K*V + BC*BC + BC*V).
extern "C" __global__ void kda_base_output(
    const long long* cu, const float* qn, const float* gcum, const float* hs,
    const float* P, const float* vnew, __nv_bfloat16* o, long long H, long long K,
    long long V, long long NSEQ, float scale) {
  extern __shared__ float sm[];
  const long long KP = K + 1;
  float* qg = sm;            // [BC][KP]
  float* S = qg + BC * KP;   // [K][V]
  float* Ps = S + K * V;     // [BC][BC]
  float* vn = Ps + BC * BC;  // [BC][V]
  const long long slot = blockIdx.x, h = blockIdx.y;
  long long n, c;
  if (!kda_base_slot(cu, NSEQ, slot, &n, &c)) return;
  const long long bos = cu[n] + c * BC, len = min((long long)BC, cu[n + 1] - bos);
  const int tid = threadIdx.x, nt = blockDim.x;
  for (long long idx = tid; idx < BC * K; idx += nt) {
    long long i = idx / K, d = idx % K;
    long long gi = ((bos + i) * H + h) * K + d;
    qg[i * KP + d] = i < len ? qn[gi] * expf(gcum[gi]) : 0.f;
  }
  for (long long idx = tid; idx < K * V; idx += nt) S[idx] = hs[(slot * H + h) * K * V + idx];
  for (long long idx = tid; idx < BC * BC; idx += nt) {
    long long i = idx / BC, j = idx % BC;
    Ps[idx] = (i < len && j <= i) ? P[((slot * H + h) * BC + i) * BC + j] : 0.f;
  }
  for (long long idx = tid; idx < BC * V; idx += nt) {
    long long i = idx / V, e = idx % V;
    vn[idx] = i < len ? vnew[((bos + i) * H + h) * V + e] : 0.f;
  }
  __syncthreads();
  for (long long idx = tid; idx < len * V; idx += nt) {
    long long i = idx / V, e = idx % V;
    float acc = 0;
    for (long long d = 0; d < K; ++d) acc += qg[i * KP + d] * S[d * V + e];
    for (long long j = 0; j <= i; ++j) acc += Ps[i * BC + j] * vn[j * V + e];
    o[((bos + i) * H + h) * V + e] = __float2bfloat16(scale * acc);
  }
}
