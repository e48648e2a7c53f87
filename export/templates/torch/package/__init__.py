"""tessera_@@CNAME@@ — tessera's @@OP@@ kernel as the PyTorch operator torch.ops.tessera.@@CNAME@@.

Exported by tessera (commit @@COMMIT@@, @@CREATED@@); candidates @@CANDIDATES@@.

    @@CNAME@@(@@INPUTS@@) -> @@OUTPUTS@@

runs on torch.cuda.current_stream(), is capturable in a CUDA graph and opaque to
torch.compile. The shape symbols are read from the inputs; the spec's scalars are fixed
in the kernels (see scalars()). Importing this package without a GPU works; calling the
operator then says that there is none.
"""
import json as _json
import os as _os

from ._op import OP, check, scalars, FIXED  # noqa: F401  (registers torch.ops.tessera.@@CNAME@@)
from . import _library

__version__ = "@@VERSION@@"

import torch as _torch

@@CNAME@@ = _torch.ops.tessera.@@CNAME@@


def candidate(@@SYMBOL_PARAMS@@):
    """The packed candidate ("c42") that serves a call with these shape symbols."""
    return _library.candidate(@@SYMBOL_ARGS@@)


def manifest():
    """The export's manifest.json: operator, spec hash, candidates and their measured figures."""
    with open(_os.path.join(_os.path.dirname(__file__), "manifest.json")) as f:
        return _json.load(f)
@@FLA_IMPORT@@
