#!/usr/bin/env bash
# runs/device/pack.sh — gathers what a GPU machine needs to run a tessera built
# here: the binary (stripped) and the shared libraries that such a machine may
# lack (found next to the binary through its $ORIGIN run path).
# Usage: runs/device/pack.sh [build-dir] [out-dir]   (defaults: build .carry)
set -euo pipefail
build=${1:-build}
out=${2:-.carry}
mkdir -p "$out"
cp "$build/tessera" "$out/tessera"
strip "$out/tessera"
for lib in libmuparser.so.2 libfmt.so.9; do
  path=$(ldd "$build/tessera" | awk -v l="$lib" '$1==l {print $3}')
  [ -n "$path" ] && cp -L "$path" "$out/"
done
for t in "$build"/tests/*/*_tests "$build"/tests/*_tests; do
  [ -f "$t" ] && cp "$t" "$out/" && strip "$out/$(basename "$t")"
done
du -sh "$out"
