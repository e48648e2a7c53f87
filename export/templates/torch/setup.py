# setup.py — builds csrc/tessera_@@CNAME@@.cpp, the C ABI library that tessera exported
# (kernel images embedded, the CUDA driver loaded with dlopen at the first call), into
# the package as a plain shared library, which tessera_@@CNAME@@/_library.py loads with
# ctypes. Building needs a C++17 compiler and the driver API header cuda.h only: no GPU,
# no CUDA runtime, no torch. cuda.h is looked for in $TESSERA_CUDA_INCLUDE, $CUDA_HOME,
# $CUDA_PATH, /usr/local/cuda, the nvidia-cuda-runtime and triton wheels, /usr/include.
import glob
import os
import sys

from setuptools import Extension, setup


def cuda_include():
    dirs = [os.environ.get("TESSERA_CUDA_INCLUDE", "")]
    dirs += [os.path.join(os.environ[v], "include") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    dirs += ["/usr/local/cuda/include"] + sorted(glob.glob("/usr/local/cuda-*/include"), reverse=True)
    for p in sys.path:
        for sub in ("nvidia/cuda_runtime/include", "nvidia/cu13/include", "nvidia/cu12/include",
                    "triton/backends/nvidia/include"):
            dirs.append(os.path.join(p, sub))
    dirs.append("/usr/include")
    for d in dirs:
        if d and os.path.isfile(os.path.join(d, "cuda.h")):
            return d
    sys.exit("tessera-@@DIST@@: cuda.h (the CUDA driver API header) was not found in " + ", ".join(d for d in dirs if d)
             + ". Install the CUDA toolkit or set TESSERA_CUDA_INCLUDE to the folder that holds cuda.h.")


library = Extension(
    "tessera_@@CNAME@@._tessera_@@CNAME@@",
    sources=["csrc/tessera_@@CNAME@@.cpp"],
    include_dirs=["csrc", cuda_include()],
    extra_compile_args=["-std=c++17", "-O2"],
    libraries=["dl"],
    language="c++",
)

setup(ext_modules=[library])
