#!/usr/bin/env bash
# runs/device/h200_bars.sh — issues 33's and 35's bars on an H200 in one device call (210 s there on
# 2026-12-05, when it measured them; targets/gemm/journal/2026-12-05.md, thirty-sixth session; about 400 s
# on an H100, 2026-12-05; leave the call's 600 s): issue 33's per-shape table under the write
# flush (`gemm_tiles.sh`: the 48/96-column wgmma tiles at STAGES 8/10 and the decode template
# searched, the recorded H200 search's champions beside them, every one re-judged in one worker),
# the same searches under the read flush (issue 33's read bandwidth at M <= 128), then issue 35's
# default check (`default_check.sh`: three seeds of the default strategy with 10 % of the mma
# space against its recorded optimum, re-judged in one run). On another GPU than an H200 it stops
# after the first part unless ALL=1 (issue 35's optimum is the H200's). Logs and databases go to
# $OUT/{write,read,default}.
#
#   TESSERA_BIN=$PWD/.carry/tessera runs/device/h200_bars.sh
#
# Environment: TESSERA_BIN (required, absolute), OUT (default /tmp/out), ALL (1: every part on any
# GPU). Run from the repository root.
set -uo pipefail
out=${OUT:-/tmp/out}
: "${TESSERA_BIN:?set TESSERA_BIN to the tessera binary (an absolute path)}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "=== $gpu $(date -u +%H:%M:%S)"
spaces='{"wgmma": {"BM": [64, 128], "BN": [48, 96], "STAGES": [8, 10], "GROUP_M": [8], "SPLITK": [1, 2],
  "FOLD": [0], "STREAMK": [0]}, "decode": {"MT": [1, 2], "UNROLL": [2], "PF": [1]}}'
part() {  # name, then the environment of gemm_tiles.sh
  local name=$1
  shift
  echo "=== issue 33, $name flush $(date -u +%H:%M:%S)"
  env "$@" SPACES="$spaces" GEMM_GPU_TEST=/nonexistent OUT="$out/$name" runs/device/gemm_tiles.sh 80 \
    >"$out/$name.log" 2>&1
  echo "exit $?"
  rm -rf "$out/$name/targets" "$out/$name/logs"
  sed -n '/after the re-check/,$p' "$out/$name.log" | grep -E '^[a-z0-9_]+ +[0-9]+ +[0-9.]+x|geomean'
}
mkdir -p "$out"
part write FLUSH=write
case "$gpu" in *H200*) ;; *) [ "${ALL:-0}" = 1 ] || { echo "=== not an H200: stopped (ALL=1 runs the rest)"; exit 0; } ;; esac
part read FLUSH=read
echo "=== issue 35, default check $(date -u +%H:%M:%S)"
OUT=$out/default runs/device/default_check.sh >"$out/default.log" 2>&1
echo "exit $?"
tail -5 "$out/default.log"
rm -rf "$out/default/logs"
