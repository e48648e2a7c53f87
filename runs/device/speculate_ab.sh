#!/usr/bin/env bash
# runs/device/speculate_ab.sh — what the speculative compiler (agent/speculator.h)
# gives: each operator optimized twice from an empty compile cache and a fresh
# database, speculator off then on, same seed; prints wall time, busy fraction,
# compile wait and cache hits. Run on the device from the repository root with a
# build packed by runs/device/pack.sh (.carry/ or $CARRY); logs go to $OUT.
#   runs/device/speculate_ab.sh rmsnorm:120 gemm:60 [GPUS]
set -uo pipefail
carry=${CARRY:-.carry}
out=${OUT:-/tmp/out}
mkdir -p "$out"
gpus=0
args=()
for a in "$@"; do [[ $a == *:* ]] && args+=("$a") || gpus=$a; done
export TESSERA_SOURCE=$PWD
for spec in "${args[@]}"; do
  op=${spec%%:*}; n=${spec#*:}
  for mode in 0 1; do
    tag=$op-spec$mode-g${gpus//,/}
    rm -rf "/tmp/cache-$tag"
    t0=$(date +%s.%N)
    TESSERA_SPECULATE=$mode TESSERA_CACHE=/tmp/cache-$tag "$carry/tessera" optimize "$op" --budget "$n" --seed 7 \
      --gpus "$gpus" --db "$out/$tag.db" >"$out/$tag.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "== $tag rc $rc wall $(python3 -c "print(round($t1-$t0,1))") s"
    grep -E "candidates in|^GPU [0-9]|^compiler:|^best:" "$out/$tag.log"
  done
done
