#!/usr/bin/env python3
"""benchmarks/flash_attention/peers.py — issue 31's peers side by side, in one process, on the
same inputs: tessera's exported champion (--tessera DIR, `tessera export flash_attention
--per-shape --format torch`), PyTorch SDPA with its cuDNN and its FlashAttention-2 backends,
and FlashInfer's ragged prefill where flashinfer imports (the GPU machine has none: carry
the archive flashinfer_carry.sh builds, its FA3 modules prebuilt). Every benchmark shape of
targets/flash_attention/spec.json; per shape and peer: the median time, TFLOP/s (the spec's
per-shape FLOPs), the error of O (and of LSE, where the peer gives it) against a float64
reference on a few query heads, tessera's speed ratio to each peer, and which exported
candidate served tessera's call. A benchmark, not a test.

Inputs: drawn once per shape (seed 31) in tessera's ragged layout, q [TQ, HQ, D] and k, v
[TK, HKV, D] bf16 with the spec's cu_seqlens; SDPA gets views of the same tensors as
[B, H, N, D] (made contiguous once, before timing, unless --sdpa-layout view). SDPA has no
ragged form: a shape whose sequences differ in length runs as one SDPA call per sequence,
all of them inside one timed region (one L2 flush before the first, the gaps between the
calls counted); grouped-query heads go in with enable_gqa=True, or, where a backend
refuses that, with the KV heads repeated once before timing. The output says which.
Timing: CUDA events, the L2 flushed by a 256 MiB write before each timed call, then a ~2 ms
GPU sleep so that the host has enqueued the whole call before the start event runs (GPU
time, as tessera's judge measures it), median of --reps after two warm-up calls.

  python3 benchmarks/flash_attention/peers.py --tessera /tmp/fa-export [--json out.json]
  python3 benchmarks/flash_attention/peers.py --dry-run --tessera DIR   # the plan, no GPU needed
benchmarks/flash_attention/side_by_side.sh exports the champion and runs this with it.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "..", "..", "targets", "flash_attention", "spec.json")
PEERS = ("tessera", "cudnn", "fa2", "flashinfer")
DEVICE = "cuda"  # (a CPU check of this script sets "cpu" and stands in for the GPU calls)
sys.path.insert(0, HERE)
from tessera_package import TesseraPackage  # noqa: E402


class ShapeInputs:
    """One benchmark shape's symbols and sequences; tensors() draws its inputs on the GPU."""

    def __init__(self, shape):
        self.name = shape["name"]
        self.symbols = {k: shape[k] for k in ("B", "TQ", "TK", "HQ", "HKV", "D", "CAUSAL")}
        self.flops = shape["flops"]
        self.causal = bool(shape["CAUSAL"])
        self.scale = float(torch.tensor(1.0 / math.sqrt(shape["D"]), dtype=torch.float32))  # the spec's f32 scale
        self.cu_q = self._offsets(shape, "cu_seqlens_q", "TQ")
        self.cu_k = self._offsets(shape, "cu_seqlens_k", "TK")

    @staticmethod
    def _offsets(shape, tensor, total):
        values = shape.get("init_overrides", {}).get(tensor, {}).get("values")
        if values:
            return list(values)
        if shape["B"] == 1:
            return [0, shape[total]]
        raise ValueError(f"{shape['name']}: B = {shape['B']} with random offsets; give {tensor} values in the spec")

    def lengths(self):
        return [(b - a, d - c) for a, b, c, d in zip(self.cu_q, self.cu_q[1:], self.cu_k, self.cu_k[1:])]

    def tensors(self, seed=31, device=None):
        s, device = self.symbols, device or DEVICE
        g = torch.Generator(device=device).manual_seed(seed)
        draw = lambda *dims: torch.randn(*dims, generator=g, device=device, dtype=torch.bfloat16)  # noqa: E731
        return {"q": draw(s["TQ"], s["HQ"], s["D"]), "k": draw(s["TK"], s["HKV"], s["D"]),
                "v": draw(s["TK"], s["HKV"], s["D"]),
                "cu_seqlens_q": torch.tensor(self.cu_q, dtype=torch.int32, device=device),
                "cu_seqlens_k": torch.tensor(self.cu_k, dtype=torch.int32, device=device)}


def checked_heads(hq, n):
    """n query heads spread over 0..hq-1 (first and last included): the reference's heads."""
    return sorted({round(i * (hq - 1) / max(n - 1, 1)) for i in range(min(n, hq))})


def reference(shape, t, heads, chunk=4096):
    """float64 O [TQ, len(heads), D] and base-2 LSE [TQ, len(heads)], bottom-right causal, rows in chunks."""
    s = shape.symbols
    group = s["HQ"] // s["HKV"]
    dev = t["q"].device
    o = torch.zeros(s["TQ"], len(heads), s["D"], dtype=torch.float64, device=dev)
    lse = torch.zeros(s["TQ"], len(heads), dtype=torch.float64, device=dev)
    for (lq, lk), qa, ka in zip(shape.lengths(), shape.cu_q, shape.cu_k):
        for i, h in enumerate(heads):
            kd, vd = (t[n][ka:ka + lk, h // group].double() for n in ("k", "v"))
            for r0 in range(0, lq, chunk):
                r1 = min(lq, r0 + chunk)
                sc = (t["q"][qa + r0:qa + r1, h].double() @ kd.T) * shape.scale
                if shape.causal:
                    rows = torch.arange(r0, r1, device=dev)[:, None]
                    sc.masked_fill_(torch.arange(lk, device=dev)[None, :] > rows + (lk - lq), float("-inf"))
                m = torch.logsumexp(sc, dim=-1, keepdim=True)
                o[qa + r0:qa + r1, i] = torch.exp(sc - m) @ vd
                lse[qa + r0:qa + r1, i] = m[:, 0] / math.log(2.0)
                del sc
    return o, lse


def errors(o, lse, ref, heads):
    """rel_l2 and max |diff| of O [TQ, HQ, D] (and LSE [TQ, HQ], if given) at the reference's heads."""
    ref_o, ref_lse = ref
    got = o[:, heads].double()
    e = {"o_rel_l2": ((got - ref_o).norm() / ref_o.norm()).item(), "o_max_abs": (got - ref_o).abs().max().item()}
    if lse is not None:
        gl = lse[:, heads].double()
        e["lse_rel_l2"] = ((gl - ref_lse).norm() / ref_lse.norm()).item()
        e["lse_max_abs"] = (gl - ref_lse).abs().max().item()
    return e


def median_ms(fn, reps, flush):
    fn()
    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        flush.zero_()
        torch.cuda._sleep(4_000_000)  # (~2 ms: the host enqueues the whole call meanwhile)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


# --- SDPA: views of the ragged tensors, one call or one per sequence ---------------------------------

def sdpa_plan(shape):
    """How SDPA runs this shape: 'batched' (one [B, H, N, D] call) or 'per_sequence', or why it cannot."""
    lens = shape.lengths()
    if shape.causal and any(lq != lk for lq, lk in lens):
        return None, "causal with Lq != Lk: SDPA aligns the mask top-left, the spec bottom-right"
    if len(set(lens)) == 1:
        return "batched", f"one call on [B {shape.symbols['B']}, H, N {lens[0][0]}" + (
            "" if lens[0][0] == lens[0][1] else f" (keys {lens[0][1]})") + ", D]"
    return "per_sequence", f"{len(lens)} calls (one per sequence) in one timed region"


def sdpa_call(shape, t, backend, gqa, layout):
    """A function running SDPA on `backend` over the shape's views, and to_ragged(outputs) -> [TQ, HQ, D]."""
    s = shape.symbols
    mode, _ = sdpa_plan(shape)
    group = s["HQ"] // s["HKV"]

    def bhnd(x, a, n, batch):  # rows a..a+batch*n of [T, H, D] as [batch, H, n, D]
        v = x[a:a + batch * n].view(batch, n, x.shape[1], x.shape[2]).transpose(1, 2)
        return v.contiguous() if layout == "bhnd" else v

    if mode == "batched":
        spans = [(0, 0, *shape.lengths()[0], s["B"])]
    else:
        spans = [(qa, ka, lq, lk, 1) for (lq, lk), qa, ka in zip(shape.lengths(), shape.cu_q, shape.cu_k)]
    parts = []
    for qa, ka, nq, nk, batch in spans:
        q4, k4, v4 = bhnd(t["q"], qa, nq, batch), bhnd(t["k"], ka, nk, batch), bhnd(t["v"], ka, nk, batch)
        if gqa == "repeat_kv":
            k4, v4 = (x.repeat_interleave(group, dim=1) for x in (k4, v4))
        parts.append((q4, k4, v4))
    kw = {"is_causal": shape.causal, "scale": shape.scale}
    if gqa == "enable_gqa":
        kw["enable_gqa"] = True

    def fn():
        with sdpa_kernel(backend):
            return [F.scaled_dot_product_attention(q4, k4, v4, **kw) for q4, k4, v4 in parts]

    def to_ragged(outs):
        return torch.cat([o.transpose(1, 2).reshape(-1, s["HQ"], s["D"]) for o in outs])

    return fn, to_ragged


def run_sdpa(shape, t, name, reps, flush, ref, heads, layout):
    backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "fa2": SDPBackend.FLASH_ATTENTION}[name]
    mode, how = sdpa_plan(shape)
    if mode is None:
        return {"not_run": how}
    tries = ["enable_gqa", "repeat_kv"] if shape.symbols["HQ"] != shape.symbols["HKV"] else ["none"]
    why = []
    for gqa in tries:
        try:
            fn, to_ragged = sdpa_call(shape, t, backend, gqa, layout)
            o = to_ragged(fn())
            torch.cuda.synchronize()
        except Exception as e:  # a backend that refuses this form says why; the next form is tried
            why.append(f"{gqa}: {str(e).splitlines()[0][:160] if str(e) else type(e).__name__}")
            continue
        r = {"how": how + ("" if gqa == "none" else f", GQA by {gqa}") + f", layout {layout}"}
        if why:
            r["refused"] = why
        r["ms"] = median_ms(fn, reps, flush)
        if ref is not None:
            r.update(errors(o, None, ref, heads))
        del fn, o
        return r
    return {"not_run": "; ".join(why)}


# --- tessera and FlashInfer: the ragged layout as it is ----------------------------------------------

def run_tessera(pkg, shape, t, reps, flush, ref, heads):
    r = {"candidate": pkg.candidate(shape.symbols)}
    r["manifest_median_ms"] = pkg.figure_ms(r["candidate"], shape.name)
    fn = lambda: pkg.call(t, shape.symbols)  # noqa: E731
    o, lse = fn()
    torch.cuda.synchronize()
    r["ms"] = median_ms(fn, reps, flush)
    if ref is not None:
        r.update(errors(o, lse, ref, heads))
    return r


def run_flashinfer(fi, shape, t, reps, flush, ref, heads, backend="auto"):
    s = shape.symbols
    ws = torch.zeros(256 << 20, dtype=torch.uint8, device=DEVICE)
    w = fi.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend=backend)
    t0 = time.perf_counter()  # the first plan of a head dim loads its module (or JIT-compiles it: minutes)
    w.plan(t["cu_seqlens_q"], t["cu_seqlens_k"], s["HQ"], s["HKV"], s["D"], causal=shape.causal,
           sm_scale=shape.scale, q_data_type=torch.bfloat16)
    plan_s = time.perf_counter() - t0
    fn = lambda: w.run(t["q"], t["k"], t["v"], return_lse=True)  # noqa: E731
    o, lse = fn()
    torch.cuda.synchronize()
    used = getattr(w, "_backend", backend)
    r = {"how": f"BatchPrefillWithRaggedKVCacheWrapper backend {used}, NHD, one call (plan {plan_s:.1f} s)",
         "backend": used, "plan_s": round(plan_s, 3), "ms": median_ms(fn, reps, flush)}
    if ref is not None:
        r.update(errors(o, lse, ref, heads))  # (LSE taken as base 2, FlashInfer's convention)
    return r


def probe_flashinfer():
    """flashinfer and a line about it: version, where it lies, the prebuilt (AOT) modules it carries."""
    try:
        import flashinfer
        from flashinfer.jit import env as fi_env
    except Exception as e:
        return None, (f"flashinfer is not importable here ({type(e).__name__}: {str(e)[:100]}); "
                      "install flashinfer-python (or carry it: flashinfer_carry.sh) to compare it")
    aot = getattr(fi_env, "FLASHINFER_AOT_DIR", None)
    mods = sorted(p.name for p in aot.iterdir() if p.is_dir()) if aot is not None and aot.is_dir() else []
    heads = sorted({m.split("_head_dim_qk_")[1].split("_")[0] for m in mods if "_head_dim_qk_" in m}, key=int)
    return flashinfer, (f"flashinfer {getattr(flashinfer, '__version__', '?')} from "
                        f"{os.path.dirname(flashinfer.__file__)}, {len(mods)} prebuilt module(s)"
                        + (f" (head dims {', '.join(heads)})" if heads else ", the rest JIT-compiled on first use"))


# --- the report ---------------------------------------------------------------------------------------

def tflops(shape, r):
    return shape.flops / r["ms"] / 1e9 if "ms" in r else None


def ratios(results):
    """tessera's speed against each peer that ran: peer ms / tessera ms (> 1: tessera faster)."""
    t = results.get("tessera", {})
    return {f"tessera_vs_{p}": results[p]["ms"] / t["ms"] for p in PEERS[1:]
            if "ms" in t and "ms" in results.get(p, {})}


def fmt_num(x, spec):
    return format(x, spec) if isinstance(x, (int, float)) else format("-", ">" + spec.split(".")[0].lstrip("<>"))


def print_row(shape, peer, r):
    if "not_run" in r:
        print(f"{shape.name:36s} {peer:10s} not run: {r['not_run']}")
        return
    note = r.get("candidate") or r.get("how", "")
    print(f"{shape.name:36s} {peer:10s} {r['ms']:9.3f} {tflops(shape, r):8.1f} {fmt_num(r.get('o_rel_l2'), '10.2e')} "
          f"{fmt_num(r.get('o_max_abs'), '9.2e')} {fmt_num(r.get('lse_rel_l2'), '10.2e')}  {note}")


def one_shape(a, shape, pkg, fi, fi_status, flush):
    t = shape.tensors()
    heads = checked_heads(shape.symbols["HQ"], a.heads)
    ref = None if a.no_error else reference(shape, t, heads)
    out = {"shape": shape.name, "symbols": shape.symbols, "flops": shape.flops, "heads_checked": heads,
           "sdpa_plan": sdpa_plan(shape)[1], "peers": {}}
    for peer in a.peers:
        try:
            if peer == "tessera":
                r = run_tessera(pkg, shape, t, a.reps, flush, ref, heads) if pkg else {"not_run": "no --tessera DIR"}
            elif peer == "flashinfer":
                r = (run_flashinfer(fi, shape, t, a.reps, flush, ref, heads, a.flashinfer_backend) if fi
                     else {"not_run": fi_status})
            else:
                r = run_sdpa(shape, t, peer, a.reps, flush, ref, heads, a.sdpa_layout)
        except Exception as e:  # one peer failing on one shape leaves the others' figures
            r = {"not_run": f"failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
        if "ms" in r:
            r["tflops"] = tflops(shape, r)
        out["peers"][peer] = r
        print_row(shape, peer, r)
        torch.cuda.empty_cache()
    out["ratios"] = ratios(out["peers"])
    if out["ratios"]:
        print(f"{shape.name:36s} {'ratio':10s} " + "  ".join(f"{k} {v:.2f}x" for k, v in out["ratios"].items()))
    del t, ref
    torch.cuda.empty_cache()
    return out


def dry_run(shapes, pkg, heads):
    """The plan, without a GPU: per shape its FLOPs, how SDPA will run it, the candidate serving tessera."""
    for s in shapes:
        cand = pkg.candidate(s.symbols) if pkg else "-"
        lens = sorted({lq for lq, _ in s.lengths()})
        print(f"{s.name:36s} {s.flops / 1e12:7.3f} TFLOP  B {s.symbols['B']} lengths {lens}  HQ {s.symbols['HQ']} "
              f"HKV {s.symbols['HKV']} D {s.symbols['D']} causal {int(s.causal)}  heads checked "
              f"{checked_heads(s.symbols['HQ'], heads)}  tessera: {cand}  sdpa: {sdpa_plan(s)[1]}")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", metavar="DIR", help="an exported folder (tessera export flash_attention --per-shape "
                    "--format torch --out DIR); its torch package is installed offline into a temporary folder")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma list of " + ", ".join(PEERS) + " (default: all)")
    ap.add_argument("--shapes", default="", help="comma list of benchmark shape names (default: all)")
    ap.add_argument("--reps", type=int, default=20, help="timed calls per peer and shape (median)")
    ap.add_argument("--heads", type=int, default=2, help="query heads the float64 reference checks (spread)")
    ap.add_argument("--no-error", action="store_true", help="skip the float64 reference")
    ap.add_argument("--sdpa-layout", choices=("bhnd", "view"), default="bhnd",
                    help="SDPA's inputs: contiguous [B, H, N, D] copies (default) or strided views of the ragged tensors")
    ap.add_argument("--flashinfer-backend", choices=("auto", "fa3", "fa2"), default="auto",
                    help="FlashInfer's prefill backend (auto: FA3 on Hopper for bf16; a module that is not "
                    "prebuilt is JIT-compiled with nvcc on first use, minutes)")
    ap.add_argument("--json", metavar="PATH", help="write the results there")
    ap.add_argument("--dry-run", action="store_true", help="print the plan (no GPU needed) and exit")
    a = ap.parse_args(argv)
    a.peers = [p for p in a.peers.split(",") if p]
    bad = [p for p in a.peers if p not in PEERS]
    if bad:
        ap.error(f"unknown peer {', '.join(bad)} (known: {', '.join(PEERS)})")
    if a.reps < 1 or a.heads < 1:
        ap.error("--reps and --heads must be at least 1")
    if a.tessera and not os.path.isfile(os.path.join(a.tessera, "manifest.json")):
        ap.error(f"--tessera {a.tessera}: no manifest.json there (an exported folder is expected)")
    with open(SPEC) as f:
        spec = json.load(f)
    names = [s["name"] for s in spec["benchmark_shapes"]]
    wanted = [n for n in a.shapes.split(",") if n]
    unknown = [n for n in wanted if n not in names]
    if unknown:
        ap.error(f"unknown shape {', '.join(unknown)} (targets/flash_attention/spec.json has: {', '.join(names)})")
    a.shape_list = [ShapeInputs(s) for s in spec["benchmark_shapes"] if not wanted or s["name"] in wanted]
    return a


def main(argv=None):
    a = parse_args(argv)
    pkg = TesseraPackage(a.tessera) if a.tessera and ("tessera" in a.peers or a.dry_run) else None
    if pkg:
        if pkg.op != "flash_attention":
            sys.exit(f"--tessera {a.tessera}: an export of {pkg.op}, not of flash_attention")
        d = pkg.describe()
        print(f"tessera: {a.tessera}, candidates {', '.join(d['candidates'])}, commit {d['tessera_commit']}, "
              f"{d['installed_by']}")
    if a.dry_run:
        if "flashinfer" in a.peers:
            print("flashinfer:", probe_flashinfer()[1])
        dry_run(a.shape_list, pkg, a.heads)
        return 0
    if not torch.cuda.is_available():
        sys.exit("peers.py: no CUDA GPU here (torch.cuda.is_available() is False); --dry-run prints the plan")
    fi, fi_status = probe_flashinfer() if "flashinfer" in a.peers else (None, "not asked for")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; "
          f"{fi_status}")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=DEVICE)
    print(f"{'shape':36s} {'peer':10s} {'ms':>9s} {'TFLOP/s':>8s} {'rel_l2(O)':>10s} {'max|dO|':>9s} "
          f"{'rel_l2(LSE)':>10s}  served by / how")
    results = [one_shape(a, s, pkg, fi, fi_status, flush) for s in a.shape_list]
    if a.json:
        doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "cudnn": torch.backends.cudnn.version(), "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "reps": a.reps, "sdpa_layout": a.sdpa_layout, "flashinfer": fi_status,
               "tessera": pkg.describe() if pkg else None, "shapes": results}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
        print("results:", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
