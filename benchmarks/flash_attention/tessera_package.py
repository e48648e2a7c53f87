"""benchmarks/flash_attention/tessera_package.py — tessera's exported torch package as a peer.

`tessera export OP --format torch --out DIR` writes DIR/torch, a pip-installable package
(module tessera_<op>, a ctypes binding of the C library of DIR/cpp). load() installs it
into a fresh temporary folder, offline (pip --no-index --no-deps --no-build-isolation:
the GPU machine has torch and setuptools but no network), and imports it from there, so
that no older install elsewhere on sys.path can answer instead. Where pip cannot build it,
load() compiles the library itself (c++ and cuda.h, as setup.py does) beside a copy of the
package's Python files. Nothing here knows the operator's kernels: the call is built from
the package's own check() signature (inputs in spec order, then the symbols that no input
shape gives), and candidate() names what served it.
"""
import atexit
import glob
import importlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile


def cuda_include():
    """The folder holding cuda.h, looked for where the package's setup.py looks; None if none."""
    dirs = [os.environ.get("TESSERA_CUDA_INCLUDE", "")]
    dirs += [os.path.join(os.environ[v], "include") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    dirs += ["/usr/local/cuda/include"] + sorted(glob.glob("/usr/local/cuda-*/include"), reverse=True)
    for p in sys.path:
        for sub in ("nvidia/cuda_runtime/include", "nvidia/cu13/include", "nvidia/cu12/include",
                    "triton/backends/nvidia/include"):
            dirs.append(os.path.join(p, sub))
    dirs.append("/usr/include")
    return next((d for d in dirs if d and os.path.isfile(os.path.join(d, "cuda.h"))), None)


def _pip_install(torch_dir, target):
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-build-isolation",
           "--no-cache-dir", "--target", target, torch_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0, (r.stdout + r.stderr)[-1500:]


def _direct_build(torch_dir, module, target):
    """The package's Python files copied to target, its C library compiled beside them."""
    inc = cuda_include()
    if inc is None:
        return False, "cuda.h not found (set TESSERA_CUDA_INCLUDE)"
    shutil.copytree(os.path.join(torch_dir, module), os.path.join(target, module), dirs_exist_ok=True)
    csrc = os.path.join(torch_dir, "csrc")
    lib = os.path.join(target, module, "_" + module + ".so")
    cmd = [os.environ.get("CXX", "c++"), "-std=c++17", "-O2", "-shared", "-fPIC", "-I", csrc, "-I", inc,
           os.path.join(csrc, module + ".cpp"), "-ldl", "-o", lib]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0, (r.stdout + r.stderr)[-1500:]


class TesseraPackage:
    """The exported operator: call(tensors, symbols) runs it, candidate(symbols) names the server."""

    def __init__(self, export_dir, target=None):
        with open(os.path.join(export_dir, "manifest.json")) as f:
            self.manifest = json.load(f)
        self.op = self.manifest["operator"]
        self.module_name = "tessera_" + self.op.replace("-", "_")
        torch_dir = os.path.join(export_dir, "torch")
        if not os.path.isfile(os.path.join(torch_dir, "setup.py")):
            raise RuntimeError(export_dir + " has no torch/setup.py: export it with --format torch")
        if target is None:  # (removed at exit: the library stays loaded until then)
            target = tempfile.mkdtemp(prefix="tessera-peer-")
            atexit.register(shutil.rmtree, target, True)
        self.target = target
        ok, log = _pip_install(torch_dir, self.target)
        self.installed_by = "pip install --no-index --no-build-isolation --target " + self.target
        if not ok:
            ok, log2 = _direct_build(torch_dir, self.module_name, self.target)
            self.installed_by = "c++ build into " + self.target + " (pip failed: " + log.strip()[-300:] + ")"
            if not ok:
                raise RuntimeError("could not install " + torch_dir + ": pip said " + log + "; c++ said " + log2)
        if self.module_name in sys.modules:
            raise RuntimeError(self.module_name + " was already imported: load one export per process")
        sys.path.insert(0, self.target)
        self.module = importlib.import_module(self.module_name)
        where = os.path.dirname(os.path.abspath(self.module.__file__))
        if not where.startswith(os.path.abspath(self.target)):
            raise RuntimeError(self.module_name + " imported from " + where + ", not from " + self.target)
        self.params = list(inspect.signature(self.module.check).parameters)

    def call(self, tensors, symbols):
        """The operator on `tensors` (name -> tensor) with `symbols` (name -> int): its outputs, in spec order."""
        args = [tensors[p] if p in tensors else int(symbols[p]) for p in self.params]
        return getattr(self.module, self.op.replace("-", "_"))(*args)

    def candidate(self, symbols):
        return self.module.candidate(**{k: int(v) for k, v in symbols.items()})

    def figure_ms(self, candidate, shape_name):
        """The manifest's measured median of `candidate` at benchmark shape `shape_name` (tessera's judge), or None."""
        for c in self.manifest.get("candidates", []):
            if c.get("name") == candidate:
                for s in c.get("figures", {}).get("shapes", []):
                    if s.get("shape") == shape_name:
                        return s.get("median_ms")
        return None

    def describe(self):
        names = [c.get("name") for c in self.manifest.get("candidates", [])]
        return {"operator": self.op, "candidates": names, "tessera_commit": self.manifest.get("tessera_commit"),
                "spec_hash": self.manifest.get("spec_hash"), "archs": self.manifest.get("archs"),
                "installed_by": self.installed_by}
