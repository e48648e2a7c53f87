// tests/kda/kda_gpu_template_test.cpp — kda's sequence split on the GPU (label gpu; skipped
// without an sm_90a GPU): chunk_wgmma_seg's configurations judged as `tessera optimize` judges
// them (tests/support/judge.h) on kda's validation shapes and on sequences that the split
// cuts into many segments: 2100 tokens (SEG 8 at CH 32, 256 tokens a segment: eight whole
// segments and a last one of 52 tokens), a batch whose first sequence is four whole segments
// and whose others end inside one (1024, 700, 1), and one of 8192 tokens (SEG 64 at CH 32:
// four segments). Each segment's end state from 0 (E_j), its transition (M_j), the fix-up's
// start states and the state kernel's chains all reach o and the final state, so a wrong one
// fails the tolerance.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "evaluator/device.h"
#include "spec/spec.h"
#include "tests/support/gpu.h"
#include "tests/support/judge.h"

using namespace tessera;

namespace {

class KdaTemplateGpu : public tessera::testing::Sm90aTemplateTest {
 protected:
  void SetUp() override { set_up("kda", "kda's wgmma templates are sm_90a only"); }
};

// A shape as spec.json's validation shapes load (T and NSEQ from the sequence lengths).
spec::Shape kda_shape(long long heads, std::vector<long long> seqlens) {
  spec::Shape s;
  long long total = 0;
  for (long long l : seqlens) total += l;
  s.symbols = {{"H", heads}, {"K", 128}, {"V", 128}, {"T", total}, {"NSEQ", static_cast<long long>(seqlens.size())}};
  s.seqlens = std::move(seqlens);
  return s;
}

}  // namespace

// RC 1 (the chains of kernels/state_rc.cuh in their three forms: kc_end, kc_trans and
// kc_full) at SEG 8, 64 and 256 with both TRN, beside RC 0 at both chunk lengths; segments by
// count (NSEG 3 and 16).
TEST_F(KdaTemplateGpu, SequenceSplitMatchesTheReferenceOnBothChainDesigns) {
  op.validation_shapes.push_back(kda_shape(2, {2100}));
  op.validation_shapes.push_back(kda_shape(3, {1024, 700, 1}));
  op.validation_shapes.push_back(kda_shape(1, {8192}));
  const spec::Program* tpl = op.find_template("chunk_wgmma_seg");
  ASSERT_NE(tpl, nullptr);
  // (NSEG: segments by count; 3 and 16 of the mean sequence, on RC 1 and on CH 64 RC 0)
  const std::vector<std::string> names = {"CH", "RC", "SEG", "TRN", "NSEG"};
  const std::vector<std::vector<long long>> rows = {
      {32, 1, 8, 0, 0}, {32, 1, 8, 1, 0}, {32, 1, 64, 1, 0}, {32, 1, 256, 1, 0}, {32, 0, 8, 1, 0},
      {64, 0, 8, 1, 0}, {32, 1, 8, 1, 3}, {32, 1, 8, 1, 16}, {64, 0, 8, 1, 3},
  };
  tessera::testing::judge_configs(*dev, op, *tpl, tessera::testing::param_table(names, rows), arch, 3e-3);
}
