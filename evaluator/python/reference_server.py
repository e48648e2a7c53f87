# evaluator/python/reference_server.py — tessera's reference process: runs a FlashInfer
# Trace definition's PyTorch `run` for the judge, in float64, and times the baseline.
#
# Started by evaluator/python_reference.cpp (which embeds this file) as
#   PYTHON -u reference_server.py --device cuda:N|cpu
# Requests arrive on fd 3, replies leave on fd 4, one JSON object per line each way;
# stdout and stderr belong to the reference code (the client passes them on).
#   {"op":"load","definition":PATH,"baseline":PATH|null}
#       -> {"ok":true,"narrowing":[{"line":N,"text":"..."}]}
#   {"op":"reference","inputs":[...],"outputs":[{"name","shape"}],"out_dir":DIR,"as_written":BOOL}
#       -> {"ok":true,"outputs":[{"name","path","shape"[,"as_written_rel_l2","as_written_max_abs"]}],"seconds":S}
#   {"op":"time","inputs":[...],"l2_bytes":N,"min_samples":M,"max_samples":M,"target_rse":R,"max_seconds":S}
#       -> {"ok":true,"samples_ms":[...],"what":"..."}
# An input is {"name","kind":"tensor","dtype","shape","path"} (raw little-endian bytes,
# row-major), {"name","kind":"scalar","value"[,"dtype"]} or {"name","kind":"none"}.
# Any failure: {"ok":false,"error":"Type: message","traceback":"..."}; the server stays up.
# EOF on fd 3 ends it (exit 0). Needs only torch (no numpy).
import argparse
import ast
import ctypes
import json
import linecache
import math
import os
import sys
import time
import traceback
import types

import torch

DTYPES = {
    "bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
    "float64": torch.float64, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
}
NATIVE_WHAT = "the definition's reference at native precision (PyTorch)"
BASELINE_WHAT = "baseline.py's run"


# ---------------------------------------------------------------- float64 mode

def _widen(value):
    """A floating dtype (or a legacy tensor type name) narrower than float64 -> float64."""
    if isinstance(value, torch.dtype):
        return torch.float64 if value.is_floating_point else value
    if isinstance(value, str) and value.startswith("torch.") and value.endswith("Tensor"):
        for narrow in ("BFloat16Tensor", "HalfTensor", "FloatTensor"):
            if value.endswith("." + narrow):
                return value[: -len(narrow)] + "DoubleTensor"
    return value


class Float64Mode(torch.overrides.TorchFunctionMode):
    """Every floating dtype the code asks for is kept at float64: dtype arguments (keyword
    or positional) of any torch function or Tensor method, Tensor.float/half/bfloat16, and
    the default dtype of factories called without one."""

    NARROWING_METHODS = (torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16)

    def __enter__(self):
        self._default = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        return super().__enter__()

    def __exit__(self, *exc):
        torch.set_default_dtype(self._default)
        return super().__exit__(*exc)

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any(func is m for m in self.NARROWING_METHODS):
            return torch.Tensor.double(*args, **kwargs)
        args = tuple(_widen(a) for a in args)
        if "dtype" in kwargs:
            kwargs = dict(kwargs, dtype=_widen(kwargs["dtype"]))
        return func(*args, **kwargs)


# ---------------------------------------------------------------- narrowing casts (ast)

def _names_narrow_dtype(node):
    """torch.float32, torch.float, torch.bfloat16, ... (not float64/double), x.dtype or a
    variable named dtype. A bare `float` is Python's float, which torch reads as float64."""
    if isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Name) and node.id != "float":
        name = node.id
    else:
        return False
    if name == "dtype":
        return True  # some tensor's dtype: narrower than float64 when run as written
    return name.startswith(("float", "bfloat", "half")) and name not in ("float64", "double")


def _one_line(source, node, limit=100):
    text = " ".join((ast.get_source_segment(source, node) or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _narrowing_of_call(source, call):
    """(line, text) of the narrowing cast this call makes, or None."""
    func = call.func
    method = func.attr if isinstance(func, ast.Attribute) else None
    if method in ("float", "half", "bfloat16") and not call.args:
        return call.lineno, _one_line(source, call)
    if method == "type_as" or (method in ("to", "type") and any(_names_narrow_dtype(a) for a in call.args)):
        return call.lineno, _one_line(source, call)
    for kw in call.keywords:
        if kw.arg == "dtype" and _names_narrow_dtype(kw.value):
            callee = _one_line(source, func, 60)
            return kw.value.lineno, "%s(..., dtype=%s)" % (callee, _one_line(source, kw.value))
    return None


def narrowing_casts(source):
    """The narrowing casts a reference source makes, in line order."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            hit = _narrowing_of_call(source, node)
            if hit:
                found.append({"line": hit[0], "text": hit[1]})
    found.sort(key=lambda h: (h["line"], h["text"]))
    return found


# ---------------------------------------------------------------- loading

def exec_source(source, filename, module_name):
    """Executes `source` as a fresh module; tracebacks show its lines under `filename`."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def find_run(module, where):
    run = getattr(module, "run", None)
    if not callable(run):
        raise ValueError("%s defines no function run(...)" % where)
    return run


class Session:
    def __init__(self, device):
        self.device = torch.device(device)
        self.run = None          # the definition's reference
        self.baseline = None     # baseline.py's run, if any
        self.loads = 0

    def load(self, req):
        path = req["definition"]
        self.run = self.baseline = None  # a failed load leaves nothing loaded
        with open(path, encoding="utf-8") as f:
            definition = json.load(f)
        source = definition.get("reference")
        if not isinstance(source, str):
            raise ValueError("%s: field 'reference' is missing or not a string" % path)
        self.loads += 1
        module = exec_source(source, "%s:reference" % path, "tessera_reference_%d" % self.loads)
        self.run = find_run(module, "%s: field 'reference'" % path)
        self.baseline = None
        if req.get("baseline"):
            bpath = req["baseline"]
            with open(bpath, encoding="utf-8") as f:
                bsource = f.read()
            self.baseline = find_run(exec_source(bsource, bpath, "tessera_baseline_%d" % self.loads), bpath)
        return {"ok": True, "narrowing": narrowing_casts(source)}

    # ------------------------------------------------------------ inputs and outputs

    def read_inputs(self, specs, upcast):
        values = []
        for spec in specs:
            kind = spec.get("kind", "tensor")
            if kind == "none":
                values.append(None)
            elif kind == "scalar":
                values.append(scalar_value(spec))
            elif kind == "tensor":
                values.append(read_tensor(spec, self.device, upcast))
            else:
                raise ValueError("input %r: unknown kind %r (tensor, scalar or none)" % (spec.get("name"), kind))
        return values

    def require_run(self):
        if self.run is None:
            raise RuntimeError("no definition loaded (send {\"op\":\"load\"} first)")

    def reference(self, req):
        self.require_run()
        inputs = self.read_inputs(req["inputs"], upcast=True)
        wanted = req["outputs"]
        start = time.perf_counter()
        with torch.no_grad(), Float64Mode():
            got = match_outputs(self.run(*clone_all(inputs)), wanted)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        seconds = time.perf_counter() - start
        got = [t.detach().to("cpu", torch.float64).contiguous() for t in got]
        replies = []
        for spec, t in zip(wanted, got):
            path = os.path.join(req["out_dir"], spec["name"] + ".f64")
            write_raw(path, t)
            replies.append({"name": spec["name"], "path": path, "shape": list(t.shape)})
        if req.get("as_written"):
            with torch.no_grad():
                plain = match_outputs(self.run(*clone_all(inputs)), wanted)
            for reply, a, b in zip(replies, plain, got):
                reply.update(compare(a.detach().to("cpu", torch.float64), b))
        return {"ok": True, "outputs": replies, "seconds": seconds}

    def time(self, req):
        self.require_run()
        run, what = (self.baseline, BASELINE_WHAT) if self.baseline else (self.run, NATIVE_WHAT)
        inputs = self.read_inputs(req["inputs"], upcast=False)
        timer = CudaTimer(self.device, req) if self.device.type == "cuda" else CpuTimer()
        samples = measure(lambda: run(*inputs), timer, req)
        return {"ok": True, "samples_ms": samples, "what": what}


def scalar_value(spec):
    value = spec["value"]
    dtype = spec.get("dtype")
    if dtype in ("int8", "int16", "int32", "int64", "uint8"):
        return int(value)
    if dtype == "bool":
        return bool(value)
    return float(value) if dtype else value


def read_tensor(spec, device, upcast):
    name = spec.get("name")
    if spec.get("dtype") not in DTYPES:
        raise ValueError("input %r: unknown dtype %r (one of %s)" % (name, spec.get("dtype"), ", ".join(DTYPES)))
    dtype = DTYPES[spec["dtype"]]
    shape = [int(s) for s in spec["shape"]]
    numel = math.prod(shape) if hasattr(math, "prod") else _prod(shape)
    with open(spec["path"], "rb") as f:
        data = bytearray(f.read())
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(data) != numel * itemsize:
        raise ValueError("input %r: %s holds %d bytes, shape %s of %s needs %d"
                         % (name, spec["path"], len(data), shape, spec["dtype"], numel * itemsize))
    t = torch.frombuffer(data, dtype=dtype).reshape(shape) if numel else torch.empty(shape, dtype=dtype)
    if upcast and t.is_floating_point():
        t = t.to(torch.float64)
    return t.to(device)


def _prod(values):
    n = 1
    for v in values:
        n *= v
    return n


def clone_all(values):
    """Fresh copies, so that a run which writes into its inputs cannot change the next run's."""
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def match_outputs(result, wanted):
    """run's return as a list of tensors in the order of `wanted`, checked in count and shape."""
    names = [w["name"] for w in wanted]
    if isinstance(result, dict):
        missing = [n for n in names if n not in result]
        if missing:
            raise ValueError("run returned a dict without %s (it has %s)" % (missing, sorted(result)))
        result = [result[n] for n in names]
    elif isinstance(result, (tuple, list)):
        result = list(result)
    else:
        result = [result]
    if len(result) != len(wanted):
        raise ValueError("run returned %d output(s), the definition has %d (%s)"
                         % (len(result), len(wanted), ", ".join(names)))
    tensors = []
    for w, r in zip(wanted, result):
        t = r if isinstance(r, torch.Tensor) else torch.as_tensor(r)
        if list(t.shape) != [int(s) for s in w["shape"]]:
            raise ValueError("run's output %r has shape %s, the definition says %s"
                             % (w["name"], list(t.shape), list(w["shape"])))
        tensors.append(t)
    return tensors


def write_raw(path, t):
    """A contiguous CPU tensor's bytes (little-endian), without numpy."""
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        if t.numel():
            f.write(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))
    os.replace(tmp, path)


def _finite_or_none(x):
    return x if math.isfinite(x) else None


def compare(a, b):
    """As written (a) against the float64 run (b): relative L2 and max abs difference."""
    d = a - b
    diff = torch.linalg.vector_norm(d).item() if d.numel() else 0.0
    norm = torch.linalg.vector_norm(b).item() if b.numel() else 0.0
    rel = diff / norm if norm > 0 else (0.0 if diff == 0 else math.inf)
    max_abs = d.abs().max().item() if d.numel() else 0.0
    return {"as_written_rel_l2": _finite_or_none(rel), "as_written_max_abs": _finite_or_none(max_abs)}


# ---------------------------------------------------------------- timing

class CudaTimer:
    """CUDA events around each call, after zeroing a buffer of twice the L2 (a cold L2)."""

    def __init__(self, device, req):
        self.device = device
        self.flush = torch.empty(max(1, 2 * int(req.get("l2_bytes", 0))), dtype=torch.uint8, device=device)
        self.pending = []

    def sample(self, call):
        self.flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        self.pending.append((start, end))

    def collect(self):
        torch.cuda.synchronize(self.device)
        ms = [s.elapsed_time(e) for s, e in self.pending]
        self.pending = []
        return ms


class CpuTimer:
    """time.perf_counter around each call (no L2 flush): for tests on machines without a GPU."""

    def __init__(self):
        self.ms = []

    def sample(self, call):
        start = time.perf_counter()
        call()
        self.ms.append((time.perf_counter() - start) * 1e3)

    def collect(self):
        ms, self.ms = self.ms, []
        return ms


def relative_standard_error(samples):
    n = len(samples)
    if n < 2:
        return math.inf
    mean = sum(samples) / n
    var = sum((s - mean) ** 2 for s in samples) / (n - 1)
    return math.sqrt(var / n) / mean if mean > 0 else math.inf


def measure(call, timer, req):
    """2 warm-ups, then batches of 10 samples until the standard error of the mean is at
    most target_rse of the mean (and min_samples are in), max_samples, or max_seconds."""
    min_n, max_n = int(req.get("min_samples", 10)), int(req.get("max_samples", 200))
    target, max_s = float(req.get("target_rse", 0.01)), float(req.get("max_seconds", 1.0))
    begin = time.perf_counter()
    with torch.no_grad():
        for _ in range(2):
            call()
        timer.collect()
        samples = []
        while True:
            for _ in range(min(10, max_n - len(samples))):
                timer.sample(call)
                if time.perf_counter() - begin > max_s:
                    break
            samples += timer.collect()
            if len(samples) >= max_n or time.perf_counter() - begin > max_s:
                break
            if len(samples) >= min_n and relative_standard_error(samples) <= target:
                break
    return samples


# ---------------------------------------------------------------- the loop

def handle(session, req):
    op = req.get("op") if isinstance(req, dict) else None
    if op == "load":
        return session.load(req)
    if op == "reference":
        return session.reference(req)
    if op == "time":
        return session.time(req)
    raise ValueError("unknown op %r (load, reference or time)" % (op,))


def main():
    parser = argparse.ArgumentParser(description="tessera's float64 reference process")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    session = Session(args.device)
    requests = os.fdopen(3, "rb")
    replies = os.fdopen(4, "wb")
    for line in requests:
        if not line.strip():
            continue
        try:
            reply = handle(session, json.loads(line))
        except Exception as e:  # noqa: BLE001 — every failure goes back to the client
            reply = {"ok": False, "error": "%s: %s" % (type(e).__name__, e), "traceback": traceback.format_exc()}
        finally:
            if session.device.type == "cuda":
                torch.cuda.empty_cache()  # leave the GPU's memory to the judge between requests
        replies.write((json.dumps(reply) + "\n").encode("utf-8"))
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
