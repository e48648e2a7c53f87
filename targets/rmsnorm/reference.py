# targets/rmsnorm/reference.py — rmsnorm's math in PyTorch, for the exported formats that
# carry a Python reference (`tessera export --format flashinfer`: the definition's
# `reference`). Inputs in spec order, the spec's scalars as keywords, outputs in spec
# order; float64 inside, the outputs in the spec's dtypes. tessera itself checks against
# reference.cu; this file says the same in Python.
import torch


def reference(x, w, *, eps):
    x64 = x.to(torch.float64)
    y = x64 * torch.rsqrt(x64.pow(2).mean(dim=-1, keepdim=True) + eps) * w.to(torch.float64)
    return y.to(torch.bfloat16)
