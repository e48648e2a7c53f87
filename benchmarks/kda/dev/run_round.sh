#!/bin/bash
# benchmarks/kda/dev/run_round.sh — one device call for a development round, shorter
# than run_dev.sh: run_final.sh (harness, memcheck, racecheck), the KC_PROFILE build with
# few repetitions, and ncu (a few sections) on one launch of the first variant's two
# kernels on h96_1x8192. Logs go to $OUT.
cd "$(dirname "$0")/../../.."
B=benchmarks/kda/dev/bin
bash benchmarks/kda/dev/run_final.sh | tail -48
REPS=3 timeout 30 $B/harness_prof > $OUT/harness_prof.log 2>&1; echo "prof rc=$?"
grep -E "profile|intra:|state:" $OUT/harness_prof.log | head -4
KDA_ONE=1 timeout 60 ncu --kernel-name regex:"${NCU_KERNELS:-kda_chunk_(intra|state)_b128w8p2}" --launch-count 2 \
  --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  --section Occupancy $B/harness > $OUT/ncu.txt 2>&1; echo "ncu rc=$?"
grep -E "kda_chunk|Duration|Throughput|Issued Ipc|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers|Stall" $OUT/ncu.txt | head -40
