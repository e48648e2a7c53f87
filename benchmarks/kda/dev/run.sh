#!/bin/bash
# benchmarks/kda/dev/run.sh — run a kda dev harness binary (built here, carried in
# benchmarks/kda/dev/bin) on the GPU machine; the log also goes to $OUT.
set -u
cd "$(dirname "$0")/../../.."
BIN=benchmarks/kda/dev/bin/${1:-harness}
shift || true
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
$BIN benchmarks/kda/dev/bin/vectors "$@" 2>&1 | tee ${OUT:-/tmp}/harness.log
