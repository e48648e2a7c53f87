#!/bin/bash
# benchmarks/kda/dev/run_pipe.sh — the KC_PIPE measurements in one device call. First, here:
#   git apply benchmarks/kda/dev/pipe_experiment.patch   (and revert it once measured)
#   the harness build (NOTES.md, "Reproducing"), carrying benchmarks/kda/dev/bin
# then on the device: bash benchmarks/kda/dev/run_pipe.sh. Each run is cut at 60 s (a hang, as
# the patch's first version had, shows as rc 124 with the log up to it: line-buffered output).
cd "$(dirname "$0")/../../.."
B=benchmarks/kda/dev/bin
one() {
  local name=$1
  shift
  env "$@" timeout 60 stdbuf -oL -eL "$B/harness" "$B/vectors" > "$OUT/pipe_$name.log" 2>&1
  echo "== $name ($*) rc=$?"
  grep -E "over 0.3|^h(96|64)_1x8192|RC PIPE|geomean" "$OUT/pipe_$name.log" | head -20
}
one beside                                   # h64 shapes (64 chains <= 66) beside, h96 after
one after KDA_PIPE_MAX=0                     # every shape one kernel after the other: the flag wait's own cost
one lead KDA_PIPE_MAX=100 KDA_PIPE_LEAD=auto # h96 too, with a head start (auto: 0.67 on h96_1x8192)
one lead55 KDA_PIPE_MAX=100 KDA_PIPE_LEAD=0.55
one lead45 KDA_PIPE_MAX=100 KDA_PIPE_LEAD=0.45
