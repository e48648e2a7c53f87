#!/bin/bash
# benchmarks/kda/dev/run_dev.sh — one device call for a development round: the full
# harness (validation + timing of all variants, old and new), the KC_PROFILE build
# with few repetitions (per-phase cycles), compute-sanitizer memcheck and racecheck
# on the small shapes, ncu on one launch of the first two variants (h96_1x8192) and the SASS of
# one intra kernel. Logs go to $OUT; a short summary is printed last.
cd "$(dirname "$0")/../../.."
B=benchmarks/kda/dev/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout 75 $B/harness $B/vectors > $OUT/harness.log 2>&1; echo "harness rc=$?"
if [ -x $B/harness_prof ]; then REPS=3 timeout 25 $B/harness_prof > $OUT/harness_prof.log 2>&1; echo "prof rc=$?"; fi
for tool in memcheck racecheck; do
  KDA_SMALL=1 timeout ${SAN_TIMEOUT:-50} compute-sanitizer --tool $tool --print-limit 5 $B/harness > $OUT/sanitizer_$tool.log 2>&1
  echo "sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Error' $OUT/sanitizer_$tool.log | head -3)"
done
KDA_ONE=1 timeout 25 ncu --kernel-name regex:'kda_chunk_(intra|state)_b128w8p1' --launch-count 2 \
  --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
  $B/harness > $OUT/ncu.txt 2>&1; echo "ncu rc=$?"
cuobjdump -sass -fun kda_chunk_intra_b128w8p1 $B/harness > $OUT/intra_sass.txt 2>&1
cuobjdump -sass -fun kda_chunk_state_b128w8p1 $B/harness > $OUT/state_sass.txt 2>&1
grep -E "profile|intra|state:" $OUT/harness_prof.log 2>/dev/null | head -12
grep -E "Duration|Throughput|Issued Ipc|No Eligible|Stall|Warp Cycles Per Issued|Achieved Occupancy" $OUT/ncu.txt | head -30
sed -n '/^validation/,$p' $OUT/harness.log | grep -v "^    BV64 SW8 P1\|^    BV128 SW4\|^    v2 BV64"
