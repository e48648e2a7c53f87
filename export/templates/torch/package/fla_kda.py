"""tessera_kda/fla_kda.py — tessera's kda kernel as a backend of FLA's chunk_kda.

Importing tessera_kda imports this module, which registers TesseraKDABackend with FLA's
backend registry (fla.backends.register(chunk_kda)) when FLA is installed. FLA then asks
its verifier first on every chunk_kda call: it accepts only what tessera's kernel
computes, and FLA falls back to its own kernels for everything else:

  - inference only: torch.is_grad_enabled() must be False (torch.inference_mode() or no_grad);
  - the gate, the q/k L2 norm and the beta sigmoid in the kernel (use_gate_in_kernel,
    use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel True), safe_gate=True with the
    spec's lower_bound (@@LOWER_BOUND@@), A_log and dt_bias given, allow_neg_eigval False;
  - scale None or the spec's 1/sqrt(K); K and V as the kernel was built for (@@FIXED_TEXT@@);
  - no GVA (v's heads equal q's), bfloat16 q, k, v, g, beta, float32 A_log, dt_bias and
    initial state, the state V-first (state_v_first=True);
  - no context parallelism, no intermediate states, no use_graph padding.

It serves [B, T, H, K] inputs either as B equal sequences (no cu_seqlens) or, with
cu_seqlens, as B = 1 packed sequences; a missing initial state is zeros. Set
FLA_TESSERA=0 to turn it off. CALLS counts the calls it served; FLA logs
"[FLA Backend] chunk_kda.chunk_kda -> tessera" (logger fla.backends, INFO) at the first.
"""
import math

import torch

from ._op import FIXED, scalars

CALLS = 0
REGISTERED = False
REASON = None

_fixed = dict(FIXED)


def _verify(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
            use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False, use_beta_sigmoid_in_kernel=False,
            allow_neg_eigval=False, safe_gate=False, lower_bound=None, disable_recompute=False,
            return_intermediate_states=False, state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
            cp_context=None, use_graph=False, max_num_seqs=None, *, A_log=None, dt_bias=None, **kwargs):
    if torch.is_grad_enabled():
        return False, "tessera's kda kernel is forward only: run under torch.inference_mode() or torch.no_grad()"
    if not (use_gate_in_kernel and use_qk_l2norm_in_kernel and use_beta_sigmoid_in_kernel):
        return False, "tessera needs use_gate_in_kernel, use_qk_l2norm_in_kernel and use_beta_sigmoid_in_kernel"
    if allow_neg_eigval:
        return False, "tessera does not support allow_neg_eigval"
    if not safe_gate or lower_bound is None:
        return False, "tessera computes the safe gate lower_bound * sigmoid(exp(A_log) * (g + dt_bias)): safe_gate=True and lower_bound needed"
    if A_log is None or dt_bias is None:
        return False, "tessera needs A_log and dt_bias"
    if not state_v_first:
        return False, "tessera keeps the state V-first: state_v_first=True needed"
    if cp_context is not None or return_intermediate_states or use_graph:
        return False, "tessera does not support context parallelism, intermediate states or use_graph"
    if q.dim() != 4 or k.shape != q.shape or v.dim() != 4 or v.shape[:3] != q.shape[:3]:
        return False, "tessera needs q, k [B, T, H, K] and v [B, T, H, V] with the same B, T, H (no GVA)"
    B, T, H, K = q.shape
    V = v.shape[3]
    if g.shape != q.shape or beta.shape != q.shape[:3]:
        return False, "tessera needs g [B, T, H, K] and beta [B, T, H]"
    for name, x in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):
        if x.dtype != torch.bfloat16:
            return False, "tessera needs bfloat16 %s, got %s" % (name, x.dtype)
    if A_log.dtype != torch.float32 or dt_bias.dtype != torch.float32:
        return False, "tessera needs float32 A_log and dt_bias"
    if A_log.numel() != H or dt_bias.numel() != H * K:
        return False, "tessera needs A_log [H] and dt_bias [H, K] (or [H*K])"
    for name, value in (("K", K), ("V", V), ("H", H)):
        if name in _fixed and value != _fixed[name]:
            return False, "tessera's kernel was built for %s = %d, got %d" % (name, _fixed[name], value)
    if cu_seqlens is not None:
        if B != 1:
            return False, "with cu_seqlens tessera needs B = 1"
        if cu_seqlens.dtype not in (torch.int64, torch.int32) or cu_seqlens.dim() != 1:
            return False, "tessera needs a 1-D int64 (or int32) cu_seqlens"
    nseq = cu_seqlens.numel() - 1 if cu_seqlens is not None else B
    spec = scalars(T=B * T, H=H, K=K, V=V, NSEQ=nseq)
    if float(lower_bound) != float(spec["lower_bound"]):
        return False, "tessera's kernel computes lower_bound = %g, got %g" % (spec["lower_bound"], lower_bound)
    if scale is not None and abs(float(scale) - spec["scale"]) > 1e-7 * spec["scale"]:
        return False, "tessera's kernel computes scale = %g (1/sqrt(K)), got %g" % (spec["scale"], scale)
    if initial_state is not None:
        if initial_state.dtype != torch.float32 or tuple(initial_state.shape) != (nseq, H, V, K):
            return False, "tessera needs a float32 initial_state [N, H, V, K] (V-first)"
    if not q.is_cuda:
        return False, "tessera runs on CUDA tensors"
    return True, None


def _run(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
         use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False, use_beta_sigmoid_in_kernel=False,
         allow_neg_eigval=False, safe_gate=False, lower_bound=None, disable_recompute=False,
         return_intermediate_states=False, state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
         cp_context=None, use_graph=False, max_num_seqs=None, *, A_log=None, dt_bias=None, **kwargs):
    global CALLS
    B, T, H, K = q.shape
    V = v.shape[3]
    if cu_seqlens is None:
        cu_seqlens = torch.arange(0, B + 1, device=q.device, dtype=torch.int64) * T
    elif cu_seqlens.dtype != torch.int64:
        cu_seqlens = cu_seqlens.to(torch.int64)
    nseq = cu_seqlens.numel() - 1
    if initial_state is None:
        initial_state = torch.zeros(nseq, H, V, K, dtype=torch.float32, device=q.device)
    o, ht = torch.ops.tessera.kda(
        q.reshape(B * T, H, K).contiguous(), k.reshape(B * T, H, K).contiguous(),
        v.reshape(B * T, H, V).contiguous(), g.reshape(B * T, H, K).contiguous(),
        beta.reshape(B * T, H).contiguous(), A_log.reshape(H).contiguous(), dt_bias.reshape(H, K).contiguous(),
        initial_state.contiguous(), cu_seqlens.contiguous())
    CALLS += 1
    return o.view(B, T, H, V), (ht if output_final_state else None)


try:
    from fla.backends import BaseBackend, register as _register
    from fla.ops.kda.chunk import chunk_kda as _chunk_kda
except Exception as _e:  # FLA absent (or broken): the operator works without it
    REASON = "FLA is not importable: %s" % (_e,)
else:
    class TesseraKDABackend(BaseBackend):
        """tessera's exported kda kernel for FLA's chunk_kda (inference only; see the module)."""

        backend_type = "tessera"
        package_name = None
        env_var = "FLA_TESSERA"
        default_enable = True
        priority = 2  # ahead of FlashKDA (3): it is faster and more accurate where both apply

        def chunk_kda_verifier(self, *args, **kwargs):
            return _verify(*args, **kwargs)

        def chunk_kda(self, *args, **kwargs):
            return _run(*args, **kwargs)

    _register(_chunk_kda)(TesseraKDABackend)
    REGISTERED = True
