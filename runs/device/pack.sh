#!/usr/bin/env bash
# runs/device/pack.sh — gathers what a GPU machine needs to run a tessera built
# here: the binary (stripped) and the shared libraries that such a machine may
# lack (found next to the binary through its $ORIGIN run path).
# Usage: runs/device/pack.sh [build-dir] [out-dir] [tests]   (defaults: build .carry all)
#   tests: all (every test binary), gpu (the *gpu_tests binaries only: what check.sh gpu-tests
#   runs; keeps the carry small, the device tool takes 64 MB with the tracked tree), none
set -euo pipefail
build=${1:-build}
out=${2:-.carry}
tests=${3:-all}
case $tests in all|gpu|none) ;; *) echo "pack.sh: tests must be all, gpu or none, not '$tests'" >&2; exit 2 ;; esac
mkdir -p "$out"
cp "$build/tessera" "$out/tessera"
strip "$out/tessera"
for lib in libmuparser.so.2 libfmt.so.9; do
  path=$(ldd "$build/tessera" | awk -v l="$lib" '$1==l {print $3}')
  [ -n "$path" ] && cp -L "$path" "$out/"
done
for t in "$build"/tests/*/*_tests "$build"/tests/*_tests; do
  [ -f "$t" ] || continue
  case $tests in none) continue ;; gpu) case "$(basename "$t")" in *gpu_tests) ;; *) continue ;; esac ;; esac
  cp "$t" "$out/" && strip "$out/$(basename "$t")"
done
du -sh "$out"
