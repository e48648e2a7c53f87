#!/usr/bin/env bash
# runs/device/gemm_streamk.sh — the wgmma template's stream-K (STREAMK 1, issue 33;
# targets/gemm/README.md) on an H200 in one device call: its GPU test, then an A/B of STREAMK
# 0 and 1 on the tile shapes of the per-shape champions (128 x 128 ping-pong, 128 x 256 with
# two consumers; rings of 3 to 6 stages; SPLITK 1 and 4; FOLD 0 and 1, the split sums added by
# the reduce step or in the kernel: 50 configurations), every configuration judged against
# cuBLAS in one run (runs/device/ab.sh: same worker, same inputs). Logs and the database go to
# $OUT (ab-gemm.db). The first run (2026-12-05, before the stage address was broadcast)
# is runs/recorded/h200-gemm-streamk-ab-2026-12-05.db.gz.
#
#   TESSERA_BIN=.carry/tessera runs/device/gemm_streamk.sh
#
# Environment: TESSERA_BIN (required), GEMM_GPU_TEST (default next to TESSERA_BIN; skipped if
# absent), OUT (default /tmp/out). Run from the repository root. About 2-4 minutes.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
: "${TESSERA_BIN:?set TESSERA_BIN to the tessera binary}"
export TESSERA_SOURCE=$PWD TESSERA_CACHE=${TESSERA_CACHE:-/tmp/tcache}
test_bin=${GEMM_GPU_TEST:-$(dirname "$TESSERA_BIN")/tessera_gemm_gpu_tests}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
if [ -x "$test_bin" ]; then
  echo "=== gpu tests (stream-K, FOLD 1) $(date -u +%H:%M:%S)"
  timeout 240 "$test_bin" --gtest_color=no --gtest_filter='*Stream*:*Splits*' >"$out/gemm-gpu-test-streamk.log" 2>&1
  echo "exit $?"
  grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED) ' "$out/gemm-gpu-test-streamk.log"
  grep -B2 -A8 'Failure' "$out/gemm-gpu-test-streamk.log" | head -40
fi
echo "=== A/B STREAMK 0 / 1 $(date -u +%H:%M:%S)"
runs/device/ab.sh gemm wgmma \
  '{"BM":[128],"BN":[128,256],"CONSUMERS":[2],"PINGPONG":[0,1],"STAGES":[3,4,5,6],"OCC":[1],"GROUP_M":[8],"SPLITK":[1,4],"FOLD":[0,1],"STREAMK":[0,1]}'
