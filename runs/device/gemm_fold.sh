#!/usr/bin/env bash
# runs/device/gemm_fold.sh — gemm `wgmma`'s split-K sums added in the kernel (FOLD 1) on an
# H200 in one device call: the gemm GPU tests (the folded path against the float64 reference
# among them), then an A/B of the same configurations with the sums added by the reduce step
# (FOLD 0) and in the kernel (FOLD 1), SPLITK 4 and 8, 64x128 and 128x128 ping-pong, STAGES 6,
# GROUP_M 8 (the per-shape champions' designs), every shape judged with cuBLAS interleaved in
# the same worker (runs/device/ab.sh). FOLD 0 builds the very cubin it built before the
# folded path existed, so its rows are the "before". Logs and databases go to $OUT.
#
#   runs/device/pack.sh build .carry none && cp build/tests/gemm/tessera_gemm_gpu_tests .carry/
#   (run tool, carry [".carry"]) runs/device/gemm_fold.sh
#
# Environment: CARRY (default .carry: tessera and tessera_gemm_gpu_tests), OUT (default
# /tmp/out), AB_SECONDS (the A/B's limit, default 330; about 3 minutes were expected for its
# 8 configurations x 13 shapes at --max-seconds-per-shape 0.5).
set -uo pipefail
carry=${CARRY:-.carry}
out=${OUT:-/tmp/out}
mkdir -p "$out"
export TESSERA_SOURCE=$PWD TESSERA_CACHE=${TESSERA_CACHE:-/tmp/tcache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
ldd "$carry/tessera" | grep 'not found'
echo "=== gemm gpu tests $(date -u +%H:%M:%S)"
timeout 240 "$carry/tessera_gemm_gpu_tests" --gtest_color=no >"$out/gemm-gpu-tests.log" 2>&1
echo "exit $? (124: timed out)"
grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED) ' "$out/gemm-gpu-tests.log"
grep -B2 -A12 'Failure' "$out/gemm-gpu-tests.log" | head -60
echo "=== A/B, FOLD 0 (reduce step) against FOLD 1 (in the kernel), SPLITK 4 and 8 $(date -u +%H:%M:%S)"
TESSERA_BIN=$PWD/$carry/tessera OUT=$out timeout "${AB_SECONDS:-330}" runs/device/ab.sh gemm wgmma \
  '{"BM":[64,128],"BN":[128],"CONSUMERS":[2],"PINGPONG":[1],"OCC":[1],"STAGES":[6],"GROUP_M":[8],"SPLITK":[4,8],"FOLD":[0,1]}' \
  --max-seconds-per-shape 0.5 2>&1 | tee "$out/ab-fold.txt"
echo "=== end $(date -u +%H:%M:%S)"
