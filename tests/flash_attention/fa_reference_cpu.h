// tests/flash_attention/fa_reference_cpu.h — the flash_attention operator's formula on
// the CPU in float64, the plain two-pass way (scores, maximum, exponentials, sums), for
// checking the GPU float64 reference (targets/flash_attention/reference.cu) on tiny
// shapes. Layouts as in targets/flash_attention/spec.json: q [TQ, HQ, D], k and v
// [TK, HKV, D], offsets cu_q and cu_k of B+1 entries; causal aligned to the bottom-right
// (row i keeps key j iff j <= i + Lk - Lq); LSE in base 2; a row that keeps no key gets
// O = 0 and LSE = -inf.
#pragma once

#include <vector>

namespace tessera::fa_test {

struct Problem {
  std::vector<int> cu_q, cu_k;  // B+1 offsets each
  int hq = 1, hkv = 1, d = 64;
  bool causal = false;
  float scale = 0.125f;  // the kernels' float32 scale, used as a double here
  int tq() const { return cu_q.back(); }
  int tk() const { return cu_k.back(); }
  int batch() const { return static_cast<int>(cu_q.size()) - 1; }
};

struct Result {
  std::vector<double> o;    // [TQ, HQ, D]
  std::vector<double> lse;  // [TQ, HQ], base 2
};

// q, k, v: the bf16 inputs' values (exact as double).
Result attention_cpu(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                     const std::vector<double>& v);

// Query-key pairs the mask keeps (the FLOP count is 4 * HQ * D times this).
long long kept_pairs(const std::vector<int>& cu_q, const std::vector<int>& cu_k, bool causal);

}  // namespace tessera::fa_test
