#!/usr/bin/env bash
# runs/device/gemm_wgmma.sh — gemm's Hopper template `wgmma` (issue 33) on an H200 in one
# device call: the GPU test of the template if its binary is there, then a small search
# of the template judged against cuBLAS, then the leaderboards (per shape, and the geomean
# leaders) and the statuses the search met. Logs and the database go to $OUT.
#
#   TESSERA_BIN=.carry/tessera runs/device/gemm_wgmma.sh [BUDGET] [SECONDS]
#
#   BUDGET   candidates to evaluate (default 40; the space holds 636)
#   SECONDS  the search's time limit (default 420: the device tool allows 600 a call)
# Environment: TESSERA_BIN (required: the tessera binary), GEMM_GPU_TEST (the
# tessera_gemm_gpu_tests binary; default next to TESSERA_BIN, skipped if absent), OUT
# (default /tmp/out), SEED (default 1), PROFILE (1: then the geomean champion's SASS,
# its HGMMA count, and compute-sanitizer memcheck and racecheck of it at m1_qkv, the
# split-K path: about 1-2 minutes more; leave room under the call's 600 s). Run from the
# repository root (TESSERA_SOURCE is set to it, so the spec and kernels are this
# checkout's). `runs/device/pack.sh build .carry gpu` packs the GPU test binary beside
# tessera (and check.sh gpu-tests runs it too: GEMM_GPU_TEST=none skips it here).
set -uo pipefail
budget=${1:-40}
seconds=${2:-420}
out=${OUT:-/tmp/out}
mkdir -p "$out"
: "${TESSERA_BIN:?set TESSERA_BIN to the tessera binary}"
export TESSERA_SOURCE=$PWD TESSERA_CACHE=${TESSERA_CACHE:-/tmp/tcache}
db=$out/gemm-wgmma.db
test_bin=${GEMM_GPU_TEST:-$(dirname "$TESSERA_BIN")/tessera_gemm_gpu_tests}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
if [ -x "$test_bin" ]; then
  echo "=== gpu test $(date -u +%H:%M:%S)"
  timeout 300 "$test_bin" --gtest_color=no >"$out/gemm-gpu-test.log" 2>&1
  echo "gemm gpu test exit $?"
  grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED) ' "$out/gemm-gpu-test.log"
  grep -B2 -A8 'Failure' "$out/gemm-gpu-test.log" | head -40
else
  echo "=== gpu test: no $test_bin (skipped)"
fi
echo "=== optimize gemm --template wgmma --budget $budget $(date -u +%H:%M:%S)"
"$TESSERA_BIN" optimize gemm --template wgmma --budget "$budget" --time "$seconds" --seed "${SEED:-1}" \
  --max-seconds-per-shape 0.3 --db "$db" >"$out/optimize-gemm-wgmma.log" 2>&1
echo "optimize exit $?"
tail -8 "$out/optimize-gemm-wgmma.log"
echo "=== statuses"
python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
try:
    for status, n in c.execute("SELECT status, COUNT(*) FROM evaluations GROUP BY status"):
        print("%-16s %d" % (status, n))
except sqlite3.Error as e:
    print("(no statuses: %s)" % e)
PY
echo "=== leaderboard (geomean over the benchmark shapes, against cuBLAS)"
"$TESSERA_BIN" leaderboard gemm --db "$db" --limit 8
echo "=== leaderboard --per-shape (each shape's best wgmma configuration, against cuBLAS)"
"$TESSERA_BIN" leaderboard gemm --per-shape --db "$db"
if [ "${PROFILE:-0}" = 1 ]; then
  id=$("$TESSERA_BIN" leaderboard gemm --status ok --json --limit 1 --db "$db" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["candidate"] if r else "")')
  if [ -n "$id" ]; then
    for tool in sass memcheck racecheck; do
      echo "=== profile #$id --tool $tool $(date -u +%H:%M:%S)"
      timeout 150 "$TESSERA_BIN" profile gemm --candidate "$id" --tool "$tool" --shape m1_qkv --db "$db" \
        --out "$out/profile-$tool" >"$out/profile-$tool.log" 2>&1
      echo "exit $?"; tail -3 "$out/profile-$tool.log"
    done
    echo "HGMMA instructions in the champion's SASS: $(grep -c HGMMA "$out/profile-sass/sass.txt" 2>/dev/null)"
    grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$out"/profile-*/*.txt 2>/dev/null
  else
    echo "=== profile: no candidate with status ok"
  fi
fi
