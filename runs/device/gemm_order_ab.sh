#!/usr/bin/env bash
# runs/device/gemm_order_ab.sh — which SMs run neighbouring tiles, and what a cluster launch
# changes, in one device call (gemm, issue 33's large shapes; targets/gemm/journal/2026-12-05.md,
# thirty-sixth session). On the H200 a launch as clusters of one, with SASS identical to the plain
# kernel's, was 10-16 % slower at the large shapes with 128x128 tiles, and so was a plain launch
# whose blocks take their units in a spread order. The hypothesis: under a plain launch blocks 2k
# and 2k + 1 run on the two SMs of one TPC and take neighbouring units (tiles one above the other,
# the same columns of B), and the pair shares B's lines on their way from L2. Four variants of
# the tree's `wgmma` source, each judged before the tree in one run after the other
# (`runs/device/ab.sh` with AB_BEFORE), at three large-tile configurations:
#   cl1       __cluster_dims__(1, 1, 1): blocks fill a GPC one SM in two (0, 2, 4, ...)
#   spread    plain launch, block b starts at unit 17 b mod grid: neighbours 17 blocks apart
#   pairswap  plain launch, blocks 2k and 2k + 1 start at units k and grid/2 + k: a TPC's two SMs
#             on tiles far apart, neighbouring units on neighbouring TPCs
#   cl2       __cluster_dims__(2, 1, 1) (grid rounded up to even), no other cluster feature:
#             blocks 2c and 2c + 1 on one TPC, as under the plain launch
# If the hypothesis holds: pairswap as slow as spread, and cl2 as fast as the plain kernel.
#
#   TESSERA_BIN=$PWD/.carry/tessera runs/device/gemm_order_ab.sh [VARIANT...]   (default: all four)
#
# Environment: TESSERA_BIN (required, absolute), OUT (default /tmp/out), PARAMS (the
# configurations, ab.sh's JSON). Run from the repository root. The variants are made from the
# tree's source by exact substitutions, and the script stops if one no longer applies.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
: "${TESSERA_BIN:?set TESSERA_BIN to the tessera binary (an absolute path)}"
variants=${*:-cl1 spread pairswap cl2}
params=${PARAMS:-'{"BM":[128],"BN":[128,256],"CONSUMERS":[2],"PINGPONG":[0,1],"STAGES":[4],"GROUP_M":[16],
  "SPLITK":[1],"FOLD":[0],"STREAMK":[0],"OCC":[1]}'}
python3 - "$out/variants" $variants <<'PY' || exit 2
import json, os, sys
root, names = sys.argv[1], sys.argv[2:]
src = open("targets/gemm/gemm_wgmma.cu").read()
spec = json.load(open("targets/gemm/spec.json"))

def sub(text, old, new, count):
    if text.count(old) != count:
        sys.exit("gemm_order_ab.sh: %r found %d times, expected %d" % (old, text.count(old), count))
    return text.replace(old, new)

entry = 'extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), OCC)'
loops = ["for (int u = blockIdx.x; u < p.units; u += gridDim.x) f(unit_of(p, u));",
         "for (int u = blockIdx.x; u < p.units; u += gridDim.x, mine ^= 1) {"]

def start(text, first):  # both unit loops (producer and consumers) start at unit `first`
    for loop in loops:
        text = sub(text, loop, "const unsigned g = gridDim.x, b = blockIdx.x; " +
                   loop.replace("int u = blockIdx.x;", "int u = (int)(%s);" % first), 1)
    return text

for name in names:
    os.makedirs(os.path.join(root, name), exist_ok=True)
    s, j = src, None
    if name == "cl1":
        s = sub(s, entry, entry + " __cluster_dims__(1, 1, 1)", 1)
    elif name == "spread":
        s = start(s, "b * (g % 17u ? 17u : g % 19u ? 19u : 23u) % g")
    elif name == "pairswap":
        s = start(s, "b >= g / 2 * 2 ? b : (b & 1u) * (g / 2) + b / 2")
    elif name == "cl2":
        s = sub(s, entry, entry + " __cluster_dims__(2, 1, 1)", 1)
        j = spec
        for t in j["templates"]:
            for l in t.get("launch", []):
                if t["name"] == "wgmma" and l["kernel"] == "gemm_wgmma":
                    l["grid"][0] = "2*cdiv(%s, 2)" % l["grid"][0]
    else:
        sys.exit("gemm_order_ab.sh: no variant %s (cl1, spread, pairswap, cl2)" % name)
    open(os.path.join(root, name, "gemm_wgmma.cu"), "w").write(s)
    if j is not None:
        json.dump(j, open(os.path.join(root, name, "spec.json"), "w"), indent=1)
PY
for v in $variants; do
  echo "=== before = $v, after = the tree $(date -u +%H:%M:%S)"
  AB_BEFORE=$out/variants/$v OUT=$out/$v runs/device/ab.sh gemm wgmma "$params" >"$out/$v.log" 2>&1
  echo "exit $?"
  grep -E "ok geomean|failed" "$out/$v.log" | head -8
  sed -n '/after \/ before/,$p' "$out/$v.log"
  rm -rf "$out/$v/logs"
done
