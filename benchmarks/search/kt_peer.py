#!/usr/bin/env python3
"""benchmarks/search/kt_peer.py — Kernel Tuner's strategies scored like tessera's.

Replays Kernel Tuner cache files in Kernel Tuner's own simulation mode, runs its
strategies (random_sample, dual_annealing, greedy_ils, genetic_algorithm,
bayes_opt by default) R times each with the same budget as `tessera search-bench`
(the larger of the score's cutoff and 5% of the space), and prints the same
Markdown table with the same score (search/scoring.cpp, Willemsen et al. 2024):
exact expected best of random search without replacement as the baseline, failed
configurations counted as draws that find nothing better than the worst success.

A benchmark, not a test: it needs `pip install kernel-tuner` (not the build).
Usage: python kt_peer.py [--repeats R] [--strategies a,b] [--json OUT] CACHE.json[.gz]...

--json OUT appends one JSON line per space and strategy (space, strategy, seeds,
per-run scores, optimum/best at 1/2/5 %, ms/run): `tessera search-bench --peer OUT`
puts those rows in its own tables, beside tessera's strategies on the same seeds.
"""
import argparse
import gzip
import json
import math
import os
import statistics
import sys
import tempfile
import time
import warnings

DEFAULT_STRATEGIES = ["random_sample", "dual_annealing", "greedy_ils", "genetic_algorithm", "bayes_opt"]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


class Baseline:
    """Expected best of n random draws without replacement (as search/scoring.cpp)."""

    def __init__(self, success_costs, failures):
        values = sorted(success_costs)
        m = len(values)
        self.median = values[m // 2] if m % 2 else 0.5 * (values[m // 2 - 1] + values[m // 2])
        self.values = values + [values[-1]] * failures
        self.optimum, self.worst = values[0], values[-1]

    def expected_best(self, n):
        total = len(self.values)
        p, s = n / total, 0.0
        for i in range(1, total - n + 2):
            s += self.values[i - 1] * p
            if i < total:
                p *= (total - i - n + 1) / (total - i)
        return s

    def cutoff(self, fraction=0.95):
        target = self.median - fraction * (self.median - self.optimum)
        lo, hi = 1, len(self.values)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.expected_best(mid) <= target:
                hi = mid
            else:
                lo = mid + 1
        return lo


def run_score(best, curve, optimum):
    total = 0.0
    for n, base in enumerate(curve, start=1):
        found = best[min(n, len(best)) - 1]
        span = base - optimum
        total += (base - found) / span if span > 0 else (1.0 if found <= optimum else 0.0)
    return total / len(curve)


def run_kernel_tuner(doc, cache_file, strategy, budget, seed):
    import numpy as np
    from kernel_tuner import tune_kernel

    np.random.seed(seed)
    import random

    random.seed(seed)
    keys = doc["tune_params_keys"]
    recorded = {k for k, v in doc["cache"].items() if v.get("time") != "InvalidConfig"}

    def restrict(p):
        return ",".join(str(p[k]) for k in keys) in recorded

    tune_params = {k: doc["tune_params"][k] for k in keys}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = tune_kernel(
            doc.get("kernel_name", "kernel"), "", doc.get("problem_size", 1), [], tune_params,
            restrictions=restrict, strategy=strategy,
            strategy_options={"max_fevals": budget}, cache=cache_file,
            simulation_mode=True, quiet=True, verbose=False, objective=doc.get("objective", "time"))
    # Kernel Tuner returns each evaluated configuration once, in order.
    seen, costs = set(), []
    for r in results:
        key = ",".join(str(r[k]) for k in keys)
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time")
        costs.append(t if isinstance(t, (int, float)) and math.isfinite(t) else None)
    return costs[:budget]


def best_so_far(costs, nothing_found):
    out, best = [], math.inf
    for c in costs:
        if c is not None:
            best = min(best, c)
        out.append(nothing_found if math.isinf(best) else best)
    return out or [nothing_found]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("caches", nargs="+")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES))
    ap.add_argument("--json", help="append one JSON line per space and strategy to this file")
    args = ap.parse_args()
    for path in args.caches:
        doc = load(path)
        entries = [v for v in doc["cache"].values() if v.get("time") != "InvalidConfig"]
        ok = [v["time"] for v in entries if isinstance(v["time"], (int, float))]
        failed = len(entries) - len(ok)
        base = Baseline(ok, failed)
        size = len(base.values)
        cutoff = base.cutoff()
        share = lambda f: max(1, math.ceil(f * size))
        budget = max(cutoff, share(0.05))
        curve = [base.expected_best(n) for n in range(1, cutoff + 1)]
        name = os.path.basename(path)
        print(f"### {name} (Kernel Tuner {kt_version()})\n")
        print(f"{size} configurations ({failed} failed), optimum {base.optimum:.4g}, median {base.median:.4g}; "
              f"score averaged over budgets 1..{cutoff} (random search reaches 95% of median→optimum there); "
              f"runs of {budget} evaluations.\n")
        print("| strategy | runs | score | ± sd | optimum/best at 1% | at 2% | at 5% | ms/run |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        with tempfile.TemporaryDirectory() as tmp:
            plain = os.path.join(tmp, "cache.json")
            for strategy in args.strategies.split(","):
                scores, fr, lengths = [], {0.01: [], 0.02: [], 0.05: []}, []
                start = time.process_time()
                for r in range(args.repeats):
                    with open(plain, "w") as f:  # Kernel Tuner may append to its cache: a fresh copy per run
                        json.dump(doc, f)
                    costs = run_kernel_tuner(doc, plain, strategy, budget, seed=1 + r)
                    lengths.append(len(costs))  # a strategy may stop before the budget
                    best = best_so_far(costs, base.worst)
                    scores.append(run_score(best, curve, base.optimum))
                    for f_ in fr:
                        fr[f_].append(base.optimum / best[min(share(f_), len(best)) - 1])
                ms = 1000 * (time.process_time() - start) / args.repeats
                sd = statistics.pstdev(scores) if len(scores) > 1 else 0.0
                print(f"| {strategy} | {args.repeats} | {statistics.mean(scores):.3f} | {sd:.3f} | "
                      f"{statistics.mean(fr[0.01]):.3f} | {statistics.mean(fr[0.02]):.3f} | "
                      f"{statistics.mean(fr[0.05]):.3f} | {ms:.0f} |", flush=True)
                if args.json:
                    with open(args.json, "a") as out:
                        out.write(json.dumps({
                            "space": name, "strategy": strategy, "seeds": list(range(1, args.repeats + 1)),
                            "scores": scores, "at_1pct": statistics.mean(fr[0.01]),
                            "at_2pct": statistics.mean(fr[0.02]), "at_5pct": statistics.mean(fr[0.05]),
                            "ms_per_run": ms, "evaluations": statistics.mean(lengths), "budget": budget,
                            "kernel_tuner": kt_version()}) + "\n")
        print()
    return 0


def kt_version():
    try:
        from importlib.metadata import version
        return version("kernel_tuner")
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
