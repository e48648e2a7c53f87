#!/bin/bash
# benchmarks/kda/dev/ncu_src.sh — where the intra kernel's instructions go: ncu's source
# counters (instructions executed and warp-state samples per SASS instruction), summed
# per segment between barriers by sass_segments.py, for one launch of the first variant's intra
# kernel on h96_1x8192. CSV pages land in $OUT.
cd "$(dirname "$0")/../../.."
B=benchmarks/kda/dev/bin
K=${NCU_KERNEL:-kda_chunk_intra_b128p2gm}
SECONDS=0
KDA_ONE=1 timeout 150 ncu --kernel-name regex:"$K" --launch-count 1 --import-source yes \
  --section SourceCounters --section WarpStateStats --section InstructionStats --section SpeedOfLight \
  -o $OUT/prof -f $B/harness > $OUT/ncu_src.log 2>&1; echo "ncu rc=$? ${SECONDS}s"
ncu -i $OUT/prof.ncu-rep --page source --csv --print-source sass > $OUT/src_sass.csv 2> $OUT/src_sass.err; echo "sass page rc=$?"
python3 benchmarks/kda/dev/sass_segments.py $OUT/src_sass.csv ${NCU_BLOCKS:-12384} > $OUT/segments.txt 2>&1; echo "segments rc=$?"
rm -f $OUT/prof.ncu-rep; head -c 3000 $OUT/src_sass.csv > $OUT/sass_head.txt; gzip $OUT/src_sass.csv
ls -la $OUT; cat $OUT/segments.txt | cut -c1-400
