#!/bin/bash
# benchmarks/kda/dev/run_final.sh — full harness run, then compute-sanitizer
# (memcheck, racecheck) on three small shapes. Logs go to $OUT.
cd "$(dirname "$0")/../../.."
B=benchmarks/kda/dev/bin/harness
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
$B benchmarks/kda/dev/bin/vectors > $OUT/harness.log 2>&1; echo "harness rc=$?"
for tool in memcheck racecheck; do
  KDA_SMALL=1 timeout 100 compute-sanitizer --tool $tool --print-limit 5 $B > $OUT/sanitizer_$tool.log 2>&1
  echo "sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Error' $OUT/sanitizer_$tool.log | head -3)"
done
cat $OUT/harness.log
