"""tessera_@@CNAME@@/_library.py — the C ABI library (built from csrc/ at install), over ctypes.

The library loads the CUDA driver (libcuda.so.1) itself at its first launch, so this
module imports on machines without a GPU. Its four functions: scratch_bytes, launch,
error and candidate (tessera's docs/export.md). Error codes: 1 no GPU or driver, 2 a bad
argument, 3 a CUDA error, 4 no kernel image for this GPU.
"""
import ctypes
import glob
import os

import torch

_here = os.path.dirname(os.path.abspath(__file__))
_found = sorted(glob.glob(os.path.join(_here, "_tessera_@@CNAME@@*.so")))
if not _found:
    raise ImportError("tessera_@@CNAME@@: the C library (_tessera_@@CNAME@@*.so) is not in " + _here
                      + ": install the package with pip (pip install <export>/torch), which builds it")
_dll = ctypes.CDLL(_found[0])


class Args(ctypes.Structure):
    """tessera_@@CNAME@@_args: a device pointer per spec tensor, the shape symbols, the scratch pointer."""
    _fields_ = [
@@FIELDS@@
        ("scratch", ctypes.c_uint64),
    ]


_dll.tessera_@@CNAME@@_scratch_bytes.argtypes = [ctypes.POINTER(Args)]
_dll.tessera_@@CNAME@@_scratch_bytes.restype = ctypes.c_size_t
_dll.tessera_@@CNAME@@_launch.argtypes = [ctypes.POINTER(Args), ctypes.c_void_p]
_dll.tessera_@@CNAME@@_launch.restype = ctypes.c_int
_dll.tessera_@@CNAME@@_error.argtypes = []
_dll.tessera_@@CNAME@@_error.restype = ctypes.c_char_p
_dll.tessera_@@CNAME@@_candidate.argtypes = [ctypes.POINTER(Args)]
_dll.tessera_@@CNAME@@_candidate.restype = ctypes.c_char_p

scratch_bytes = _dll.tessera_@@CNAME@@_scratch_bytes
_launch = _dll.tessera_@@CNAME@@_launch
_kinds = {1: RuntimeError, 2: ValueError, 3: RuntimeError, 4: RuntimeError}
_what = {1: "no GPU or CUDA driver", 2: "bad argument", 3: "CUDA error", 4: "no kernel image for this GPU"}

try:
    _raw_stream = torch._C._cuda_getCurrentRawStream  # the current stream's handle, without a Stream object
except AttributeError:  # pragma: no cover - other torch builds
    def _raw_stream(index):
        return torch.cuda.current_stream(index).cuda_stream


def error_text(code):
    raw = _dll.tessera_@@CNAME@@_error()
    return "tessera::@@CNAME@@: " + _what.get(code, "error %d" % code) + ": " + (raw.decode() if raw else "")


def launch_raw(args, stream):
    """Enqueues the kernels on `stream` (a CUstream handle) in the current context; returns the code."""
    return _launch(ctypes.byref(args), stream)


_current_device = torch.cuda.current_device
_byref = ctypes.byref


def launch(args, device):
    """Enqueues on the current stream of `device` (a CUDA torch.device); raises on an error."""
    current = _current_device()
    index = device.index
    if index is not None and index != current:
        with torch.cuda.device(index):
            code = _launch(_byref(args), _raw_stream(index))
    else:
        code = _launch(_byref(args), _raw_stream(current))
    if code:
        raise _kinds.get(code, RuntimeError)(error_text(code))


def candidate(@@SYMBOL_PARAMS@@):
    a = Args()
@@SET_SYMBOLS@@
    name = _dll.tessera_@@CNAME@@_candidate(ctypes.byref(a))
    return name.decode() if name else None
