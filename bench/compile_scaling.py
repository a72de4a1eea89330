#!/usr/bin/env python3
"""Compile time against graph size (issue: compile time that scales).

Writes three families of graphs of n nodes and times `toroidc run G --compile-only` on each
(cold: a fresh kernel cache per compile), splitting the time into the pipeline before the C++
compiler and the C++ compiler itself (TOROID_LOG=time):
  chain   n inputs summed one add at a time (a chain of n-1 adds, one output)
  wide    one input, n pointwise outputs (x * k + k each)
Usage: bench/compile_scaling.py [--toroidc PATH] [--sizes 500,1000,...] [--families chain,wide]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def chain(n):
    lines = ["graph @chain functional {"]
    lines += ["  %%x%d = input : f32[64]" % i for i in range(n)]
    acc = "%x0"
    for i in range(1, n):
        lines.append("  %%a%d = aten.add.Tensor(%s, %%x%d) : f32[64]" % (i, acc, i))
        acc = "%%a%d" % i
    lines += ["  output %s" % acc, "}"]
    return "\n".join(lines) + "\n"


def wide(n):
    lines = ["graph @wide functional {", "  %x = input : f32[64]"]
    for i in range(n):
        lines.append("  %%m%d = aten.mul.Tensor(%%x, %d) : f32[64]" % (i, i + 1))
    lines.append("  output " + ", ".join("%%m%d" % i for i in range(n)))
    return "\n".join(lines + ["}"]) + "\n"


FAMILIES = {"chain": chain, "wide": wide}


def timed_compile(toroidc, text, name):
    work = tempfile.mkdtemp(prefix="toroid-scaling-")
    try:
        path = os.path.join(work, name + ".tir")
        with open(path, "w") as f:
            f.write(text)
        env = dict(os.environ, TOROID_CACHE_DIR=os.path.join(work, "cache"), TOROID_LOG="time")
        start = time.monotonic()
        p = subprocess.run([toroidc, "run", path, "--compile-only"], capture_output=True, text=True, env=env)
        wall = time.monotonic() - start
        if p.returncode != 0:
            return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
        phases = {}
        for m in re.finditer(r"\[time\] (\S+) ([0-9.]+) ms", p.stderr):
            phases[m.group(1)] = phases.get(m.group(1), 0.0) + float(m.group(2))
        m = re.search(r"compiled (\d+) kernel", p.stdout)
        return {"wall_s": wall, "phases": phases, "kernels": int(m.group(1)) if m else 0}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--toroidc", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "toroidc", "toroidc"))
    ap.add_argument("--sizes", default="500,1000,2000,4000,8000")
    ap.add_argument("--families", default=",".join(FAMILIES))
    args = ap.parse_args()
    print("| family | nodes | total s | pipeline s (parse to C++ source) | C++ compiler s | kernels |")
    print("|---|---|---|---|---|---|")
    for fam in args.families.split(","):
        for n in [int(s) for s in args.sizes.split(",")]:
            r = timed_compile(args.toroidc, FAMILIES[fam](n), "%s%d" % (fam, n))
            if "error" in r:
                print("| %s | %d | error: %s |" % (fam, n, r["error"]))
                continue
            ph = r["phases"]
            cxx = ph.get("cxx", 0.0) / 1000
            pipeline = sum(v for k, v in ph.items() if k != "cxx") / 1000
            print("| %s | %d | %.2f | %.2f | %.2f | %d |" % (fam, n, r["wall_s"], pipeline, cxx, r["kernels"]))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
