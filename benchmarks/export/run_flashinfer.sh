#!/usr/bin/env bash
# benchmarks/export/run_flashinfer.sh — flashinfer-bench 0.1.2 evaluates an exported
# FlashInfer Trace folder: `flashinfer-bench run --local DIR/flashinfer`, then each
# workload's status and latency, read back from the traces it saved, into a JSON file.
#   benchmarks/export/run_flashinfer.sh DIR OUT.json [flashinfer-bench run options...]
# kda's reference is a float64 token loop (~0.5 s a workload): pass fewer timing runs,
# e.g. --warmup-runs 3 --iterations 20 --num-trials 1.
set -euo pipefail
dir="$1"; out="$2"; shift 2
fi="$dir/flashinfer"
rm -rf "$fi/traces"
python3 -c 'from flashinfer_bench.cli.main import cli; cli()' run --local "$fi" --timeout 900 "$@"
python3 - "$fi" "$out" <<'PY'
import glob, json, sys
fi, out = sys.argv[1], sys.argv[2]
rows = []
for f in sorted(glob.glob(fi + "/traces/**/*.jsonl", recursive=True)):
    for line in open(f):
        t = json.loads(line)
        ev = t.get("evaluation") or {}
        rows.append({"definition": t["definition"], "solution": t.get("solution"),
                     "workload": t["workload"]["uuid"], "axes": t["workload"]["axes"],
                     "status": ev.get("status"), "latency_ms": (ev.get("performance") or {}).get("latency_ms"),
                     "reference_latency_ms": (ev.get("performance") or {}).get("reference_latency_ms"),
                     "max_abs_error": (ev.get("correctness") or {}).get("max_absolute_error"),
                     "max_rel_error": (ev.get("correctness") or {}).get("max_relative_error")})
n_work = sum(1 for f in glob.glob(fi + "/workloads/**/*.jsonl", recursive=True) for _ in open(f))
res = {"workloads": n_work, "traces": rows,
       "all_passed": len(rows) == n_work and n_work > 0 and all(r["status"] == "PASSED" for r in rows)}
json.dump(res, open(out, "w"), indent=2)
print(json.dumps(res, indent=2))
PY
