#!/usr/bin/env bash
# benchmarks/flash_attention/flashinfer_carry.sh — FlashInfer for peers.py on the GPU machine,
# which can install nothing: builds, from PyPI, one archive that the device `run` carries.
#   benchmarks/flash_attention/flashinfer_carry.sh            # -> .fi/flashinfer-0.6.6-sm90a.tar.xz (4.6 MB)
# What is in it (unpacked, it is a folder to put on PYTHONPATH):
#   flashinfer-python 0.6.6 (its JIT sources trimmed to csrc, include, cutlass/include,
#   cutlass/tools/util/include, spdlog/include) and apache-tvm-ffi 0.1.9 for cp312 (the only
#   dependency the machine lacks that the prefill path imports; cudnn-frontend and cutlass-dsl
#   are not needed), plus FlashInfer's FA3 (sm90) batch prefill modules for bf16, int32
#   indptr, head dims $FI_HEAD_DIMS (default 64 128), no RoPE/window/soft cap, built HERE
#   with nvcc for sm_90a and placed as AOT modules (flashinfer/data/aot/<uri>/<uri>.so), so
#   that BatchPrefillWithRaggedKVCacheWrapper (backend auto = fa3 on an H200) loads them
#   without compiling. Causal and not share a module (the mask is a run-time argument); GQA
#   too. Any other module (backend fa2, other dtypes) is JIT-compiled there from the carried
#   sources with the machine's nvcc on first use (minutes). 0.6.6 uses TVM-FFI, not torch's
#   C++ extension ABI: the modules do not depend on the torch build (they need libcudart.so.13,
#   which torch has loaded, and tvm_ffi). Checked here (2026-12-04, no GPU) with Python 3.12
#   and torch 2.11.0+cu130 from PyPI: the unpacked archive imports, peers.py --dry-run says
#   "2 prebuilt module(s) (head dims 64, 128)", tvm_ffi loads both modules (plan, ragged_run).
# On the GPU machine (carry .fi), before the python command:
#   python3 -c "import tarfile; tarfile.open('.fi/flashinfer-0.6.6-sm90a.tar.xz').extractall('/tmp/fi', filter='data')" &&
#   export PYTHONPATH=/tmp/fi${PYTHONPATH:+:$PYTHONPATH} FLASHINFER_WORKSPACE_BASE=/tmp/fi-ws || exit;
# Needs here: python3, pip reaching PyPI, nvcc 13.0 (CUDA_HOME or /usr/local/cuda), c++, and
# ~5 GB under $FI_WORK (default /tmp/fi-carry): a venv with torch 2.11 (PyPI's CUDA build,
# imported only to generate the sources; no GPU needed). The compile is the long part: 20
# nvcc jobs, ~1-2 min each, MAX_JOBS (default 1) at a time. Reruns reuse the venv and the
# built objects.
set -euo pipefail
FI_VERSION=0.6.6
TVM_FFI_VERSION=0.1.9
TORCH_VERSION=2.11.0
HEAD_DIMS="${FI_HEAD_DIMS:-64 128}"
work="$(realpath -m "${FI_WORK:-/tmp/fi-carry}")"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
name="flashinfer-$FI_VERSION-sm90a"
out="$repo/.fi/$name.tar.xz"
mkdir -p "$work/wheels" "$repo/.fi"
grep -qx '/.fi/' "$repo/.git/info/exclude" 2>/dev/null || echo '/.fi/' >> "$repo/.git/info/exclude"

echo "== wheels for the GPU machine (cp312): flashinfer-python $FI_VERSION, apache-tvm-ffi $TVM_FFI_VERSION"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$work/wheels" "flashinfer-python==$FI_VERSION" "apache-tvm-ffi==$TVM_FFI_VERSION"

py="$work/venv/bin/python"
if ! "$py" -c "import torch, flashinfer, tvm_ffi" 2>/dev/null; then
  echo "== build venv $work/venv: torch $TORCH_VERSION (to generate the sources), flashinfer, tvm-ffi"
  python3 -m venv "$work/venv"
  "$py" -m pip install -q "torch==$TORCH_VERSION" numpy ninja packaging click einops requests tabulate tqdm nvidia-ml-py
  "$py" -m pip install -q --no-deps "apache-tvm-ffi==$TVM_FFI_VERSION" "flashinfer-python==$FI_VERSION"
fi

echo "== FA3 batch prefill modules, bf16, head dims $HEAD_DIMS, sm_90a (MAX_JOBS ${MAX_JOBS:-1})"
FLASHINFER_WORKSPACE_BASE="$work" FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS="${MAX_JOBS:-1}" \
  "$py" - "$work/modules.txt" $HEAD_DIMS <<'EOF'
import sys, time, torch
from flashinfer.jit.attention.modules import gen_batch_prefill_module
from flashinfer.prefill import get_batch_prefill_uri
lines = []
for d in map(int, sys.argv[2:]):
    # the arguments BatchPrefillWithRaggedKVCacheWrapper.plan passes for bf16 q/kv/o, int32 indptr,
    # head_dim_qk = head_dim_vo = d, pos_encoding NONE, no sliding window, no soft cap, no fp16 qk
    args = ("fa3", torch.bfloat16, torch.bfloat16, torch.bfloat16, torch.int32, d, d, 0, False, False, False)
    spec = gen_batch_prefill_module(*args)
    assert spec.name == get_batch_prefill_uri(*args)
    t = time.time()
    spec.build(verbose=False)
    so = spec.jit_library_path if hasattr(spec, "jit_library_path") else spec.get_library_path()
    print(f"built {spec.name} in {time.time() - t:.0f} s", flush=True)
    lines.append(f"{spec.name} {so}")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
EOF

echo "== staging $work/site"
rm -rf "$work/site" && mkdir -p "$work/site"
for w in "$work"/wheels/flashinfer_python-"$FI_VERSION"-*.whl "$work"/wheels/apache_tvm_ffi-"$TVM_FFI_VERSION"-cp312-*.whl; do
  python3 -m zipfile -e "$w" "$work/site"
done
data="$work/site/flashinfer/data"
rm -rf "$data/cutlass/examples" "$data/cutlass/python" "$data/cutlass/test" "$data/spdlog/scripts"
find "$data/cutlass/tools" -mindepth 1 -maxdepth 1 ! -name util -exec rm -rf {} +
find "$data/cutlass/tools/util" -mindepth 1 -maxdepth 1 ! -name include -exec rm -rf {} +
while read -r uri so; do
  mkdir -p "$data/aot/$uri"
  cp "$so" "$data/aot/$uri/$uri.so"
  strip --strip-debug "$data/aot/$uri/$uri.so" 2>/dev/null || true
done < "$work/modules.txt"

echo "== check: the staged flashinfer finds its AOT modules (venv tvm_ffi: the staged one is cp312)"
FLASHINFER_WORKSPACE_BASE="$work/check" FLASHINFER_CUDA_ARCH_LIST=9.0a "$py" - "$work/site" $HEAD_DIMS <<'EOF'
import sys, subprocess, torch, tvm_ffi  # noqa: F401 (tvm_ffi from the venv)
sys.path.insert(0, sys.argv[1])
import flashinfer
from flashinfer.jit import env
from flashinfer.jit.attention.modules import gen_batch_prefill_module
assert flashinfer.__file__.startswith(sys.argv[1]), flashinfer.__file__
print("flashinfer", flashinfer.__version__, "AOT dir", env.FLASHINFER_AOT_DIR)
for d in map(int, sys.argv[2:]):
    spec = gen_batch_prefill_module("fa3", torch.bfloat16, torch.bfloat16, torch.bfloat16, torch.int32, d, d, 0, False, False, False)
    assert spec.is_aot, f"no AOT module for head dim {d}: {spec.aot_path}"
    need = subprocess.run(["readelf", "-d", str(spec.aot_path)], capture_output=True, text=True).stdout
    libs = [l.split("[")[1].rstrip("]") for l in need.splitlines() if "(NEEDED)" in l]
    print(f"head dim {d}: {spec.aot_path.name} ({spec.aot_path.stat().st_size >> 10} KiB), needs {', '.join(libs)}")
EOF

echo "== packing $out"
rm -f "$out"
tar -C "$work/site" --exclude=__pycache__ --owner=0 --group=0 -cf - . | xz -T1 -6 > "$out"
ls -la "$out"
echo "carry .fi; begin the device command with:"
echo "python3 -c \"import tarfile; tarfile.open('.fi/$name.tar.xz').extractall('/tmp/fi', filter='data')\" && export PYTHONPATH=/tmp/fi\${PYTHONPATH:+:\$PYTHONPATH} FLASHINFER_WORKSPACE_BASE=/tmp/fi-ws || exit;"
