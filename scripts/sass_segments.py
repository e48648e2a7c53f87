#!/usr/bin/env python3
"""scripts/sass_segments.py — reads the CSV of `ncu -i X --page source --csv
--print-source sass` and prints where the executed instructions go: per segment of SASS
between block barriers (BAR), the warp instructions executed, the stall samples, and the
opcode classes. Usage: sass_segments.py src_sass.csv [launched_blocks]

The CSV comes from a `tessera profile OP --candidate ID --tool ncu` report (its `--set full`
holds the source counters): ncu -i DIR/report.ncu-rep --page source --csv --print-source sass.
With launched_blocks (the kernel's grid size) the counts are also given per block."""
import csv, re, sys
from collections import Counter, defaultdict

rows = list(csv.reader(open(sys.argv[1])))
nblocks = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
hdr_i = next(i for i, r in enumerate(rows) if any('Source' == c or c.startswith('Address') for c in r))
hdr = rows[hdr_i]
print('columns:', hdr)
def col(*names):
    for n in names:
        for i, h in enumerate(hdr):
            if h.strip().lower() == n.lower(): return i
    for n in names:
        for i, h in enumerate(hdr):
            if n.lower() in h.lower(): return i
    return None
ci_src = col('Source')
ci_ex = col('Instructions Executed', 'inst_executed')
ci_st = col('Warp Stall Sampling (All Samples)', 'Warp Stall Sampling')
print('source col', ci_src, 'executed col', ci_ex, 'stall col', ci_st)
def num(s):
    try: return float(s.replace(',', ''))
    except Exception: return 0.0
CLASS = [('int', r'^(IMAD|IADD3|LEA|SHF|LOP3|ISETP|VIADD|IMNMX|SEL|PRMT|MOV|IABS|UIADD3|ULEA|USHF|UMOV|UIMAD|S2R|S2UR|CS2R|R2UR|PLOP3|P2R|R2P|ULOP3|USEL|ISCADD|SGXT|BMSK|FLO|POPC|IADD)'),
         ('fp', r'^(FFMA|FMUL|FADD|FSEL|FSETP|FMNMX|FCHK|FRND|HFMA2|HMUL2|HADD2|F2FP|F2F|I2F|F2I|I2FP)'),
         ('mufu', r'^MUFU'), ('mma', r'^(HMMA|IMMA|HGMMA)'), ('lds', r'^(LDS|LDSM)'), ('sts', r'^STS'),
         ('gmem', r'^(LDG|STG|LDGSTS|LDGDEPBAR|DEPBAR|UBLKCP|UTMA|SYNCS)'), ('shfl', r'^SHFL'),
         ('bar', r'^(BAR|WARPSYNC|MEMBAR|FENCE)'), ('branch', r'^(BRA|BSSY|BSYNC|EXIT|CALL|RET|YIELD|NOP|BREAK)')]
def cls(op):
    for n, rx in CLASS:
        if re.match(rx, op): return n
    return 'other:' + op.split('.')[0]
segs = []
cur = {'first': None, 'ex': 0.0, 'st': 0.0, 'cls': Counter(), 'n': 0}
tot_ex = tot_st = 0.0
opc = Counter()
for r in rows[hdr_i + 1:]:
    if ci_src is None or len(r) <= ci_src: continue
    sass = r[ci_src].strip()
    m = re.match(r'^(@!?U?P\w+\s+)?([A-Z0-9_.]+)', sass)
    if not m: continue
    op = m.group(2)
    ex = num(r[ci_ex]) if ci_ex is not None else 0.0
    st = num(r[ci_st]) if ci_st is not None else 0.0
    if cur['first'] is None: cur['first'] = sass[:60]
    cur['ex'] += ex; cur['st'] += st; cur['n'] += 1
    cur['cls'][cls(op)] += ex
    opc[op.split('.')[0]] += ex
    tot_ex += ex; tot_st += st
    if op.startswith('BAR'):
        segs.append(cur); cur = {'first': None, 'ex': 0.0, 'st': 0.0, 'cls': Counter(), 'n': 0}
segs.append(cur)
print(f'total warp instructions executed {tot_ex:.4g} ({tot_ex / nblocks:.0f} per block), stall samples {tot_st:.4g}')
for k, s in enumerate(segs):
    if s['ex'] == 0: continue
    c = ', '.join(f'{n} {v / nblocks:.0f}' for n, v in s['cls'].most_common(8))
    print(f'seg {k:2d}: {s["n"]:4d} sass, exec/block {s["ex"] / nblocks:7.0f} ({100 * s["ex"] / tot_ex:4.1f}%), '
          f'stall {100 * s["st"] / max(tot_st, 1):4.1f}% | {c} | starts: {s["first"]}')
print('opcodes (per block):', ', '.join(f'{o} {v / nblocks:.0f}' for o, v in opc.most_common(40)))
