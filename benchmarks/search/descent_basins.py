#!/usr/bin/env python3
"""Where steepest descents end on a recorded space (docs/search.md, 2026-12-04).

For every valid configuration of a Kernel Tuner cache (plain or gzipped JSON), a
steepest descent over greedy_ils's moves (an adjacent step in one parameter's value
list, an exchange of two parameters with the same value list; the whole hamming
neighbourhood once those are spent) runs to its local optimum. Printed: the number
of local optima, the share of starts whose descent ends within 3 % of the optimum,
and that share by start quality (quintiles of the successful configurations, best
first). A space where the better starts end within 3 % *less* often than the poorer
ones is deceptive for any search that descends from what a model or a design found
good: on tessera's H200 gemm scans the best fifth of starts ends within 3 % in 72 %
(gated scan) and 28 % (first scan) of descents, the worst fifth in 88 % and 50 %.

Usage: descent_basins.py CACHE.json[.gz]...
Reads the file itself (no tessera build): failed configurations are starts and
neighbours that never improve; InvalidConfig entries are not in the space.
"""
import collections
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        d = json.load(f)
    keys = d["tune_params_keys"]
    values = [d["tune_params"][k] for k in keys]
    index = [{str(v): i for i, v in enumerate(vs)} for vs in values]
    cost = {}
    for key, entry in d["cache"].items():
        parts = key.split(",")
        if len(parts) != len(keys) or any(p not in index[i] for i, p in enumerate(parts)):
            continue
        t = entry.get("time")
        if isinstance(t, str) and "Invalid" in t:
            continue
        cost[tuple(index[i][p] for i, p in enumerate(parts))] = t if isinstance(t, (int, float)) else float("inf")
    return values, cost


def moves(values, cost, c, wide):
    out = []
    for i, vs in enumerate(values):
        for j in range(len(vs)):
            if j != c[i] and (wide or abs(j - c[i]) == 1):
                n = c[:i] + (j,) + c[i + 1 :]
                if n in cost:
                    out.append(n)
    if not wide:
        for i in range(len(values)):
            for k in range(i + 1, len(values)):
                if len(values[i]) > 1 and values[i] == values[k] and c[i] != c[k]:
                    n = list(c)
                    n[i], n[k] = n[k], n[i]
                    if tuple(n) in cost:
                        out.append(tuple(n))
    return out


def main(path):
    values, cost = load(path)
    end = {}

    def descend(c):
        path = []
        while c not in end:
            path.append(c)
            step = None
            for wide in (False, True):
                near = moves(values, cost, c, wide)
                best = min(near, key=lambda n: cost[n], default=None)
                if best is not None and cost[best] < cost[c]:
                    step = best
                    break
            if step is None:
                end[c] = c
                break
            c = step
        for p in path:
            end[p] = end[c]
        return end[c]

    optimum = min(cost.values())
    within = {c: optimum / cost[descend(c)] >= 1 / 1.03 for c in cost}
    ok = sorted((cost[c], c) for c in cost if cost[c] < float("inf"))
    quintiles = []
    for q in range(5):
        part = ok[q * len(ok) // 5 : (q + 1) * len(ok) // 5]
        quintiles.append(sum(within[c] for _, c in part) / max(1, len(part)))
    optima = collections.Counter(end[c] for c in cost)
    print(
        f"{path.split('/')[-1]}: {len(cost)} configurations, {len(optima)} local optima, "
        f"descents within 3 %: {sum(within.values()) / len(cost):.2f}; by start quintile (best first): "
        + ", ".join(f"{s:.2f}" for s in quintiles)
    )


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
