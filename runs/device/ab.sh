#!/usr/bin/env bash
# runs/device/ab.sh — an A/B of one template's parameters in one device call: the template's
# space narrowed to the lists given (the rest of spec.json as it is), every configuration of
# it judged by `tessera optimize --strategy exhaustive` in one run (same worker, same inputs,
# the baseline interleaved), then each shape's time per configuration side by side and each
# configuration's geomean. spec.json is restored afterwards (also when the run fails).
#
#   TESSERA_BIN=.carry/tessera runs/device/ab.sh OP TEMPLATE 'PARAMS-JSON' [EXTRA OPTIONS...]
#
#   PARAMS-JSON  the lists that replace the template's, e.g. for fa3_wgmma's champion with and
#                without the lazy rescale:
#                '{"BLOCK_N":[128],"CONSUMERS":[2],"STAGES":[2],"INTRA":[1],"PINGPONG":[1],
#                  "CONSUMERS64":[3],"PERSIST":[0],"POLY":[0],"LAZY":[0,1]}'
#                (a parameter not named keeps its lists; the constraints still apply)
#   EXTRA        passed to `tessera optimize` (e.g. --l2-flush read, --max-seconds-per-shape 0.5)
# Environment: TESSERA_BIN (required), OUT (default /tmp/out; the database goes to
# $OUT/ab-OP.db). Run from the repository root.
set -uo pipefail
op=${1:?operator}
tpl=${2:?template}
params=${3:?parameter lists as JSON}
shift 3
out=${OUT:-/tmp/out}
mkdir -p "$out"
: "${TESSERA_BIN:?set TESSERA_BIN to the tessera binary}"
export TESSERA_SOURCE=$PWD TESSERA_CACHE=${TESSERA_CACHE:-/tmp/tcache}
spec=targets/$op/spec.json
db=$out/ab-$op.db
cp "$spec" "$out/spec.json.orig"
trap 'cp "$out/spec.json.orig" "$spec"' EXIT
python3 - "$spec" "$tpl" "$params" <<'PY' || exit 2
import json, sys
path, name, lists = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spec = json.load(open(path))
tpls = [t for t in spec["templates"] if t["name"] == name]
if not tpls:
    sys.exit(f"ab.sh: {path} has no template '{name}'")
unknown = sorted(set(lists) - set(tpls[0]["params"]))
if unknown:
    sys.exit(f"ab.sh: template '{name}' has no parameter {', '.join(unknown)}")
tpls[0]["params"].update(lists)
json.dump(spec, open(path, "w"), indent=1)
PY
rm -f "$db"
"$TESSERA_BIN" optimize "$op" --template "$tpl" --strategy exhaustive --budget 1000 --db "$db" "$@" \
  >"$out/ab-$op.log" 2>&1
echo "optimize exit $?"; tail -4 "$out/ab-$op.log"
python3 - "$db" <<'PY'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("""SELECT c.id, c.params, e.status, e.geomean_speedup FROM evaluations e
                    JOIN candidates c ON c.id = e.candidate_id ORDER BY c.id""").fetchall()
shapes = {}
for cid, sh, ms in c.execute("""SELECT e.candidate_id, s.shape, s.cand_median_ms FROM shape_results s
                                JOIN evaluations e ON e.id = s.evaluation_id"""):
    shapes.setdefault(sh, {})[cid] = ms
ids = [r[0] for r in rows]
varying = [k for k in json.loads(rows[0][1]) if len({json.loads(r[1])[k] for r in rows}) > 1] if rows else []
for cid, params, status, g in rows:
    p = json.loads(params)
    print("#%d %s %s geomean %s" % (cid, " ".join("%s=%s" % (k, p[k]) for k in varying), status,
                                    "%.4fx" % g if g else "-"))
print("%-28s" % "shape (ms)" + "".join("%12s" % ("#%d" % i) for i in ids))
for sh, by in shapes.items():
    print("%-28s" % sh + "".join("%12s" % ("%.4f" % by[i] if i in by else "-") for i in ids))
PY
