#!/usr/bin/env bash
# runs/slurm/submit.sh — submits the nightly array (one task per node) and the
# merge that waits for it. Usage:
#   runs/slurm/submit.sh NODES [sbatch options for the array, e.g. --gpus-per-node=8 -p gpu]
# with TESSERA_JOB (or TESSERA_ARGS), and optionally TESSERA_BIN, TESSERA_SHARDS,
# TESSERA_HISTORY, TESSERA_MERGED, TESSERA_REPORT in the environment (see the
# two .sbatch files). Prints the two job ids.
set -euo pipefail
if [ $# -lt 1 ]; then sed -n '2,8p' "$0"; exit 2; fi
nodes=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
export TESSERA_SHARDS=${TESSERA_SHARDS:-runs/shards/$(date -u +%Y%m%dT%H%M%S)}
array=$(sbatch --parsable --export=ALL --array="0-$((nodes - 1))" "$@" "$here/tessera-array.sbatch")
merge=$(sbatch --parsable --export=ALL --dependency="afterany:${array%%;*}" "$here/merge.sbatch")
echo "array job ${array%%;*} ($nodes tasks, shards in $TESSERA_SHARDS), merge job $merge"
