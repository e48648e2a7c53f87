# targets/kda/reference.py — kda's math in PyTorch (../shared/OPERATORS.md, "kda"), for the
# exported formats that carry a Python reference (`tessera export --format flashinfer`:
# the definition's `reference`). Inputs in spec order, the spec's scalars as keywords,
# outputs in spec order. The recurrence one token at a time, as reference.cu does, in
# float64 (all heads of a sequence at once):
#   q, k <- x / sqrt(sum(x^2) + 1e-6); beta <- sigmoid(beta_raw)
#   g <- lower_bound * sigmoid(exp(A_log[h]) * (g_raw + dt_bias[h]))
#   S <- Diag(exp(g_t)) S;  S <- S + beta_t k_t (v_t - S^T k_t)^T;  o_t = S^T (scale q_t)
# with S [K, V] per head; the states h0 and ht are V-first, [NSEQ, H, V, K].
import torch


def reference(q, k, v, g, beta, A_log, dt_bias, h0, cu_seqlens, *, scale, lower_bound):
    o, ht = reference_f64(q, k, v, g, beta, A_log, dt_bias, h0, cu_seqlens, scale=scale, lower_bound=lower_bound)
    return o.to(torch.bfloat16), ht.to(torch.float32)


def reference_f64(q, k, v, g, beta, A_log, dt_bias, h0, cu_seqlens, *, scale, lower_bound):
    """o and ht in float64 (for measuring a kernel's error against the math itself)."""
    f = torch.float64
    T, H, K = q.shape
    V = v.shape[2]
    q64, k64, v64 = q.to(f), k.to(f), v.to(f)
    q64 = q64 / torch.sqrt((q64 * q64).sum(-1, keepdim=True) + 1e-6)
    k64 = k64 / torch.sqrt((k64 * k64).sum(-1, keepdim=True) + 1e-6)
    b = torch.sigmoid(beta.to(f))                                                   # [T, H]
    decay = torch.exp(lower_bound * torch.sigmoid(
        torch.exp(A_log.to(f))[None, :, None] * (g.to(f) + dt_bias.to(f)[None])))  # [T, H, K]
    o = torch.zeros(T, H, V, dtype=f, device=q.device)
    ht = torch.empty(h0.shape, dtype=f, device=q.device)
    bounds = cu_seqlens.tolist()
    for n in range(len(bounds) - 1):
        S = h0[n].to(f).transpose(-1, -2).contiguous()                              # [H, K, V]
        for t in range(bounds[n], bounds[n + 1]):
            S = S * decay[t][:, :, None]
            kt = k64[t]
            u = v64[t] - torch.einsum("hk,hkv->hv", kt, S)
            S = S + (b[t][:, None] * kt)[:, :, None] * u[:, None, :]
            o[t] = scale * torch.einsum("hk,hkv->hv", q64[t], S)
        ht[n] = S.transpose(-1, -2)
    return o, ht
