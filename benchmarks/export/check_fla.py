"""benchmarks/export/check_fla.py — FLA's chunk_kda running tessera's exported kda kernel.

With the export's torch package installed and imported (its import registers the
backend), for each of the six kda workloads of targets/kda/spec.json, in
torch.inference_mode(), FLA's public fla.ops.kda.chunk_kda with the in-kernel gate, L2
norm and beta sigmoid, safe_gate and lower_bound -5, the V-first state and cu_seqlens:
  - it ran tessera's kernel: tessera_kda.fla_kda.CALLS grows by one per call, and FLA's
    log line "[FLA Backend] chunk_kda.chunk_kda -> tessera" is seen;
  - o and the final state against the float64 reference (targets/kda/reference.py on the
    GPU): relative L2 errors, goal 0.3 %;
  - time per call on a cold L2 beside `tessera run --repeat` on the same inputs and the
    manifest's figure (goal: within 5 %);
  - the same call captured in a CUDA graph and replayed gives the same outputs;
  - and a call that the kernel does not serve (gradients on) goes to FLA's own kernels.

  python3 benchmarks/export/check_fla.py --export DIR --tessera .carry/tessera --db runs/recorded/kda.db --out fla.json
"""
import argparse
import importlib.util
import json
import logging
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--export", required=True)
    ap.add_argument("--tessera", default="", help="the tessera binary (tessera run's median beside FLA's)")
    ap.add_argument("--db", default="")
    ap.add_argument("--tessera-medians", default="",
                    help="check_torch.py's JSON for kda: its tessera run medians (same inputs), instead of running tessera again")
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    log = Lines()
    logging.getLogger("fla.backends").addHandler(log)
    logging.getLogger("fla.backends").setLevel(logging.INFO)
    import tessera_kda
    from tessera_kda import fla_kda
    from fla.ops.kda import chunk_kda
    man = common.manifest(a.export)
    cand = man["candidates"][0]
    spec = common.load_spec(a.repo, "kda")
    ref_spec = importlib.util.spec_from_file_location("kda_reference", os.path.join(a.repo, "targets/kda/reference.py"))
    ref_mod = importlib.util.module_from_spec(ref_spec)
    ref_spec.loader.exec_module(ref_mod)
    timer = common.ColdL2Timer()
    res = {"registered": fla_kda.REGISTERED, "reason": fla_kda.REASON, "candidate": cand["name"],
           "device": torch.cuda.get_device_name(), "workloads": []}
    ok = fla_kda.REGISTERED
    medians = {}
    if a.tessera_medians and os.path.exists(a.tessera_medians):
        with open(a.tessera_medians) as f:
            medians = {w["shape"]: w.get("tessera_run_median_ms") for w in json.load(f)["shapes"]}
    for shape in spec["benchmark_shapes"]:
        try:
            r = workload(a, shape, spec, man, cand, chunk_kda, tessera_kda, fla_kda, ref_mod, timer, medians)
        except Exception as e:
            r = {"shape": shape["name"], "error": repr(e)[:2000]}
        ok = ok and "error" not in r and r["served_by_tessera"] and r["within_0.3%"] and r["graph_replay_identical"] \
            and r["identical_to_torch_op"]
        res["workloads"].append(r)
        print(r, flush=True)
    res.update(fallback(spec, chunk_kda, fla_kda, log))
    ok = ok and res["log_line_seen"] and res["grad_enabled_call_fell_back_to_fla"]
    res["all_ok"] = bool(ok)
    res["all_within_5%"] = all(w.get("within_5%") for w in res["workloads"])
    common.write_json(a.out, res)
    return 0 if ok else 1


def workload(a, shape, spec, man, cand, chunk_kda, tessera_kda, fla_kda, ref_mod, timer, medians):
    x = common.make_inputs(spec, shape)
    T, H, K = x["q"].shape
    V = x["v"].shape[2]
    kw = dict(scale=None, initial_state=x["h0"], output_final_state=True, use_qk_l2norm_in_kernel=True,
              use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True, safe_gate=True, lower_bound=-5.0,
              state_v_first=True, cu_seqlens=x["cu_seqlens"], A_log=x["A_log"], dt_bias=x["dt_bias"])
    qb, kb, vb, gb, bb = (x[n].unsqueeze(0) for n in ("q", "k", "v", "g", "beta"))
    call = lambda: chunk_kda(qb, kb, vb, gb, bb, **kw)  # noqa: E731
    r = {"shape": shape["name"]}
    with torch.inference_mode():
        before = fla_kda.CALLS
        o, ht = call()
        torch.cuda.synchronize()
        r["served_by_tessera"] = fla_kda.CALLS == before + 1
        sc = tessera_kda.scalars(T=T, H=H, K=K, V=V, NSEQ=x["h0"].shape[0])
        # the reference's math in float64 (no final casts): the errors of the kernel alone
        o64, ht64 = ref_mod.reference_f64(*[x[n] for n in ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "h0", "cu_seqlens")], **sc)
        r["o_rel_l2_vs_float64_ref"] = common.rel_l2(o[0], o64)
        r["ht_rel_l2_vs_float64_ref"] = common.rel_l2(ht, ht64)
        # the same through the torch op (must be identical: the backend only reshapes)
        o2, ht2 = torch.ops.tessera.kda(*[x[n] for n in ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "h0", "cu_seqlens")])
        r["identical_to_torch_op"] = bool(torch.equal(o2, o[0]) and torch.equal(ht2, ht))
        r["fla_ms_cold_l2"] = timer.median_ms(call, n=a.repeat)
        r["fla_ms_cold_l2_host_included"] = timer.median_ms(call, n=a.repeat, hide_host=False)
        # CUDA graph
        g = torch.cuda.CUDAGraph()
        st = torch.cuda.Stream()
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            call()
        torch.cuda.current_stream().wait_stream(st)
        with torch.cuda.graph(g):
            go, ght = call()
        go.zero_()
        ght.zero_()
        g.replay()
        torch.cuda.synchronize()
        r["graph_replay_identical"] = bool(torch.equal(go, o) and torch.equal(ght, ht))
    if shape["name"] in medians:
        r["tessera_run_median_ms"] = t_med = medians[shape["name"]]
        r["ratio_to_tessera_run"] = r["fla_ms_cold_l2"] / t_med if t_med else None
    elif a.tessera:
        _, t_med = common.tessera_run(a.tessera, "kda", cand["id"], a.db, x, repeat=a.repeat)
        r["tessera_run_median_ms"] = t_med
        r["ratio_to_tessera_run"] = r["fla_ms_cold_l2"] / t_med if t_med else None
    r["manifest_median_ms"] = common.figure_ms(man, shape["name"])
    if r["manifest_median_ms"]:
        r["ratio_to_manifest"] = r["fla_ms_cold_l2"] / r["manifest_median_ms"]
    r["within_0.3%"] = r["o_rel_l2_vs_float64_ref"] < 3e-3 and r["ht_rel_l2_vs_float64_ref"] < 3e-3
    ratio = r.get("ratio_to_tessera_run") or r.get("ratio_to_manifest")
    r["within_5%"] = ratio is not None and ratio <= 1.05
    return r


def fallback(spec, chunk_kda, fla_kda, log):
    """A call the kernel does not serve (gradients on) goes to FLA's own kernels."""
    res = {}
    shape = spec["benchmark_shapes"][-1]
    x = common.make_inputs(spec, shape)
    before = fla_kda.CALLS
    torch.set_grad_enabled(True)
    try:
        chunk_kda(*(x[n].unsqueeze(0) for n in ("q", "k", "v", "g", "beta")), initial_state=x["h0"],
                  output_final_state=True, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                  use_beta_sigmoid_in_kernel=True, safe_gate=True, lower_bound=-5.0, state_v_first=True,
                  cu_seqlens=x["cu_seqlens"], A_log=x["A_log"], dt_bias=x["dt_bias"])
        torch.cuda.synchronize()
    except Exception as e:  # FLA's own kernels failing is FLA's matter: what counts is who was asked
        res["fla_own_kernels_error"] = repr(e)[:500]
    res["grad_enabled_call_fell_back_to_fla"] = fla_kda.CALLS == before
    torch.set_grad_enabled(False)
    res["fla_log"] = [line for line in log.lines if "tessera" in line]
    res["log_line_seen"] = any("chunk_kda -> tessera" in line for line in log.lines)
    return res


if __name__ == "__main__":
    sys.exit(main())
