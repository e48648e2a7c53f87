#!/usr/bin/env bash
# benchmarks/export/run_all.sh — every check of issue 29's "done when" on a GPU machine,
# in one command: the wheels of .whl/ installed under /tmp/site (FLA, flashinfer-bench
# and what the machine lacks of their needs), the two exported torch packages installed
# with pip, then check_torch.py (rmsnorm, kda), check_fla.py (kda) and
# run_flashinfer.sh (kda, rmsnorm), each writing OUT/<step>.json, their output together
# in OUT/all.log (at most 6 files: what a device call brings back).
#   benchmarks/export/run_all.sh KDA_DIR RMSNORM_DIR OUT TESSERA_BIN KDA_DB RMSNORM_DB [steps]
# steps (default all): any of torch_rmsnorm torch_kda fla flashinfer_kda flashinfer_rmsnorm
set -uo pipefail
kda="$1"; rms="$2"; out="$3"; bin="$4"; kdb="$5"; rdb="$6"; shift 6
steps="${*:-torch_rmsnorm torch_kda fla flashinfer_kda flashinfer_rmsnorm}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site "$kda/torch" "$rms/torch" || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
rc=0
for s in $steps; do
  case "$s" in
    torch_rmsnorm) cmd=(python3 "$here/check_torch.py" --export "$rms" --tessera "$bin" --db "$rdb" --out "$out/$s.json") ;;
    torch_kda) cmd=(python3 "$here/check_torch.py" --export "$kda" --tessera "$bin" --db "$kdb" --out "$out/$s.json") ;;
    fla) cmd=(python3 "$here/check_fla.py" --export "$kda" --tessera "$bin" --db "$kdb" --tessera-medians "$out/torch_kda.json" --out "$out/$s.json") ;;
    flashinfer_kda) cmd=("$here/run_flashinfer.sh" "$kda" "$out/$s.json" --warmup-runs 3 --iterations 20 --num-trials 1) ;;
    flashinfer_rmsnorm) cmd=("$here/run_flashinfer.sh" "$rms" "$out/$s.json") ;;
    *) echo "unknown step $s"; exit 2 ;;
  esac
  echo "== $s: ${cmd[*]}"
  echo "== $s: ${cmd[*]}" >> "$out/all.log"
  "${cmd[@]}" > "/tmp/$s.log" 2>&1 || { echo "== $s FAILED (rc $?)"; rc=1; }
  cat "/tmp/$s.log" >> "$out/all.log"
  tail -5 "/tmp/$s.log"
done
exit $rc
