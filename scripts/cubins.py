#!/usr/bin/env python3
"""scripts/cubins.py — the proof that a source change changes no kernel: every configuration
of an operator's templates compiled the way tessera compiles it, before and after, compared
byte for byte.

    scripts/cubins.py build OP DIR [--template T]... [--only NAME=VALUE]... [--every N] [--arch A]... [--jobs N]
    scripts/cubins.py compare DIR_BEFORE DIR_AFTER [--subset] [--sass CUOBJDUMP]
    scripts/cubins.py uniform DIR --sass CUOBJDUMP

`build` enumerates each template's configurations from targets/OP/spec.json (the product of
the parameter lists, filtered by the constraints), renders each as codegen/render.cpp does
(one `#define` per parameter, in name order, before the template's source) and compiles it
with NVRTC with tessera's options (codegen/compiler.cpp: --gpu-architecture, -std=c++17,
-default-device, -I targets/OP, -I targets/common, -I the CUDA headers), for every
architecture the template lists (or those given). DIR gets one cubin per configuration and
architecture and index.json (configuration -> SHA-256 of its cubin). `--only ORDER=1` keeps
the configurations with that value (repeatable: all must hold); `--every 10` one in ten of
them (a sample of a large space, the same one each time).
`compare` prints each configuration whose cubin differs or is missing on one side and exits 1
if there is one. With `--sass CUOBJDUMP`, a pair whose bytes differ is disassembled by that
cuobjdump and compared instruction by instruction (encodings and addresses dropped): where
every kernel's SASS is the same, the cubins differ only outside the code (a module variable,
the symbol table) and the pair counts as SASS-identical; the exit status is then 1 only for a
SASS difference or a missing cubin. A cuobjdump reads the architectures of its CUDA version
(12.8's reads sm_100a, not sm_103a; 13.x's both; recent triton wheels carry one in
backends/nvidia/bin); a cubin it cannot decode is reported as such. Cubins carry no line table (no -lineinfo), so comments and line moves do not
change them; a renamed or reordered kernel does.
`uniform` lists each cubin of DIR with a kernel whose SASS has an R2UR among the three
instructions before more than one HGMMA: the products' descriptors kept in ordinary registers
and moved to uniform ones before each product, which ptxas does where it cannot keep them in
uniform registers (gemm's journal and flash_attention's, 2026-12-05; one such product is the
first move at a loop's entry); it exits 1 if there is one. tests/support/sass.h is the same
check in the compile tests. Rebuild a template whose cubins differ on its
own before believing it (`--template`): once, on a machine loaded by other builds, one of 90
came out different and was the same again in five rebuilds (2026-12-03).
"""
import argparse
import concurrent.futures as cf
import ctypes
import ctypes.util
import hashlib
import itertools
import json
import math
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def split_top(expr, sep):
    """expr split at the separator characters outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(expr):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch == sep:
            parts.append(expr[start:i])
            start = i + 1
    return parts + [expr[start:]]


def python_of(expr):
    """muParser's syntax as tessera's specs use it (&&, ||, c ? a : b, nested in parentheses and
    function arguments) as a Python expression."""
    out, i = "", 0
    while i < len(expr):  # each parenthesized group's arguments translated on their own
        if expr[i] != "(":
            out, i = out + expr[i], i + 1
            continue
        depth, j = 0, i
        while True:
            depth += (expr[j] == "(") - (expr[j] == ")")
            if depth == 0:
                break
            j += 1
        out += "(" + ", ".join(python_of(a) for a in split_top(expr[i + 1:j], ",")) + ")"
        i = j + 1
    question = split_top(out, "?")
    if len(question) > 1:  # c ? a : b ? x : y, right-associative
        cond, rest = question[0], "?".join(question[1:])
        depth, nested = 0, 0
        for k, ch in enumerate(rest):
            depth += (ch == "(") - (ch == ")")
            if depth or ch not in "?:":
                continue
            if ch == "?":
                nested += 1
            elif nested:
                nested -= 1
            else:
                return f"(({python_of(rest[:k])}) if ({python_of(cond)}) else ({python_of(rest[k + 1:])}))"
        sys.exit(f"cubins.py: '{expr}': a '?' without its ':'")
    return out.replace("&&", " and ").replace("||", " or ")


def evaluate(expr, env):
    funcs = dict(floor=math.floor, ceil=math.ceil, min=min, max=max, abs=abs,
                 cdiv=lambda a, b: -(-a // b))
    return eval(python_of(expr), {"__builtins__": {}}, dict(env, **funcs))


def with_lets(template, cfg):
    """cfg and the template's `let` names that depend on its parameters alone (ROWS, not TILES,
    which needs a shape): what its constraints may name."""
    env = dict(cfg)
    for name, expr in template.get("let", {}).items():
        try:
            env[name] = evaluate(expr, env)
        except NameError:
            pass
    return env


def configurations(template):
    names = sorted(template["params"])
    for values in itertools.product(*(template["params"][n] for n in names)):
        cfg = dict(zip(names, values))
        env = with_lets(template, cfg)
        if all(evaluate(c, env) for c in template.get("constraints", [])):
            yield cfg


def render(source, cfg):
    head = "// tessera variant:" + "".join(f" {k}={v}" for k, v in sorted(cfg.items())) + "\n"
    head += "".join(f"#define {k} {v}\n" for k, v in sorted(cfg.items()))
    return head + "#line 1\n" + source


def cuda_include():
    for d in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda", "/usr"):
        if d and (Path(d) / "include" / "cuda_runtime.h").exists():
            return str(Path(d) / "include")
    sys.exit("cubins.py: no CUDA headers found (set CUDA_HOME)")


def load_nvrtc():
    names = [ctypes.util.find_library("nvrtc"), "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"]
    for n in filter(None, names):
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    sys.exit("cubins.py: libnvrtc not found")


def compile_one(source, name, options):
    nv = load_nvrtc()
    prog = ctypes.c_void_p()
    if nv.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None) != 0:
        return None, "nvrtcCreateProgram failed"
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    rc = nv.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nv.nvrtcGetProgramLog(prog, log)
    cubin = None
    if rc == 0:
        nv.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        nv.nvrtcGetCUBIN(prog, buf)
        cubin = buf.raw
    nv.nvrtcDestroyProgram(ctypes.byref(prog))
    return cubin, log.value.decode(errors="replace")


def job(args):
    key, source, name, options, path = args
    cubin, log = compile_one(source, name, options)
    if cubin is None:
        return key, None, log
    Path(path).write_bytes(cubin)
    return key, hashlib.sha256(cubin).hexdigest(), ""


def build(ns):
    op_dir = REPO / "targets" / ns.op
    spec = json.loads((op_dir / "spec.json").read_text())
    out = Path(ns.dir)
    out.mkdir(parents=True, exist_ok=True)
    inc = [f"-I{op_dir}", f"-I{REPO / 'targets' / 'common'}", f"-I{cuda_include()}"]
    only = [tuple(o.split("=", 1)) for o in ns.only or []]
    kept = 0
    jobs = []
    for t in spec["templates"]:
        if ns.template and t["name"] not in ns.template:
            continue
        source = (op_dir / t["source"]).read_text()
        for arch in ns.arch or t.get("arch", ["sm_90a"]):
            for cfg in configurations(t):
                if any(str(cfg.get(k)) != v for k, v in only):
                    continue
                kept += 1
                if (kept - 1) % ns.every:
                    continue
                key = f"{t['name']}/{arch}/" + ",".join(f"{k}={v}" for k, v in sorted(cfg.items()))
                path = out / (key.replace("/", "__") + ".cubin")
                options = [f"--gpu-architecture={arch}", "-std=c++17", "-default-device"] + inc
                jobs.append((key, render(source, cfg), t["source"], options, str(path)))
    index, failed = {}, 0
    with cf.ProcessPoolExecutor(max_workers=ns.jobs) as pool:
        for key, digest, log in pool.map(job, jobs):
            index[key] = digest
            if digest is None:
                failed += 1
                print(f"FAILED {key}\n{log[-2000:]}", file=sys.stderr)
    (out / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True))
    distinct = len({d for d in index.values() if d})
    print(f"{len(index)} configurations compiled into {out} ({distinct} distinct cubins, {failed} failed)")
    return 1 if failed else 0


def sass(cuobjdump, path):
    """The cubin's SASS as text, one instruction a line without encodings and addresses;
    None where this cuobjdump cannot decode it."""
    import re
    import subprocess
    r = subprocess.run([cuobjdump, "-sass", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    lines = []
    for line in r.stdout.splitlines():
        if "Function :" in line:
            lines.append(line.strip())
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if m:
            lines.append(m.group(1))
    return "\n".join(lines) if lines else None


def compare(ns):
    a = json.loads((Path(ns.before) / "index.json").read_text())
    b = json.loads((Path(ns.after) / "index.json").read_text())
    bad = sass_same = 0
    keys = set(b) if ns.subset else set(a) | set(b)
    for key in sorted(keys):
        if a.get(key) == b.get(key) and a.get(key) is not None:
            continue
        if ns.sass and a.get(key) and b.get(key):
            name = key.replace("/", "__") + ".cubin"
            before, after = sass(ns.sass, Path(ns.before) / name), sass(ns.sass, Path(ns.after) / name)
            if before is not None and before == after:
                sass_same += 1
                continue
            why = "not decoded by " + ns.sass if before is None or after is None else "SASS differs"
            print(f"differs: {key} ({why})")
        else:
            print(f"differs: {key} ({(a.get(key) or 'missing')[:12]} -> {(b.get(key) or 'missing')[:12]})")
        bad += 1
    same = sum(1 for k in keys if a.get(k) is not None and a.get(k) == b.get(k))
    extra = f", {sass_same} with the same SASS" if ns.sass else ""
    print(f"{same} identical{extra}, {bad} different or missing, of {len(keys)} configurations")
    return 1 if bad else 0


def uniform(ns):
    index = json.loads((Path(ns.dir) / "index.json").read_text())
    flagged = undecoded = 0
    for key in sorted(k for k, d in index.items() if d):
        text = sass(ns.sass, Path(ns.dir) / (key.replace("/", "__") + ".cubin"))
        if text is None:
            undecoded += 1
            continue
        ops = []
        for line in text.splitlines():
            words = line.split()
            ops.append(words[1] if len(words) > 1 and words[0].startswith("@") else words[0] if words else "")
        moved = {}  # kernel -> products with an R2UR among the three instructions before them
        kernel = ""
        for i, op in enumerate(ops):
            if op == "Function":
                kernel = text.splitlines()[i].split(":", 1)[1].strip()
            elif op.startswith("HGMMA") and any(o.startswith("R2UR") for o in ops[max(0, i - 3):i]):
                moved[kernel] = moved.get(kernel, 0) + 1
        bad = {k: n for k, n in moved.items() if n > 1}
        if bad:
            flagged += 1
            print(f"R2UR before products ({', '.join(f'{k}: {n}' for k, n in sorted(bad.items()))}): {key}")
    print(f"{flagged} of {len(index)} configurations with a kernel that moves its descriptors before each product"
          + (f", {undecoded} not decoded by {ns.sass}" if undecoded else ""))
    return 1 if flagged or undecoded else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("op")
    b.add_argument("dir")
    b.add_argument("--template", action="append")
    b.add_argument("--only", action="append", metavar="NAME=VALUE", help="only configurations with this value")
    b.add_argument("--every", type=int, default=1, metavar="N", help="one configuration in N (a sample)")
    b.add_argument("--arch", action="append")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--subset", action="store_true", help="only the configurations DIR_AFTER has (a --template build)")
    c.add_argument("--sass", metavar="CUOBJDUMP", help="compare differing cubins' SASS with this cuobjdump")
    u = sub.add_parser("uniform")
    u.add_argument("dir")
    u.add_argument("--sass", metavar="CUOBJDUMP", required=True, help="the cuobjdump that disassembles DIR's cubins")
    ns = p.parse_args()
    return {"build": build, "compare": compare, "uniform": uniform}[ns.cmd](ns)


if __name__ == "__main__":
    sys.exit(main())
