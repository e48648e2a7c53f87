#!/usr/bin/env python3
"""benchmarks/search/paired_diff.py — two files of tessera_search_paired rows, paired by seed.

Usage: paired_diff.py BASE.tsv VARIANT.tsv [VARIANT2.tsv ...]

Prints, for the seeds every file has: the share of runs within 3 % of the optimum
and the mean score of each, and each variant's difference with BASE, with the
standard error of the mean of the paired differences (sd of the per-seed
differences / sqrt(seeds)).
"""
import math
import sys


def rows(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            seed, score, frac, within, to3 = line.rstrip("\n").split("\t")[:5]
            out[int(seed)] = (float(score), float(frac), int(within), int(to3))
    return out


def paired(a, b):
    n = len(a)
    d = [y - x for x, y in zip(a, b)]
    m = sum(d) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in d) / (n - 1)) if n > 1 else 0.0
    return m, sd / math.sqrt(n)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    files = [rows(p) for p in argv[1:]]
    seeds = sorted(set.intersection(*(set(f) for f in files)))
    base = files[0]
    print(f"{len(seeds)} seeds")
    print("| file | within 3 % | difference | score | difference |")
    print("|---|---:|---:|---:|---:|")
    for path, f in zip(argv[1:], files):
        w = [f[s][2] for s in seeds]
        sc = [f[s][0] for s in seeds]
        line = f"| {path} | {100 * sum(w) / len(w):.1f} % | "
        if f is base:
            line += f"| {sum(sc) / len(sc):.3f} | |"
        else:
            dw, ew = paired([base[s][2] for s in seeds], w)
            ds, es = paired([base[s][0] for s in seeds], sc)
            line += f"{100 * dw:+.1f} ± {100 * ew:.1f} | {sum(sc) / len(sc):.3f} | {ds:+.3f} ± {es:.3f} |"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
