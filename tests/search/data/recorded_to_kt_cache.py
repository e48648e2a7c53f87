#!/usr/bin/env python3
"""Writes one template's recorded GPU verdicts from a tessera database as a Kernel Tuner cache.

The CPU tests of tests/search/ replay tessera's own H200 recording of the gemm `mma`
space without the store: this turns it into the cache form search/kt_cache reads,
with the same numbers agent/recorded.cpp replays (cost = 1 / geomean speedup, a
failed status as the failure, seconds = evaluation + last compile).

  python3 tests/search/data/recorded_to_kt_cache.py runs/recorded/h200-gemm-mma-exhaustive-2026-11-30.db \
      gemm mma targets/gemm/spec.json tests/search/data/gemm-mma-H200.json.gz
"""
import gzip
import json
import sqlite3
import sys


def main(db_path, op, template, spec_path, out_path):
    spec = json.load(open(spec_path))
    tpl = next(t for t in spec["templates"] if t["name"] == template)
    order = sorted(tpl["params"])  # the order tessera's spec reader gives them
    db = sqlite3.connect(db_path)
    rows = db.execute(
        """select c.params, e.status, e.geomean_speedup, e.seconds, e.device,
                  (select k.seconds from compiles k where k.candidate_id = c.id order by k.id desc limit 1)
           from candidates c join evaluations e on e.id =
                (select max(id) from evaluations where candidate_id = c.id)
           where c.operator = ? and c.template = ?""", (op, template)).fetchall()
    cache = {}
    devices = set()
    for params, status, speedup, seconds, device, compile_s in rows:
        p = json.loads(params)
        if any(k not in p for k in order) or status in ("compiled", "not_applicable"):
            continue
        ok = status == "ok" and speedup and speedup > 0
        entry = {k: p[k] for k in order}
        entry["time"] = 1.0 / speedup if ok else status
        entry["compile_time"] = (compile_s or 0) * 1000
        entry["benchmark_time"] = (seconds or 0) * 1000
        cache[",".join(str(p[k]) for k in order)] = entry
        devices.add(device)
    doc = {"device_name": ", ".join(sorted(devices)), "kernel_name": f"{op}/{template}",
           "tune_params_keys": order, "tune_params": {k: tpl["params"][k] for k in order},
           "objective": "time", "cache": cache}
    with gzip.GzipFile(out_path, "wb", mtime=0) as f:
        f.write(json.dumps(doc, separators=(",", ":")).encode())
    print(f"{out_path}: {len(cache)} configurations from {', '.join(sorted(devices))}")


if __name__ == "__main__":
    main(*sys.argv[1:])
