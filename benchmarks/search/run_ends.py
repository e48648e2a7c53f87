#!/usr/bin/env python3
"""Where the runs that miss end (docs/search.md, 2026-12-05, sixth round).

Reads a recorded space (a Kernel Tuner cache) and the output of
`tessera_search_paired --history` on it, and sorts the runs whose best is beyond 3 % of
the optimum by where they stopped: at a local optimum of greedy_ils's moves (adjacent
steps, exchanges, the hamming neighbourhood; descent_basins.py's) whose whole
neighbourhood the run had evaluated (confirmed: the run knew it was in a trap), at one
it had not finished confirming, or mid-descent (an improving neighbour never evaluated:
the budget ran out). Prints the counts, the configurations most often ended at, and the
evaluation by which the confirmed traps were confirmed (median and quartiles).

Usage: run_ends.py CACHE.json[.gz] HISTORY.tsv
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from descent_basins import load, moves  # noqa: E402


def main(cache_path, rows_path):
    values, cost = load(cache_path)
    index = [{str(v): i for i, v in enumerate(vs)} for vs in values]
    optimum = min(cost.values())

    def config(key):
        return tuple(index[i][p] for i, p in enumerate(key.split(",")))

    history = collections.defaultdict(list)
    ends = {}
    with open(rows_path) as f:
        for line in f:
            if line.startswith("# ") and " strategy " in line:
                continue
            if line.startswith("#"):
                _, seed, _, key, _ = line.split()
                history[int(seed)].append(config(key))
            elif line.strip():
                p = line.rstrip("\n").split("\t")
                ends[int(p[0])] = (int(p[3]), p[5])
    kinds, where, confirmed_at = collections.Counter(), collections.Counter(), []
    for seed, (within, key) in ends.items():
        if within:
            continue
        c = config(key)
        seen = history[seed]
        near = set(moves(values, cost, c, False)) | set(moves(values, cost, c, True))
        if any(cost[n] < cost[c] for n in near):
            kind = "mid-descent"
        elif all(n in seen for n in near):
            kind = "confirmed local optimum"
            confirmed_at.append(max(seen.index(n) + 1 for n in near | {c}))
        else:
            kind = "local optimum, not yet confirmed"
        kinds[kind] += 1
        where[(key, round(optimum / cost[c], 3), kind)] += 1
    print(f"{sum(kinds.values())} of {len(ends)} runs beyond 3 %: {dict(kinds)}")
    for (key, frac, kind), n in where.most_common(8):
        print(f"  {n:4d}  {key}  {frac}  {kind}")
    if confirmed_at:
        confirmed_at.sort()
        q = lambda x: confirmed_at[int(x * (len(confirmed_at) - 1))]  # noqa: E731
        print(f"confirmed by evaluation: median {q(0.5)}, quartiles {q(0.25)} and {q(0.75)}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])
