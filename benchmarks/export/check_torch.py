"""benchmarks/export/check_torch.py — the exported torch package on a GPU, against tessera.

For every benchmark shape of the operator (targets/<op>/spec.json), with the package
installed (pip install DIR/torch) and the same inputs:
  - torch.ops.tessera.<op> gives outputs identical, bit for bit, to `tessera run OP
    --candidate ID` (the champion of the export's manifest);
  - a CUDA graph capturing the call replays to the same outputs; torch.compile(fullgraph)
    over it too (the op is opaque to it);
  - its time per call on a cold L2 beside tessera run's median on the same inputs, and the
    manifest's figure;
  - the launch overhead: host time per call (back to back, no sync) of the torch op and of
    the C library through ctypes alone, and the GPU time per call in an eager loop beside a
    replayed CUDA graph of the same calls (what the host adds when it cannot keep ahead).

  python3 benchmarks/export/check_torch.py --export DIR --tessera .carry/tessera --db runs/recorded/rmsnorm.db --out r.json
"""
import argparse
import importlib
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def overhead(op_fn, raw_fn, inputs, n=2000):
    """Host µs per call (the op; the ctypes launch alone) and GPU µs per call eager vs graph."""
    args = list(inputs.values())
    for _ in range(50):
        op_fn(*args)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        op_fn(*args)
    host_op = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        raw_fn()
    host_raw = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    # GPU time per call: eager back to back, and the same calls replayed from a graph.
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(200):
        op_fn(*args)
    e.record()
    e.synchronize()
    eager = s.elapsed_time(e) / 200 * 1e3
    g = torch.cuda.CUDAGraph()
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        op_fn(*args)
    torch.cuda.current_stream().wait_stream(st)
    with torch.cuda.graph(g):
        for _ in range(20):
            op_fn(*args)
    g.replay()
    torch.cuda.synchronize()
    s.record()
    for _ in range(10):
        g.replay()
    e.record()
    e.synchronize()
    graph = s.elapsed_time(e) / 200 * 1e3
    return {"host_us_per_call_op": host_op, "host_us_per_call_ctypes_launch": host_raw,
            "gpu_us_per_call_eager_loop": eager, "gpu_us_per_call_graph": graph,
            "overhead_us_per_call": eager - graph}


def one_shape(a, shape, spec, man, cand, pkg, lib, fn, outs_spec, timer, compile_it):
    label = shape.get("name") or "x".join(str(shape[s]) for s in spec["symbols"])
    inputs = common.make_inputs(spec, shape)
    args = list(inputs.values())
    got = fn(*args)
    got = got if isinstance(got, tuple) else (got,)
    torch.cuda.synchronize()
    r = {"shape": label, "symbols": common.shape_symbols(spec, shape), "served_by": pkg.candidate(**common.shape_symbols(spec, shape))}
    ref, t_median = common.tessera_run(a.tessera, spec["name"], cand["id"], a.db, inputs, repeat=a.repeat)
    r["identical_to_tessera_run"] = all(common.same_bits(g, ref[n]) for g, n in zip(got, outs_spec))
    # A CUDA graph of the call, replayed; torch.compile over it.
    g = torch.cuda.CUDAGraph()
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        fn(*args)
    torch.cuda.current_stream().wait_stream(st)
    with torch.cuda.graph(g):
        static = fn(*args)
    static = static if isinstance(static, tuple) else (static,)
    for s_ in static:
        s_.fill_(0) if s_.is_floating_point() else None
    g.replay()
    torch.cuda.synchronize()
    r["graph_replay_identical"] = all(torch.equal(x, y) for x, y in zip(static, got))
    if compile_it:  # (compiling costs seconds; two shapes say enough)
        compiled = torch.compile(lambda *xs: fn(*xs), fullgraph=True)
        c = compiled(*args)
        c = c if isinstance(c, tuple) else (c,)
        r["torch_compile_identical"] = all(torch.equal(x, y) for x, y in zip(c, got))
    r["torch_ms_cold_l2"] = timer.median_ms(lambda: fn(*args), n=a.repeat)
    r["torch_ms_cold_l2_host_included"] = timer.median_ms(lambda: fn(*args), n=a.repeat, hide_host=False)
    r["tessera_run_median_ms"] = t_median
    r["manifest_median_ms"] = common.figure_ms(man, label)
    if t_median:
        r["ratio_to_tessera_run"] = r["torch_ms_cold_l2"] / t_median
    # The C library alone (no dispatcher, no checks, outputs already there): the floor of a Python call.
    outs = [torch.empty_like(x) for x in got]
    named = dict(inputs)
    for n_, x in zip(outs_spec, outs):
        named[n_] = x
    fields = [named[t["name"]].data_ptr() for t in spec["tensors"]]
    sym = common.shape_symbols(spec, shape)
    fields += [sym[s] for s in spec["symbols"]]
    cargs = lib.Args(*fields, 0)
    nbytes = lib.scratch_bytes(cargs)
    scratch = torch.empty(max(nbytes, 1), dtype=torch.uint8, device="cuda")
    cargs.scratch = scratch.data_ptr() if nbytes else 0
    stream = torch.cuda.current_stream().cuda_stream
    r.update(overhead(fn, lambda: lib.launch_raw(cargs, stream), inputs, n=500 if spec["name"] == "kda" else 2000))
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--export", required=True)
    ap.add_argument("--tessera", required=True, help="the tessera binary (for tessera run)")
    ap.add_argument("--db", default="", help="the database holding the exported candidate")
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    man = common.manifest(a.export)
    op = man["operator"]
    cand = man["candidates"][0]
    spec = common.load_spec(a.repo, op)
    pkg = importlib.import_module("tessera_" + op)
    lib = importlib.import_module("tessera_" + op + "._library")
    fn = getattr(torch.ops.tessera, op)
    outs_spec = [t["name"] for t in spec["tensors"] if t["role"] == "output"]
    timer = common.ColdL2Timer()
    results = {"operator": op, "candidate": cand["name"], "device": torch.cuda.get_device_name(), "shapes": []}
    ok = True
    shapes = spec["benchmark_shapes"]
    if op == "rmsnorm":  # the launch overhead where the kernel is smallest, too
        shapes = shapes + [{"name": "1x1024", "M": 1, "N": 1024}, {"name": "64x4096", "M": 64, "N": 4096}]
    for shape in shapes:
        label = shape.get("name") or "x".join(str(shape[s]) for s in spec["symbols"])
        try:
            r = one_shape(a, shape, spec, man, cand, pkg, lib, fn, outs_spec, timer, len(results["shapes"]) < 2)
        except Exception as e:
            r = {"shape": label, "error": repr(e)[:2000]}
        ok = ok and "error" not in r and r["identical_to_tessera_run"] and r["graph_replay_identical"] \
            and r.get("torch_compile_identical", True)
        results["shapes"].append(r)
        print(label, {k: v for k, v in r.items() if k not in ("symbols",)}, flush=True)
    results["all_identical"] = ok
    common.write_json(a.out, results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
