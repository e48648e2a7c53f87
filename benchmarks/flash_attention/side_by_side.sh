#!/usr/bin/env bash
# benchmarks/flash_attention/side_by_side.sh — issue 31's peers side by side on a GPU machine:
# exports flash_attention's champion and each benchmark shape's champion (--per-shape,
# format torch) from a database with the given tessera binary, then runs peers.py with the
# export (tessera, SDPA cuDNN, SDPA FlashAttention-2, FlashInfer where it imports) on every
# benchmark shape, writing the results as JSON to OUT_JSON.
# FlashInfer on the GPU machine: carry .fi, built by flashinfer_carry.sh, whose header gives the
# command's prefix (unpack, PYTHONPATH).
#   benchmarks/flash_attention/side_by_side.sh TESSERA_BIN DB EXPORT_DIR OUT_JSON [peers.py flags...]
# DB may be gzipped (runs/recorded/*.db.gz): it is unpacked into a temporary file first.
# EXPORT_DIR is written anew: an earlier export there is removed, anything else is refused.
# $PYTHON (default python3) runs peers.py; it needs torch, setuptools and pip (no network).
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
bin="$(realpath "$1")"
db="$(realpath "$2")"
dir="$(realpath -m "$3")"
out="$(realpath -m "$4")"
shift 4
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
case "$db" in
  *.gz) gunzip -c "$db" > "$tmp/tessera.db" && db="$tmp/tessera.db" ;;
esac
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
  if [ ! -f "$dir/manifest.json" ]; then
    echo "side_by_side.sh: $dir holds files and no manifest.json (no export): refusing to overwrite it" >&2
    exit 2
  fi
  rm -rf "$dir"
fi
echo "== tessera export flash_attention --per-shape --format torch --out $dir --db $db"
(cd "$repo" && TESSERA_TARGETS="$repo/targets" "$bin" export flash_attention --per-shape --format torch \
  --out "$dir" --db "$db")
echo "== peers.py --tessera $dir --json $out $*"
PYTHONUNBUFFERED=1 "${PYTHON:-python3}" "$here/peers.py" --tessera "$dir" --json "$out" "$@"
