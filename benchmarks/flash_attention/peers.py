#!/usr/bin/env python3
"""benchmarks/flash_attention/peers.py — the peers of issue 31 on the fixed-length
benchmark shapes of targets/flash_attention/spec.json: PyTorch SDPA with its cuDNN and
FlashAttention-2 backends (FlashInfer: only whether it imports, not yet run),
on the same bf16 inputs, each one's median time, TFLOP/s (the spec's per-shape FLOPs)
and error of O against a float64 reference on a few heads (rel_l2). A benchmark, not a
test; the tessera champion's figures come from `tessera leaderboard flash_attention`.
Timing: CUDA events, L2 flushed by a 256 MB write before each launch, median of --reps.
Ragged shapes (B > 1 with mixed lengths) are left out: SDPA has no varlen form.
Usage: python3 benchmarks/flash_attention/peers.py [--reps 20] [--shapes a,b] [--no-error]
"""
import argparse
import json
import math
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "..", "..", "targets", "flash_attention", "spec.json")


def fixed_shapes(spec):
    for s in spec["benchmark_shapes"]:
        ov = s.get("init_overrides", {}).get("cu_seqlens_q", {}).get("values")
        lens = [b - a for a, b in zip(ov, ov[1:])] if ov else [s["TQ"]]
        if len(set(lens)) != 1 or s["TQ"] != s["TK"]:
            continue
        yield s, lens[0]


def time_ms(fn, reps, flush):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    out = []
    for _ in range(reps):
        flush.zero_()
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(stop))
    out.sort()
    return out[len(out) // 2]


def reference_o(q, k, v, causal, heads):
    """float64 O for the first `heads` heads ([B, H, N, D] inputs), bottom-right causal (N_q == N_k here)."""
    B, H, N, D = q.shape
    out = []
    for b in range(B):
        for h in range(heads):
            qd, kd, vd = (t[b, h].double() for t in (q, k, v))
            s = (qd @ kd.T) * (1.0 / math.sqrt(D))
            if causal:
                s.masked_fill_(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
            out.append(torch.softmax(s, dim=-1) @ vd)
            del s
    return torch.stack(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--shapes", default="")
    ap.add_argument("--no-error", action="store_true")
    a = ap.parse_args()
    spec = json.load(open(SPEC))
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    try:
        import flashinfer  # noqa: F401
        have_fi = True
    except Exception:
        have_fi = False
    print(f"{'shape':38s} {'peer':10s} {'ms':>9s} {'TFLOP/s':>8s} {'rel_l2(O)':>10s}")
    for s, n in fixed_shapes(spec):
        if a.shapes and s["name"] not in a.shapes.split(","):
            continue
        B, H, D, causal = s["B"], s["HQ"], s["D"], bool(s["CAUSAL"])
        g = torch.Generator(device="cuda").manual_seed(31)
        q, k, v = (torch.randn(B, H, n, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
        heads = 2 if n <= 8192 else 1
        ref = None if a.no_error else reference_o(q, k, v, causal, heads)
        peers = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)]
        for name, backend in peers:
            try:
                with sdpa_kernel(backend):
                    fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    ms = time_ms(fn, a.reps, flush)
                    o = fn()
            except Exception as e:  # a backend that does not run here says why
                print(f"{s['name']:38s} {name:10s} not run: {str(e).splitlines()[0][:60]}")
                continue
            err = float("nan")
            if ref is not None:
                got = torch.stack([o[b, h].double() for b in range(B) for h in range(heads)])
                err = ((got - ref).norm() / ref.norm()).item()
            print(f"{s['name']:38s} {name:10s} {ms:9.3f} {s['flops'] / ms / 1e9:8.1f} {err:10.2e}")
        if not have_fi:
            print(f"{s['name']:38s} {'flashinfer':10s} not run: flashinfer is not importable here")
        del q, k, v, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
