#!/usr/bin/env python3
"""benchmarks/timing/samples.py — where the slow samples of a timed shape are.

Reads DIR/samples.jsonl written by the judge when TESSERA_DUMP_SAMPLES=DIR is set
(one line per timed shape: raw candidate and baseline samples in the order taken,
batches of --rounds A/B rounds) and prints, per line and program: min, median, p90,
the share of samples slower than 1.25x the min, and that share by position in the
batch and by quarter of the run — clustered in time, at batch starts, or random.

    benchmarks/timing/samples.py DIR [--rounds 10] [--shape 32768x1024]
"""
import argparse, json, statistics

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--rounds", type=int, default=10)
ap.add_argument("--shape", default="")
a = ap.parse_args()

def q(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]

for i, line in enumerate(open(f"{a.dir}/samples.jsonl")):
    d = json.loads(line)
    if a.shape and d["shape"] != a.shape:
        continue
    for who in ("candidate", "baseline"):
        xs = d[f"{who}_ms"]
        if not xs:
            continue
        lo = min(xs)
        slow = [x > 1.25 * lo for x in xs]
        by_pos = [sum(slow[j] for j in range(p, len(xs), a.rounds)) / max(1, len(range(p, len(xs), a.rounds)))
                  for p in range(a.rounds)]
        qn = max(1, len(xs) // 4)
        by_quarter = [sum(slow[j:j + qn]) / len(slow[j:j + qn]) for j in range(0, qn * 4, qn)]
        print(f"{i:3d} {d['shape']:<12} {who:<9} n {len(xs):3d} min {lo:.5f} med {statistics.median(xs):.5f} "
              f"p90 {q(xs, 0.9):.5f} slow {100 * sum(slow) / len(xs):5.1f}% | by position "
              + " ".join(f"{100 * s:3.0f}" for s in by_pos) + " | by quarter "
              + " ".join(f"{100 * s:3.0f}" for s in by_quarter))
    if "batches_kept" in d:
        print(f"    batches kept {d['batches_kept']} of {len(d.get('batch_sm_mhz', [])) or '?'} "
              f"(baseline reference {d['reference_ms']:.5f} ms)")
    mhz, why = d.get("batch_sm_mhz", []), d.get("batch_clock_reasons", [])
    if mhz:
        base = d["baseline_ms"]
        lo = min(base) if base else 0
        per_batch = []
        for b in range(len(mhz)):
            xs = base[b * a.rounds:(b + 1) * a.rounds]
            slow = sum(x > 1.25 * lo for x in xs)
            per_batch.append(f"{mhz[b]:.0f}/{why[b]:#x}/{slow}")
        print("    batches (SM MHz / clock event reasons / slow baseline samples): " + " ".join(per_batch))
