#!/usr/bin/env bash
# benchmarks/import/run_h200.sh — issue 30's "done when" on a GPU machine, from the
# repository root: `tessera import` of FlashInfer Trace definitions (into ./targets),
# `tessera optimize` of each (judged by the definition's run in float64), the
# leaderboard, `tessera export --format flashinfer` of the champion and flashinfer-bench
# 0.1.2 on the definition's own workloads (wheels from .whl/, as benchmarks/export does).
#   benchmarks/import/run_h200.sh TESSERA_BIN OUT DB "def:budget ..." [export]
# def is a path under tests/data/flashinfer-trace/definitions without .json,
# e.g. rmsnorm/rmsnorm_h4096:16; with "export", only export and flashinfer-bench run.
set -uo pipefail
bin="$1"; out="$2"; db="$3"; jobs="$4"; mode="${5:-all}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
rc=0
for job in $jobs; do
  def="${job%%:*}"; budget="${job##*:}"; name="$(basename "$def")"
  echo "=== $name $(date -u +%H:%M:%S)"
  "$bin" import "tests/data/flashinfer-trace/definitions/$def.json" || { rc=1; continue; }
  if [ "$mode" = all ]; then
    "$bin" optimize "$name" --budget "$budget" --db "$db" -q > "$out/optimize-$name.log" 2>&1 || rc=1
    tail -4 "$out/optimize-$name.log"
    "$bin" leaderboard "$name" --db "$db" --limit 5
  fi
  rm -rf "/tmp/export-$name"
  "$bin" export "$name" --best --format flashinfer --out "/tmp/export-$name" --db "$db" || { rc=1; continue; }
  "$here/../export/run_flashinfer.sh" "/tmp/export-$name" "$out/flashinfer-$name.json" > "/tmp/fib-$name.log" 2>&1 || rc=1
  python3 - "$out/flashinfer-$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = r["traces"]
print("flashinfer-bench: %d workloads, %d traces, all passed: %s" % (r["workloads"], len(rows), r["all_passed"]))
for t in rows[:60]:
    print("  %-40s %-8s %8s ms (reference %8s ms)" % (json.dumps(t["axes"]), t["status"],
          "%.4f" % t["latency_ms"] if t["latency_ms"] else "-",
          "%.4f" % t["reference_latency_ms"] if t["reference_latency_ms"] else "-"))
PY
done
exit $rc
