#!/bin/bash
# benchmarks/kda/dev/run_final.sh — full harness run, then compute-sanitizer on three
# small shapes: memcheck with everything (reference, baseline, first two fast
# variants), racecheck on the first two fast variants only (KDA_FAST_ONLY: the fp64
# reference, one barrier per token, makes racecheck run for minutes). Logs go to $OUT.
cd "$(dirname "$0")/../../.."
B=benchmarks/kda/dev/bin/harness
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout 70 $B benchmarks/kda/dev/bin/vectors > $OUT/harness.log 2>&1; echo "harness rc=$?"
KDA_SMALL=1 timeout 30 compute-sanitizer --tool memcheck --print-limit 5 $B > $OUT/sanitizer_memcheck.log 2>&1
echo "sanitizer memcheck rc=$?: $(grep -E 'ERROR SUMMARY|Error' $OUT/sanitizer_memcheck.log | head -3)"
KDA_SMALL=1 KDA_FAST_ONLY=1 timeout 40 compute-sanitizer --tool racecheck --print-limit 5 $B > $OUT/sanitizer_racecheck.log 2>&1
echo "sanitizer racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|Error' $OUT/sanitizer_racecheck.log | head -3)"
sed -n '/^validation/,$p' $OUT/harness.log | grep -v "^    BV64 SW8 P1\|^    BV128 SW4\|^    v2 BV64"
