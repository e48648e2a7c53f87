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
#   A suite (a spec.json with "extends") is narrowed in its base's spec.json, restored likewise,
#   and AB_BEFORE goes over its base's folder (the sources are the base's).
#   AB_BEFORE=FILE|DIR  an A/B of a source change as well: the same configurations are first
#                judged on a copy of the tree whose template source is FILE (the source before
#                the change, e.g. `git show HEAD~1:targets/OP/X.cu > .ab/X.cu`, an untracked
#                file that travels with the tree), or with DIR's files copied over targets/OP/
#                (a source and the spec.json it was judged with, where the plan changed too),
#                into $OUT/ab-OP-before.db, then on the
#                tree as it is; a last table gives each shape's time after / before per
#                configuration (the two runs follow each other in one call: the day's drift
#                is small between them, the baseline is timed in both)
set -uo pipefail
op=${1:?operator}
tpl=${2:?template}
params=${3:?parameter lists as JSON}
shift 3
out=${OUT:-/tmp/out}
mkdir -p "$out"
: "${TESSERA_BIN:?set TESSERA_BIN to the tessera binary}"
export TESSERA_CACHE=${TESSERA_CACHE:-/tmp/tcache}
here=$PWD

# judge the narrowed space in the tree at $1 into the database $2
judge() {
  local tree=$1 db=$2 spec=$1/targets/$op/spec.json
  shift 2
  # a suite ("extends": "../base") has its base's templates: narrow the base's spec
  spec=$(python3 -c 'import json, os, sys; s = json.load(open(sys.argv[1]))
print(os.path.normpath(os.path.join(os.path.dirname(sys.argv[1]), s["extends"], "spec.json")) if "extends" in s else sys.argv[1])' "$spec") || return 2
  cp "$spec" "$db.spec.orig"
  python3 - "$spec" "$tpl" "$params" <<'PY' || { rm -f "$db.spec.orig"; return 2; }
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
  (cd "$tree" && TESSERA_SOURCE=$tree "$TESSERA_BIN" optimize "$op" --template "$tpl" --strategy exhaustive \
    --budget 1000 --db "$db" "$@" >"$db.log" 2>&1)
  local rc=$?
  cp "$db.spec.orig" "$spec" && rm -f "$db.spec.orig"
  echo "optimize exit $rc"; tail -4 "$db.log"
}

table() {
  python3 - "$@" <<'PY'
import json, sqlite3, sys
def load(path):
    c = sqlite3.connect(path)
    rows = c.execute("""SELECT c.id, c.params, e.status, e.geomean_speedup FROM evaluations e
                        JOIN candidates c ON c.id = e.candidate_id ORDER BY c.id""").fetchall()
    shapes = {}
    for cid, sh, ms in c.execute("""SELECT e.candidate_id, s.shape, s.cand_median_ms FROM shape_results s
                                    JOIN evaluations e ON e.id = s.evaluation_id"""):
        shapes.setdefault(sh, {})[cid] = ms
    return rows, shapes
after, before = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
rows, shapes = load(after)
ids = [r[0] for r in rows]
varying = [k for k in json.loads(rows[0][1]) if len({json.loads(r[1])[k] for r in rows}) > 1] if rows else []
for cid, params, status, g in rows:
    p = json.loads(params)
    print("#%d %s %s geomean %s" % (cid, " ".join("%s=%s" % (k, p[k]) for k in varying), status,
                                    "%.4fx" % g if g else "-"))
print("%-28s" % "shape (ms)" + "".join("%12s" % ("#%d" % i) for i in ids))
for sh, by in shapes.items():
    print("%-28s" % sh + "".join("%12s" % ("%.4f" % by[i] if i in by else "-") for i in ids))
if before:
    brows, bshapes = load(before)
    by_params = {json.dumps(json.loads(r[1]), sort_keys=True): r[0] for r in brows}
    pair = {cid: by_params.get(json.dumps(json.loads(params), sort_keys=True)) for cid, params, _, _ in rows}
    print("after / before (time; below 1: the change is faster)")
    print("%-28s" % "shape" + "".join("%12s" % ("#%d" % i) for i in ids))
    for sh, by in shapes.items():
        cells = []
        for i in ids:
            b = bshapes.get(sh, {}).get(pair[i]) if pair[i] else None
            cells.append("%12s" % ("%.4f" % (by[i] / b) if i in by and b else "-"))
        print("%-28s" % sh + "".join(cells))
PY
}

db=$out/ab-$op.db
if [ -n "${AB_BEFORE:-}" ]; then
  # the sources are the base's for a suite ("extends"): the before files go over the base's folder
  srcop=$(python3 -c 'import json, os, sys; s = json.load(open(sys.argv[1]))
print(os.path.basename(os.path.normpath(os.path.join(os.path.dirname(sys.argv[1]), s["extends"]))) if "extends" in s else sys.argv[2])' "targets/$op/spec.json" "$op") || exit 2
  src=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print([t for t in s['templates'] if t['name']==sys.argv[2]][0]['source'])" "targets/$srcop/spec.json" "$tpl") || exit 2
  old=$(mktemp -d)
  trap 'rm -rf "$old"' EXIT
  tar --exclude=./.carry --exclude=./build --exclude=./build-asan -cf - . | (cd "$old" && tar xf -)
  if [ -d "$AB_BEFORE" ]; then
    cp -r "$AB_BEFORE"/. "$old/targets/$srcop/" || exit 2
  else
    cp "$AB_BEFORE" "$old/targets/$srcop/$src" || exit 2
  fi
  echo "== before ($AB_BEFORE over targets/$srcop/)"
  judge "$old" "$out/ab-$op-before.db" "$@"
  table "$out/ab-$op-before.db"
  echo "== after (the tree as it is)"
fi
judge "$here" "$db" "$@"
if [ -n "${AB_BEFORE:-}" ]; then table "$db" "$out/ab-$op-before.db"; else table "$db"; fi
