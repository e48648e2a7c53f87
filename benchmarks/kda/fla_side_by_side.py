#!/usr/bin/env python3
"""benchmarks/kda/fla_side_by_side.py — FLA's chunk_kda beside tessera's kda
candidate, on the same inputs, against the same float64 reference.

A benchmark, not a test. For each of the six workloads of OPERATORS.md (or, by
name with --workloads, also few-chain shapes: one long sequence and few heads, as a
tensor-parallel shard sees it; `--workloads long` is issue 32's long-context suite,
H 16 and 32 with one sequence of 32768 and of 131072 tokens) it draws
inputs from the distributions in targets/kda/spec.json (torch, fixed seed),
writes them as .npy (bf16 tensors as float32 of their bf16 values), runs
`tessera run kda --candidate ID --repeat R` (cold-L2 median) and
`tessera run kda --reference` (float64), times FLA's chunk_kda with
triton.testing.do_bench (median; it flushes L2 between calls) twice, as it is
and with safe_gate=True (its fastest path with the lower-bound gate, about 10 %
faster on the six workloads: issue 32), quotes the faster of the two, and prints
per workload both tessera's and FLA's times, their ratio and the relative L2
errors for o and the final state.

  python3 benchmarks/kda/fla_side_by_side.py --tessera build/tessera --db runs/tessera.db --candidate 104
  python3 benchmarks/kda/fla_side_by_side.py ... --workloads long --candidates h16_1x32768=7,h16_1x131072=7 --candidate 18
  python3 benchmarks/kda/fla_side_by_side.py --db kl.db --workloads long --champions --no-error

--candidates NAME=ID,... serves a workload by its own candidate (the per-shape
champions: `tessera leaderboard kda --per-shape`, or a sequence-split candidate
for the long sequences), --candidate the others; --champions takes each workload's per-shape
champion from `tessera leaderboard --per-shape` (of kda, or of kda_long, the long-context
suite's operator, targets/kda_long, whose candidates are judged on these very shapes).
The float64 reference of the
131072-token shapes takes a while; --no-error skips it (times only).

Needs torch, triton and fla-core (pip install fla-core einops).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

WORKLOADS = [
    ("h96_1x8192", 96, [8192]),
    ("h96_6var", 96, [1300, 547, 2048, 963, 271, 3063]),
    ("h96_8x1024", 96, [1024] * 8),
    ("h64_1x8192", 64, [8192]),
    ("h64_6var", 64, [1300, 547, 2048, 963, 271, 3063]),
    ("h64_8x1024", 64, [1024] * 8),
]
# Not in the default set: one long sequence with few heads (8 or 16 (sequence, head)
# chains on the GPU), where the sequence split of chunk_wgmma_seg pays.
FEW_CHAINS = [
    ("h8_1x8192", 8, [8192]),
    ("h16_1x16384", 16, [16384]),
]
# Issue 32's second suite, reported beside the score and not part of it: long context as a
# tensor-parallel shard sees it (`--workloads long` selects all four).
LONG_CONTEXT = [
    ("h16_1x32768", 16, [32768]),
    ("h16_1x131072", 16, [131072]),
    ("h32_1x32768", 32, [32768]),
    ("h32_1x131072", 32, [131072]),
]
K = V = 128


def draw(spec_tensor, shape, gen):
    init = spec_tensor["init"]
    if init["dist"] == "normal":
        x = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32) * init.get("std", 1.0) + init.get("mean", 0.0)
    elif init["dist"] == "uniform":
        x = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32) * (init["high"] - init["low"]) + init["low"]
    else:
        raise ValueError(f"unsupported init {init}")
    return x.to(torch.bfloat16) if spec_tensor["dtype"] == "bf16" else x


def rel_l2(got, ref):
    got = got.astype(np.float64)
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def tessera_run(args, flag, inputs, outputs, repeat):
    cmd = [args.tessera, "run", args.operator, *flag, "--inputs", inputs, "--outputs", outputs, "--db", args.db, "--json"]
    if repeat:
        cmd += ["--repeat", str(repeat)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr.strip() or r.stdout.strip()}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessera", default="build/tessera")
    ap.add_argument("--db", default="runs/tessera.db")
    ap.add_argument("--candidate", type=int, default=None, help="the candidate that serves every workload "
                    "not named in --candidates")
    ap.add_argument("--candidates", default="", help="NAME=ID,... a candidate per workload")
    ap.add_argument("--champions", action="store_true", help="serve each workload by its per-shape champion "
                    "(`tessera leaderboard OPERATOR --per-shape`); --candidate and --candidates serve the rest")
    ap.add_argument("--operator", default=None, help="whose candidates: kda, or kda_long (its long-context "
                    "suite: targets/kda_long); default kda_long when every workload is a long one, else kda")
    ap.add_argument("--no-error", action="store_true", help="skip the float64 reference (times only)")
    ap.add_argument("--spec", default="targets/kda/spec.json")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--workloads", default="",
                    help="comma-separated subset (e.g. h64_1x8192,h64_6var), to split the six over calls: "
                         "on a cold Triton cache the six need more than 240 s; also the few-chain shapes "
                         + ", ".join(w[0] for w in FEW_CHAINS) + "; `long` for "
                         + ", ".join(w[0] for w in LONG_CONTEXT))
    args = ap.parse_args()
    known = WORKLOADS + FEW_CHAINS + LONG_CONTEXT
    names = set(args.workloads.split(",")) if args.workloads else set()
    if "long" in names:
        names |= {w[0] for w in LONG_CONTEXT}
    chosen = [w for w in known if w[0] in names] if args.workloads else WORKLOADS
    if not chosen:
        sys.exit(f"no workload among {args.workloads}; known: {', '.join(w[0] for w in known)}, long")
    if args.operator is None:
        long_names = {w[0] for w in LONG_CONTEXT}
        args.operator = "kda_long" if all(w[0] in long_names for w in chosen) else "kda"
    per = {}
    if args.champions:
        lb = subprocess.run([args.tessera, "leaderboard", args.operator, "--per-shape", "--json", "--db", args.db],
                            capture_output=True, text=True, check=True)
        per = {r["shape"]: r["candidate"] for r in json.loads(lb.stdout)}
    for item in filter(None, args.candidates.split(",")):
        name, _, cid = item.partition("=")
        if name not in {w[0] for w in known} or not cid.isdigit():
            sys.exit(f"--candidates: '{item}' is not NAME=ID with a known workload name")
        per[name] = int(cid)
    for name, _, _ in chosen:
        if name not in per and args.candidate is None:
            sys.exit(f"workload {name}: no candidate (give --candidate, or {name}=ID in --candidates)")

    from fla.ops.kda import chunk_kda
    import triton.testing

    spec = {t["name"]: t for t in json.load(open(args.spec))["tensors"]}
    work = args.workdir or tempfile.mkdtemp(prefix="kda-sbs-")
    rows = []
    for name, H, seqlens in chosen:
        T, N = sum(seqlens), len(seqlens)
        gen = torch.Generator(device="cuda").manual_seed(1234)
        x = {
            "q": draw(spec["q"], (T, H, K), gen), "k": draw(spec["k"], (T, H, K), gen),
            "v": draw(spec["v"], (T, H, V), gen), "g": draw(spec["g"], (T, H, K), gen),
            "beta": draw(spec["beta"], (T, H), gen), "A_log": draw(spec["A_log"], (H,), gen),
            "dt_bias": draw(spec["dt_bias"], (H, K), gen), "h0": draw(spec["h0"], (N, H, V, K), gen),
        }
        cu = torch.tensor([0] + list(np.cumsum(seqlens)), dtype=torch.int64, device="cuda")
        d_in = os.path.join(work, name, "in")
        os.makedirs(d_in, exist_ok=True)
        for key, t in x.items():
            np.save(os.path.join(d_in, key + ".npy"), t.float().cpu().numpy())
        np.save(os.path.join(d_in, "cu_seqlens.npy"), cu.cpu().numpy())

        cand = per.get(name, args.candidate)
        if not args.no_error:
            tessera_run(args, ["--reference"], d_in, os.path.join(work, name, "ref"), 0)
        mine = tessera_run(args, ["--candidate", str(cand)], d_in, os.path.join(work, name, "tessera"), args.repeat)

        def fla(safe):
            return chunk_kda(
                x["q"][None], x["k"][None], x["v"][None], x["g"][None], x["beta"][None],
                scale=K ** -0.5, initial_state=x["h0"].clone(), output_final_state=True,
                use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                safe_gate=safe, lower_bound=-5.0, A_log=x["A_log"], dt_bias=x["dt_bias"].reshape(-1),
                state_v_first=True, cu_seqlens=cu)

        paths = {}
        for label, safe in (("default", False), ("safe_gate", True)):
            o, s = fla(safe)
            torch.cuda.synchronize()
            paths[label] = (triton.testing.do_bench(lambda: fla(safe), warmup=50, rep=300, return_mode="median"),
                            o[0].float().cpu().numpy(), s.float().cpu().numpy())
        best = min(paths, key=lambda p: paths[p][0])
        f_ms = paths[best][0]
        row = {
            "workload": name, "candidate": cand, "tessera_ms": mine["median_ms"], "fla_ms": f_ms, "fla_path": best,
            "fla_default_ms": paths["default"][0], "fla_safe_gate_ms": paths["safe_gate"][0],
            "speedup_vs_fla": f_ms / mine["median_ms"],
        }
        if not args.no_error:
            ref_o = np.load(os.path.join(work, name, "ref", "o.npy"))
            ref_s = np.load(os.path.join(work, name, "ref", "ht.npy"))
            row["tessera_err_o"] = rel_l2(np.load(os.path.join(work, name, "tessera", "o.npy")), ref_o)
            row["tessera_err_state"] = rel_l2(np.load(os.path.join(work, name, "tessera", "ht.npy")), ref_s)
            for label, (_, o, s) in paths.items():
                row[f"fla_{label}_err_o"] = rel_l2(o, ref_o)
                row[f"fla_{label}_err_state"] = rel_l2(s, ref_s)
            row["fla_err_o"], row["fla_err_state"] = row[f"fla_{best}_err_o"], row[f"fla_{best}_err_state"]
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json_out:  # after every workload: a call cut short by a time limit keeps what it measured
            json.dump(rows, open(args.json_out, "w"), indent=1)

    gm = lambda key: float(np.exp(np.mean([np.log(r[key]) for r in rows])))
    err = lambda r, k: f"{r[k]:.2e}" if k in r else "-"
    print(f"\n| workload | candidate | tessera ms | FLA ms (path; default / safe_gate) | FLA/tessera | err o (t / FLA) | err state (t / FLA) |")
    print("|---|---:|---:|---|---:|---|---|")
    for r in rows:
        print(f"| {r['workload']} | {r['candidate']} | {r['tessera_ms']:.3f} | {r['fla_ms']:.3f} ({r['fla_path']}; "
              f"{r['fla_default_ms']:.3f} / {r['fla_safe_gate_ms']:.3f}) | {r['speedup_vs_fla']:.2f}x | "
              f"{err(r, 'tessera_err_o')} / {err(r, 'fla_err_o')} | {err(r, 'tessera_err_state')} / {err(r, 'fla_err_state')} |")
    print(f"| geomean | | {gm('tessera_ms'):.3f} | {gm('fla_ms'):.3f} | {gm('fla_ms') / gm('tessera_ms'):.2f}x | | |")
    if args.json_out:
        json.dump(rows, open(args.json_out, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
