"""benchmarks/export/common.py — what the export checks share: the spec's benchmark shapes
and inputs drawn as the spec's init says, tessera run on .npy files, timing on a cold L2.

The checks (check_torch.py, check_fla.py, run_flashinfer.sh; run_all.sh runs them all)
take an exported folder (`tessera export OP --format cpp,torch,flashinfer --out DIR`)
and write JSON results; they run on a GPU machine with torch.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64,
          "i32": torch.int32, "i64": torch.int64}


def load_spec(repo, op):
    with open(os.path.join(repo, "targets", op, "spec.json")) as f:
        return json.load(f)


def shape_symbols(spec, shape):
    """The symbols of a benchmark shape, T and NSEQ from seqlens as tessera derives them."""
    sym = {k: v for k, v in shape.items() if k in spec["symbols"]}
    if "seqlens" in shape:
        sym.setdefault("T", sum(shape["seqlens"]))
        sym.setdefault("NSEQ", len(shape["seqlens"]))
    return sym


def dim(expr, sym):
    return int(round(eval(expr, {"cdiv": lambda a, b: -(-a // b), "floor": int}, dict(sym))))


def make_inputs(spec, shape, seed=1, device="cuda"):
    """The inputs of `shape` in spec order, drawn as the spec's init says (a seeded torch generator)."""
    sym = shape_symbols(spec, shape)
    gen = torch.Generator(device=device).manual_seed(seed)
    out = {}
    for t in spec["tensors"]:
        if t["role"] != "input":
            continue
        dims = [dim(e, sym) for e in t["shape"]]
        init = dict(t.get("init", {}), **shape.get("init_overrides", {}).get(t["name"], {}))
        dt = DTYPES[t["dtype"]]
        if init.get("dist") == "cu_seqlens":
            x = torch.tensor([0] + list(np.cumsum(shape["seqlens"])), dtype=dt, device=device)
        elif init.get("dist") == "uniform":
            x = torch.rand(dims, generator=gen, device=device) * (init["high"] - init["low"]) + init["low"]
        elif init.get("dist") == "constant":
            x = torch.full(dims, float(init["value"]), device=device)
        else:
            x = torch.randn(dims, generator=gen, device=device) * init.get("std", 1.0) + init.get("mean", 0.0)
        out[t["name"]] = x.to(dt).contiguous()
    return out


def save_npy(tensors, folder):
    """tessera run's inputs: <name>.npy, bf16/f16 as float32."""
    os.makedirs(folder, exist_ok=True)
    for name, x in tensors.items():
        a = x.float() if x.dtype in (torch.bfloat16, torch.float16) else x
        np.save(os.path.join(folder, name + ".npy"), a.cpu().numpy())


def tessera_run(binary, op, candidate, db, inputs, repeat=0):
    """`tessera run OP --candidate ID`: its outputs as numpy arrays and, with repeat, its cold-L2 median."""
    d = tempfile.mkdtemp(prefix="tessera-run-")
    save_npy(inputs, os.path.join(d, "in"))
    cmd = [binary, "run", op, "--candidate", str(candidate), "--inputs", os.path.join(d, "in"),
           "--outputs", os.path.join(d, "out"), "--json"]
    if db:
        cmd += ["--db", db]
    if repeat:
        cmd += ["--repeat", str(repeat)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("tessera run failed: " + r.stdout[-2000:] + r.stderr[-2000:])
    j = json.loads(r.stdout[r.stdout.index("{"):])
    outs = {}
    for f in j["outputs"]:
        name = os.path.splitext(os.path.basename(f["path"]))[0]
        outs[name] = np.load(f["path"])
    shutil.rmtree(d, ignore_errors=True)  # (kda's inputs as float32 .npy are 1.6 GB a workload)
    return outs, j.get("median_ms")


def same_bits(a_torch, b_numpy):
    """Whether a torch output and tessera run's .npy (bf16 as float32) hold the same values, bit for bit."""
    a = a_torch.float().cpu().numpy() if a_torch.dtype in (torch.bfloat16, torch.float16) else a_torch.cpu().numpy()
    b = b_numpy.astype(a.dtype, copy=False)
    return a.shape == b.shape and (a.view(np.uint8) == b.view(np.uint8)).all()


class ColdL2Timer:
    """Times one call at a time with CUDA events, the L2 flushed (a 512 MiB write) before each.

    With hide_host (the default), the GPU sleeps about 2 ms after the flush, so that the
    host has enqueued the whole call before the start event is reached: the time is the
    call's GPU time, as tessera's judge measures it (it enqueues without waiting). Without
    it, host time the GPU waits for shows too.
    """

    def __init__(self):
        self.flush = torch.empty(512 * 1024 * 1024, dtype=torch.uint8, device="cuda")

    def median_ms(self, fn, n=30, warmup=3, hide_host=True):
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(n):
            self.flush.zero_()
            if hide_host:
                torch.cuda._sleep(4_000_000)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        return statistics.median(times)


def rel_l2(x, ref):
    x, ref = x.double(), ref.double()
    return float((x - ref).norm() / ref.norm().clamp_min(1e-300))


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
    print(json.dumps(obj, indent=2)[:4000])


def manifest(export_dir):
    with open(os.path.join(export_dir, "manifest.json")) as f:
        return json.load(f)


def figure_ms(man, label):
    """tessera's measured median for a benchmark shape, from the manifest's figures of the champion."""
    for s in man["candidates"][0].get("figures", {}).get("shapes", []):
        if s.get("shape") == label:
            return s.get("median_ms")
    return None


def add_repo_to_path():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
