#!/usr/bin/env bash
# runs/device/check.sh — the GPU checks of one device call, on a build packed by
# runs/device/pack.sh into .carry/ (or $CARRY). Steps are named on the command line
# and run in order; logs and the database go to $OUT (the device tool's folder).
#
#   runs/device/check.sh gpu-tests rmsnorm:60 repeat:rmsnorm gemm:16 stats
#
#   gpu-tests        every gpu-labelled test binary packed (*gpu_tests: hostile corpus, graph
#                    timing, flash_attention's kernels, kda's GPU reference), each under
#                    timeout $GPU_TEST_TIMEOUT (default 240 s)
#   OP:N             tessera optimize OP --budget N (default strategy), into $OUT/check.db
#   repeat:OP[:read] benchmarks/timing/repeatability.py OP: champion re-timed in 5 runs
#                    (:read evicts L2 with the read-flush kernel instead of a memset)
#   stats            seconds per evaluation and GPU busy fraction per run
#   recheck:OP       tessera recheck OP --top 2 on $OUT/check.db (run OP:N first): each candidate
#                    judged again and compared with its stored figure (issue 34's evidence)
#   profile:OP[:DB:ID[:SHAPE]]  tessera profile of OP's champion in $OUT/check.db (run OP:N
#                    first), or of candidate ID of DB (e.g. runs/recorded/*.db.gz) at SHAPE, under
#                    ncu, memcheck, racecheck and sass (docs/profile.md), with ncu's source page
#                    read per barrier segment (scripts/sass_segments.py); each tool's folder is
#                    packed into $OUT/profile-OP-ID.tar.gz (the device tool returns few files)
set -uo pipefail
carry=${CARRY:-.carry}
out=${OUT:-/tmp/out}
mkdir -p "$out"
export TESSERA_BIN=$PWD/$carry/tessera TESSERA_SOURCE=$PWD TESSERA_CACHE=${TESSERA_CACHE:-/tmp/tcache}
db=$out/check.db
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
ldd "$TESSERA_BIN" | grep 'not found'
for step in "$@"; do
  echo "=== $step $(date -u +%H:%M:%S)"
  case $step in
    gpu-tests)
      for t in "$carry"/*gpu_tests; do
        log="$out/$(basename "$t").log"
        # (a hung kernel would take the whole call: 2026-12-03 lost 600 s of device time so)
        timeout "${GPU_TEST_TIMEOUT:-240}" "$t" --gtest_color=no >"$log" 2>&1
        echo "$(basename "$t") exit $? (124: timed out after ${GPU_TEST_TIMEOUT:-240} s)"; grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED) ' "$log"
        grep -B2 -A8 'Failure' "$log" | head -60
      done ;;
    repeat:*)
      rest=${step#repeat:}; op=${rest%%:*}; flush=write
      [ "$rest" != "$op" ] && flush=${rest#*:}
      python3 benchmarks/timing/repeatability.py "$op" "$db" --bin "$TESSERA_BIN" --l2-flush "$flush" 2>&1 \
        | tee "$out/repeat-$op-$flush.txt" ;;
    stats)
      python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute("""SELECT r.id, r.operator, r.strategy, r.proposer, COUNT(e.id), AVG(e.seconds), r.gpu_busy_fraction
                      FROM runs r LEFT JOIN evaluations e ON e.run_id = r.id GROUP BY r.id"""):
    print("run %s %-8s %-10s %-8s evals %3d  s/eval %s  busy %s" % (r[0], r[1], r[2], r[3], r[4],
          "%.2f" % r[5] if r[5] else "-", "%.2f" % r[6] if r[6] is not None else "-"))
PY
      ;;
    recheck:*)
      op=${step#recheck:}
      "$TESSERA_BIN" recheck "$op" --top 2 --db "$db" 2>&1 | tee "$out/recheck-$op.txt" | tail -12 ;;
    profile:*)
      # profile:OP (the champion of $OUT/check.db) or profile:OP:DB:ID[:SHAPE] (a stored
      # candidate of another database, gzipped or not: copied first, a profile only reads it)
      IFS=: read -r _ op pdb id shape <<<"$step"; pdir=$(mktemp -d)
      if [ -n "${pdb:-}" ]; then
        case $pdb in *.gz) gunzip -c "$pdb" >"$pdir/in.db" ;; *) cp "$pdb" "$pdir/in.db" ;; esac
        pdb=$pdir/in.db
      else
        pdb=$db
        id=$("$TESSERA_BIN" leaderboard "$op" --json --limit 1 --db "$pdb" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["candidate"])')
      fi
      for tool in ncu memcheck racecheck sass; do
        timeout 300 "$TESSERA_BIN" profile "$op" --candidate "$id" --tool "$tool" --db "$pdb" --out "$pdir/$tool" \
          ${shape:+--shape "$shape"} >"$pdir/$tool.log" 2>&1
        echo "profile $op #$id $tool exit $?"; tail -3 "$pdir/$tool.log"
      done
      if [ -f "$pdir/ncu/report.ncu-rep" ]; then  # where the instructions go, per barrier segment
        ncu -i "$pdir/ncu/report.ncu-rep" --page source --csv --print-source sass >"$pdir/ncu/source.csv" 2>/dev/null &&
          python3 scripts/sass_segments.py "$pdir/ncu/source.csv" >"$pdir/ncu/segments.txt" 2>&1
        head -c 2000 "$pdir/ncu/segments.txt"; gzip -f "$pdir/ncu/source.csv"
      fi
      rm -f "$pdir/in.db"
      tar -czf "$out/profile-$op-$id.tar.gz" -C "$pdir" . && rm -rf "$pdir" ;;
    *:*)
      op=${step%%:*}; n=${step#*:}
      "$TESSERA_BIN" optimize "$op" --budget "$n" --db "$db" >"$out/optimize-$op.log" 2>&1
      echo "optimize $op exit $?"; tail -25 "$out/optimize-$op.log" ;;
    *) echo "unknown step $step" ;;
  esac
done
