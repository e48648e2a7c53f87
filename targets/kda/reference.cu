// targets/kda/reference.cu — the float64 reference of KDA forward (OPERATORS.md, kda).
//
// The token-by-token recurrence and nothing cleverer, all arithmetic in double:
//   q, k <- x / sqrt(sum(x^2) + 1e-6); beta <- sigmoid(beta_raw);
//   g <- lower_bound * sigmoid(exp(A_log[h]) * (g_raw + dt_bias[h]));
//   S <- Diag(exp(g)) S;  S <- S + beta k (v - S^T k)^T;  o = S^T (scale q).
// One block per (sequence, head); the state S (K x V doubles, 128 KiB for
// K = V = 128) lives in shared memory as St[k][v]. Thread (p, v) owns column v
// for the key slice p of KSPLIT slices; partial dot products over k are summed
// through shared memory. Limits: V * KSPLIT <= 1024 threads, i.e. V <= 256;
// shared memory K*V*8 + small, i.e. K*V <= ~28000 on sm_90.
// Outputs are double (o [T,H,V], ht [NSEQ,H,V,K], V-first like h0).
// Checked against the CPU reference and the independent float64 vectors of
// tests/data/kda-vectors by tests/kda/kda_gpu_reference_test.cpp (GPU).
#include <cuda_bf16.h>

#define KDA_REF_KSPLIT 4

// Token row tk's q and k normalised over K (qn, kn) and its decay exp(g) (dk; bias: the
// head's dt_bias) into shared memory, every thread of the block taking part: the sums of
// squares reduced by warp, then across warps through red.
__device__ __forceinline__ void normalise_token(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                const __nv_bfloat16* g, const float* bias, long long tk,
                                                long long K, double a, float lower_bound, double* qn,
                                                double* kn, double* dk, double* red) {
  const int tid = threadIdx.x, nthreads = blockDim.x;
  // Sums of squares of q and k over K (threads stride over K).
  double sq = 0, sk = 0;
  for (long long d = tid; d < K; d += nthreads) {
    double x = (double)__bfloat162float(q[tk + d]), y = (double)__bfloat162float(k[tk + d]);
    sq += x * x;
    sk += y * y;
  }
  for (int off = 16; off > 0; off >>= 1) {
    sq += __shfl_xor_sync(0xffffffffu, sq, off);
    sk += __shfl_xor_sync(0xffffffffu, sk, off);
  }
  __syncthreads();  // previous token's readers of qn/kn/dk/red are done
  if ((tid & 31) == 0) {
    red[tid / 32] = sq;
    red[32 + tid / 32] = sk;
  }
  __syncthreads();
  double tq = 0, tkk = 0;
  for (int w = 0; w < (nthreads + 31) / 32; ++w) {
    tq += red[w];
    tkk += red[32 + w];
  }
  const double rq = 1.0 / sqrt(tq + 1e-6), rk = 1.0 / sqrt(tkk + 1e-6);
  for (long long d = tid; d < K; d += nthreads) {
    qn[d] = (double)__bfloat162float(q[tk + d]) * rq;
    kn[d] = (double)__bfloat162float(k[tk + d]) * rk;
    double x = a * ((double)__bfloat162float(g[tk + d]) + (double)bias[d]);
    double gl = (double)lower_bound / (1.0 + exp(-x));
    dk[d] = exp(gl);
  }
}

extern "C" __global__ void kda_reference(
    const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
    const __nv_bfloat16* g, const __nv_bfloat16* beta, const float* A_log,
    const float* dt_bias, const float* h0, const long long* cu_seqlens, double* o,
    double* ht, long long T, long long H, long long K, long long V, long long NSEQ,
    float scale, float lower_bound) {
  extern __shared__ double smem[];
  double* St = smem;                 // [K][V]
  double* qn = St + K * V;           // [K]
  double* kn = qn + K;               // [K]
  double* dk = kn + K;               // [K] exp(g)
  double* part = dk + K;             // [KSPLIT][V] partial sums
  double* red = part + KDA_REF_KSPLIT * V;  // [2 * 32] reduction scratch
  (void)T;
  (void)NSEQ;

  const int n = blockIdx.x, h = blockIdx.y;
  const int tid = threadIdx.x, nthreads = blockDim.x;
  const int col = tid % V, p = tid / V;  // blockDim.x == KSPLIT * V
  const long long kslice = (K + KDA_REF_KSPLIT - 1) / KDA_REF_KSPLIT;
  const long long k0 = p * kslice, k1 = min(K, k0 + kslice);
  const long long bos = cu_seqlens[n], eos = cu_seqlens[n + 1];

  const float* s0 = h0 + ((long long)n * H + h) * V * K;
  for (long long i = tid; i < K * V; i += nthreads) {
    long long vv = i / K, kk = i % K;  // h0 is [V][K]
    St[kk * V + vv] = (double)s0[i];
  }
  const double a = exp((double)A_log[h]);

  for (long long t = bos; t < eos; ++t) {
    const long long tk = (t * H + h) * K;
    normalise_token(q, k, g, dt_bias + h * K, tk, K, a, lower_bound, qn, kn, dk, red);
    const double b = 1.0 / (1.0 + exp(-(double)__bfloat162float(beta[t * H + h])));
    __syncthreads();

    // Decay, and the partial of S^T k over this thread's key slice.
    double kv = 0;
    for (long long d = k0; d < k1; ++d) {
      double s = St[d * V + col] * dk[d];
      St[d * V + col] = s;
      kv += s * kn[d];
    }
    part[p * V + col] = kv;
    __syncthreads();
    kv = 0;
    for (int j = 0; j < KDA_REF_KSPLIT; ++j) kv += part[j * V + col];
    const double u = b * ((double)__bfloat162float(v[(t * H + h) * V + col]) - kv);
    __syncthreads();  // all reads of part done before it is rewritten
    double acc = 0;
    for (long long d = k0; d < k1; ++d) {
      double s = St[d * V + col] + kn[d] * u;
      St[d * V + col] = s;
      acc += s * qn[d];
    }
    part[p * V + col] = acc;
    __syncthreads();
    if (p == 0) {
      acc = 0;
      for (int j = 0; j < KDA_REF_KSPLIT; ++j) acc += part[j * V + col];
      o[(t * H + h) * V + col] = (double)scale * acc;
    }
  }
  __syncthreads();
  double* out = ht + ((long long)n * H + h) * V * K;
  for (long long i = tid; i < K * V; i += nthreads) {
    long long vv = i / K, kk = i % K;
    out[i] = St[kk * V + vv];
  }
}
