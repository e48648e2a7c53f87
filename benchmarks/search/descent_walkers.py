#!/usr/bin/env python3
"""Cheap descents from one place or many, on a recorded space (docs/search.md, 2026-12-04, fifth round).

A model of the local search of tessera's default, small enough to vary: a walker
evaluates its first-tier neighbours (an adjacent step in one parameter's value list,
an exchange of two parameters with the same value list; descent_basins.py's moves)
in the order of a main-effects model refitted after every evaluation (each
parameter value's mean log cost; failures count as the worst success), BW at a
time, and moves to the best that improves; a walker whose first tier holds no
improvement restarts at the model's pick of 16 random unseen configurations. K
walkers take turns. Optionally a start of 8 random configurations comes first and
the first walker descends from its best (what the default does after its
space-filling start) or, as probes of a deceptive space, its median, a random one
or its worst.

Printed per setting: the share of seeds whose best after BUDGET evaluations is
within 3 % of the optimum (its standard error in brackets).

Usage: descent_walkers.py CACHE.json[.gz] [BUDGET [SEEDS]]
"""
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from descent_basins import load, moves  # noqa: E402


def main_effects(seen, dims, worst):
    logs = {c: math.log(v if v < math.inf else worst) for c, v in seen.items()}
    mean = sum(logs.values()) / len(logs)
    effect = []
    for i in range(dims):
        acc = {}
        for c, y in logs.items():
            acc.setdefault(c[i], []).append(y)
        effect.append({j: sum(ys) / len(ys) - mean for j, ys in acc.items()})
    return lambda c: sum(effect[i].get(c[i], 0.0) for i in range(dims))


def run(values, cost, seed, budget, walkers, start, origin, width):
    rng = random.Random(seed)
    order = list(cost)
    rng.shuffle(order)
    seen = {}
    worst = max(v for v in cost.values() if v < math.inf)

    def evaluate(c):
        seen[c] = cost[c]

    def fresh(n):
        return [c for c in order if c not in seen][:n]

    for c in order[:start]:
        evaluate(c)
    at = []
    if start:
        by_cost = sorted(seen, key=lambda c: seen[c])
        pick = {"best": 0, "median": len(by_cost) // 2, "worst": -1}
        at.append(by_cost[pick[origin] if origin in pick else rng.randrange(len(by_cost))])
    while len(at) < walkers:
        c = fresh(1)[0]
        evaluate(c)
        at.append(c)
    w = 0
    while len(seen) < budget:
        model = main_effects(seen, len(values), worst) if len(seen) >= 8 else None
        here = at[w]
        near = moves(values, cost, here, False)
        better = [n for n in near if n in seen and seen[n] < seen[here]]
        unseen = [n for n in near if n not in seen]
        if better:
            at[w] = min(better, key=lambda n: seen[n])
        elif not unseen:  # a first-tier local optimum: restart
            draws = fresh(16 if model else 1)
            if not draws:
                break
            if model:
                draws.sort(key=model)
            evaluate(draws[0])
            at[w] = draws[0]
        else:
            rng.shuffle(unseen)
            if model:
                unseen.sort(key=model)
            batch = unseen[: min(width, budget - len(seen))]
            for n in batch:
                evaluate(n)
            improving = [n for n in batch if seen[n] < seen[here]]
            if improving:
                at[w] = min(improving, key=lambda n: seen[n])
            w = (w + 1) % walkers
    return min(cost.values()) / min(seen.values()) >= 1 / 1.03


def main():
    path = sys.argv[1]
    budget = int(sys.argv[2]) if len(sys.argv) > 2 else 55
    seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    values, cost = load(path)
    print(f"{path.split('/')[-1]}: runs of {budget}, {seeds} seeds; within 3 % of the optimum")
    settings = [(k, 0, "best", 2) for k in (1, 2, 4, 8)]
    settings += [(1, 0, "best", 1), (1, 0, "best", 4)]
    settings += [(1, 8, origin, 2) for origin in ("best", "median", "random", "worst")] + [(4, 8, "best", 2)]
    for k, start, origin, width in settings:
        hits = sum(run(values, cost, s, budget, k, start, origin, width) for s in range(1, seeds + 1))
        p = hits / seeds
        where = f"after a start of {start}, from its {origin}" if start else "no start"
        print(f"  {k} walker(s), batches of {width}, {where}: {100 * p:.1f} % (± {100 * math.sqrt(p * (1 - p) / seeds):.1f})")


if __name__ == "__main__":
    main()
