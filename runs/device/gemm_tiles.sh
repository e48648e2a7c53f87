#!/usr/bin/env bash
# runs/device/gemm_tiles.sh — gemm's per-shape table on one GPU in one device call (issue 33),
# searching only parts of the templates' spaces: the Hopper template's GPU tests; then each
# template named in SPACES searched exhaustively over the parameter lists given there (the
# other parameters keep spec.json's lists), all into one database that also holds the recorded
# wgmma search of the H200 (runs/recorded/h200-gemm-wgmma-2026-12-04.db.gz, its nine large-M
# champions); then the per-shape champions of every GPU model in it judged again in one worker
# (`tessera recheck`), so that every shape's figure and its cuBLAS time come from the same
# process and GPU; then `tessera recheck --per-shape`, which also judges again the champions that
# took a shape without having been (a re-judged champion that came out slower leaves its place to
# a runner-up with its search's figure: on the H200, 2026-12-05, four of the final table's thirteen).
# Written for the wgmma tiles of 48 and 96 columns (2026-12-05): the default SPACES holds them
# and the decode configurations that won on the H100.
#
#   TESSERA_BIN=$PWD/.carry/tessera runs/device/gemm_tiles.sh [SECONDS]
#
#   SECONDS  each restricted search's time limit (default 150)
# Environment: TESSERA_BIN (required, absolute), SPACES (JSON: template -> {param: [values]}),
# GEMM_GPU_TEST (default next to TESSERA_BIN; skipped if absent), GTEST_FILTER (default
# '*Hopper*'), OUT (default /tmp/out), FLUSH (read: evict L2 by reading before each timed launch,
# docs/statuses.md; then no recorded search is merged, its figures being the write flush's),
# MERGE (more recorded histories, .db.gz paths separated by spaces, merged before the searches
# under either flush: another GPU model's champions are then re-judged beside this run's).
# SPACES='{"decode": {}}' searches the decode template's whole space. Run from the repository root: the restricted spec is a copy of targets/ under
# $OUT (TESSERA_TARGETS), the kernels' sources byte for byte this checkout's.
set -uo pipefail
seconds=${1:-150}
out=${OUT:-/tmp/out}
mkdir -p "$out"
: "${TESSERA_BIN:?set TESSERA_BIN to the tessera binary (an absolute path)}"
export TESSERA_SOURCE=$PWD TESSERA_CACHE=${TESSERA_CACHE:-/tmp/tcache}
spaces=${SPACES:-'{"wgmma": {"BM": [64, 128], "BN": [48, 96], "STAGES": [4, 6], "GROUP_M": [8],
  "SPLITK": [1, 2], "FOLD": [0], "STREAMK": [0]},
  "decode": {"MT": [1, 2], "UNROLL": [2], "PF": [1]}}'}
db=$out/gemm-tiles.db
test_bin=${GEMM_GPU_TEST:-$(dirname "$TESSERA_BIN")/tessera_gemm_gpu_tests}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
if [ -x "$test_bin" ]; then
  echo "=== gpu tests (${GTEST_FILTER:-*Hopper*}) $(date -u +%H:%M:%S)"
  timeout 240 "$test_bin" --gtest_color=no --gtest_filter="${GTEST_FILTER:-*Hopper*}" >"$out/gemm-gpu-test.log" 2>&1
  echo "exit $?"
  grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED) ' "$out/gemm-gpu-test.log"
  grep -B2 -A8 'Failure' "$out/gemm-gpu-test.log" | head -40
fi
targets=$out/targets
rm -rf "$targets" && cp -r targets "$targets"
python3 - "$targets/gemm/spec.json" "$spaces" <<'PY' || exit 2
import json, sys
path, spaces = sys.argv[1], json.loads(sys.argv[2])
spec = json.load(open(path))
for t in spec["templates"]:
    for name, values in spaces.get(t["name"], {}).items():
        if name not in t["params"]:
            sys.exit("template %s has no parameter %s" % (t["name"], name))
        t["params"][name] = values
json.dump(spec, open(path, "w"), indent=1)
PY
flush=()
if [ "${FLUSH:-write}" = read ]; then
  flush=(--l2-flush read)
  rm -f "$db"
else
  zcat runs/recorded/h200-gemm-wgmma-2026-12-04.db.gz >"$db" || exit 2
fi
for gz in ${MERGE:-}; do
  zcat "$gz" >"$out/merge.db" && "$TESSERA_BIN" merge "$db" "$out/merge.db" >/dev/null || exit 2
  rm -f "$out/merge.db"
done
for tpl in $(python3 -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])))' "$spaces"); do
  echo "=== optimize gemm --template $tpl --strategy exhaustive (restricted) $(date -u +%H:%M:%S)"
  TESSERA_TARGETS=$targets "$TESSERA_BIN" optimize gemm --template "$tpl" --strategy exhaustive --budget 400 \
    --time "$seconds" --max-seconds-per-shape 0.3 "${flush[@]}" --db "$db" >"$out/optimize-$tpl.log" 2>&1
  echo "optimize exit $?"
  tail -3 "$out/optimize-$tpl.log"
done
echo "=== per-shape champions, each against its run's cuBLAS"
"$TESSERA_BIN" leaderboard gemm --per-shape --db "$db" | tee "$out/per-shape.txt"
# every GPU model's per-shape champions (on another GPU than the recorded search's, its champions
# are then timed here too, beside this run's); then `recheck --per-shape`: this GPU's champions,
# and in up to two more runs those that took a shape without having been judged again (a
# champion re-judged slower gives its place to a runner-up whose figure is its search's)
models=$(python3 -c 'import sqlite3, sys
for (d,) in sqlite3.connect(sys.argv[1]).execute("SELECT DISTINCT device FROM evaluations"):
    if d.startswith("NVIDIA"): print(d)' "$db")
ids=""
while IFS= read -r model; do
  [ -n "$model" ] || continue
  ids+=" $("$TESSERA_BIN" leaderboard gemm --per-shape --json --device "$model" --db "$db" |
    python3 -c 'import json,sys; print(" ".join(str(r["candidate"]) for r in json.load(sys.stdin)))')"
done <<<"$models"
ids=$(for i in $ids; do echo "$i"; done | sort -un | sed 's/^/--candidate /' | tr '\n' ' ')
echo "=== recheck $ids $(date -u +%H:%M:%S)"
"$TESSERA_BIN" recheck gemm $ids "${flush[@]}" --db "$db" >"$out/recheck.log" 2>&1
echo "recheck exit $?"
tail -20 "$out/recheck.log"
echo "=== recheck --per-shape $(date -u +%H:%M:%S)"
"$TESSERA_BIN" recheck gemm --per-shape "${flush[@]}" --db "$db" >"$out/recheck-per-shape.log" 2>&1
echo "recheck exit $?"
tail -20 "$out/recheck-per-shape.log"
echo "=== per-shape champions after the re-check (the latest evaluation of each)"
"$TESSERA_BIN" leaderboard gemm --per-shape --db "$db"
