#!/bin/bash
# benchmarks/kda/dev/run_once.sh — the whole device round in one call, for a short
# device budget: harness (validation + timing of every variant), compute-sanitizer
# memcheck and racecheck (first two fast variants, small shapes), then the KC_PROFILE
# build with few repetitions. Logs go to $OUT; the summary is printed last.
cd "$(dirname "$0")/../../.."
B=benchmarks/kda/dev/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
SECONDS=0
timeout 100 $B/harness $B/vectors > $OUT/harness.log 2>&1; echo "harness rc=$? ${SECONDS}s"
KDA_SMALL=1 timeout 40 compute-sanitizer --tool memcheck --print-limit 5 $B/harness > $OUT/sanitizer_memcheck.log 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|Error' $OUT/sanitizer_memcheck.log | head -3) ${SECONDS}s"
KDA_SMALL=1 KDA_FAST_ONLY=1 timeout 45 compute-sanitizer --tool racecheck --print-limit 5 $B/harness > $OUT/sanitizer_racecheck.log 2>&1
echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|Error' $OUT/sanitizer_racecheck.log | head -3) ${SECONDS}s"
REPS=3 timeout 40 $B/harness_prof $B/vectors > $OUT/harness_prof.log 2>&1; echo "prof rc=$? ${SECONDS}s"
grep -E "profile|intra:|state:" $OUT/harness_prof.log | head -12
sed -n '/^validation/,$p' $OUT/harness.log
# NCU=1: ncu (warp states, scheduler, occupancy) on one launch of the first two variants'
# intra kernels (h96_1x8192); NCU_KERNELS overrides the kernel regex.
if [ -n "$NCU" ]; then
  KDA_ONE=1 timeout 60 ncu --kernel-name regex:"${NCU_KERNELS:-kda_chunk_intra}" --launch-count 2 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy \
    $B/harness > $OUT/ncu.txt 2>&1; echo "ncu rc=$? ${SECONDS}s"
  grep -E "kda_chunk|Duration|Issued Ipc|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers|Stall" $OUT/ncu.txt | head -40
fi
