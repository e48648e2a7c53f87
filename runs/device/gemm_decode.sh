#!/usr/bin/env bash
# runs/device/gemm_decode.sh — gemm's `decode` template (issue 33; targets/gemm/gemm_decode.cu)
# on an H200 in one device call: its GPU tests, every configuration of it judged against
# cuBLAS (exhaustive, 88; its large shapes are slow by design and capped in time), then the
# per-shape champions of the decode run beside those of the recorded wgmma search
# (runs/recorded/h200-gemm-wgmma-2026-12-04.db.gz, merged into the same database), and those
# champions judged again in one worker (`tessera recheck`), so that every shape's figure and
# its cuBLAS time come from the same process. Logs and the database go to $OUT.
#
#   TESSERA_BIN=.carry/tessera runs/device/gemm_decode.sh [SECONDS]
#
#   SECONDS  the decode search's time limit (default 330; leave room for the re-check)
# Environment: TESSERA_BIN (required), GEMM_GPU_TEST (default next to TESSERA_BIN; skipped if
# absent), OUT (default /tmp/out), RECHECK (0: skip the re-check), FLUSH (read: evict L2 by reading
# before each timed launch, docs/statuses.md; then no recorded wgmma search is merged, its figures
# being the write flush's, and the per-shape table is the decode template's alone: issue 33's read
# bandwidth at M <= 128 without the write-back of a dirty L2). Run from the repository root.
set -uo pipefail
seconds=${1:-330}
out=${OUT:-/tmp/out}
mkdir -p "$out"
: "${TESSERA_BIN:?set TESSERA_BIN to the tessera binary}"
export TESSERA_SOURCE=$PWD TESSERA_CACHE=${TESSERA_CACHE:-/tmp/tcache}
db=$out/gemm-decode.db
test_bin=${GEMM_GPU_TEST:-$(dirname "$TESSERA_BIN")/tessera_gemm_gpu_tests}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
if [ -x "$test_bin" ]; then
  echo "=== gpu tests (decode) $(date -u +%H:%M:%S)"
  timeout 200 "$test_bin" --gtest_color=no --gtest_filter='*Decode*' >"$out/gemm-gpu-test.log" 2>&1
  echo "exit $?"
  grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED) ' "$out/gemm-gpu-test.log"
  grep -B2 -A8 'Failure' "$out/gemm-gpu-test.log" | head -40
fi
flush=()
if [ "${FLUSH:-write}" = read ]; then
  flush=(--l2-flush read)
  rm -f "$db"
else
  zcat runs/recorded/h200-gemm-wgmma-2026-12-04.db.gz >"$db" || exit 2
fi
echo "=== optimize gemm --template decode --strategy exhaustive ${flush[*]} $(date -u +%H:%M:%S)"
"$TESSERA_BIN" optimize gemm --template decode --strategy exhaustive --budget 88 --time "$seconds" \
  --max-seconds-per-shape 0.3 "${flush[@]}" --db "$db" >"$out/optimize-gemm-decode.log" 2>&1
echo "optimize exit $?"
tail -6 "$out/optimize-gemm-decode.log"
echo "=== statuses of the decode run"
python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for status, n in c.execute("""SELECT e.status, COUNT(*) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
                              WHERE c.template = 'decode' GROUP BY e.status"""):
    print("%-16s %d" % (status, n))
PY
echo "=== per-shape champions: decode (today) beside wgmma (recorded 2026-12-04), each against its run's cuBLAS"
"$TESSERA_BIN" leaderboard gemm --per-shape --db "$db" | tee "$out/per-shape.txt"
if [ "${RECHECK:-1}" = 1 ]; then
  ids=$("$TESSERA_BIN" leaderboard gemm --per-shape --json --db "$db" |
    python3 -c 'import json,sys; print(" ".join(sorted({"--candidate %d" % r["candidate"] for r in json.load(sys.stdin)})))')
  echo "=== recheck $ids $(date -u +%H:%M:%S)"
  "$TESSERA_BIN" recheck gemm $ids "${flush[@]}" --db "$db" >"$out/recheck.log" 2>&1
  echo "recheck exit $?"
  tail -30 "$out/recheck.log"
  echo "=== per-shape champions after the re-check (the latest evaluation of each)"
  "$TESSERA_BIN" leaderboard gemm --per-shape --db "$db"
fi
