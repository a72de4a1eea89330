#!/usr/bin/env python3
"""Times each CPU kernel of one toroid compile on its own, with a CPU micro workload's real inputs:
where a slow row of bench/cpu_micro.py spends its time. Reads a debug directory of that compile
(kernels.cpp and memory.json, e.g. from tools/gpu/inductor_cpu_code.py --toroid-debug), builds
kernels.cpp with the runtime's flags, allocates the buffers memory.json lists, and calls the
kernels in the wrapper's order: the whole sequence, then each kernel alone (cpu_micro's
timed_round: the median of calls for --budget seconds);
then Inductor's compiled module for the same workload and inputs (its `call`, outputs allocated).

    python3 tools/gpu/kernel_times.py DEBUG_DIR/toroid_0_p0.0 cross_entropy --mb 64 --dtype bf16
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import torch  # noqa: E402
from cpu_micro import DTYPES, WORKLOADS, inputs, timed_round  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("debug_dir")
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("--mb", type=float, default=8)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds of calls per figure")
    ap.add_argument("--toroidc", default=".cudacarry/toroidc",
                    help="the toroidc whose runtime flags build the kernels (`toroidc cache flags`)")
    a = ap.parse_args()
    fn, kinds = WORKLOADS[a.workload]
    args = inputs(kinds, a.mb, DTYPES[a.dtype])
    lines = [entry["what"] for entry in json.load(open(os.path.join(a.debug_dir, "memory.json")))["lines"]]
    bufs = {f"arg{i}": t for i, t in enumerate(args)}
    calls = []
    for what in lines:
        m = re.match(r"alloc (\w+) : \w+, (\d+) bytes", what)
        if m:
            bufs[m.group(1)] = torch.empty(int(m.group(2)), dtype=torch.uint8)
        m = re.match(r"call (\w+)\(([^)]*)\)", what)
        if m:
            calls.append((m.group(1), [s.strip() for s in m.group(2).split(",") if s.strip()]))
    so = os.path.join(tempfile.mkdtemp(), "kernels.so")
    command = subprocess.run([a.toroidc, "cache", "flags"], check=True, capture_output=True, text=True).stdout.split()
    subprocess.run([*command, "-o", so, os.path.join(a.debug_dir, "kernels.cpp")], check=True)
    lib = ctypes.CDLL(so)
    syms = (ctypes.c_int64 * 64)()
    bound = []
    for name, names in calls:
        ptrs = (ctypes.c_void_p * len(names))(*[bufs[n].data_ptr() for n in names])
        f = getattr(lib, name)
        f.restype = None
        bound.append((name, f, ptrs))
    everything = lambda: [f(p, syms) for _, f, p in bound]  # noqa: E731
    print(f"| kernel | ms ({a.workload} {a.dtype} {a.mb:g} MB, {torch.get_num_threads()} threads) |")
    print("|---|---|")
    print(f"| all {len(bound)} in order | {timed_round(everything, [], a.budget):.3f} |")
    for name, f, p in bound:
        print(f"| {name} | {timed_round(f, [p, syms], a.budget):.3f} |")
    if hasattr(torch, "compile"):
        from torch._inductor.codecache import PyCodeCache
        with torch.no_grad():
            torch.compile(fn, dynamic=False)(*args)
        modules = [m for m in getattr(PyCodeCache, "modules", []) if hasattr(m, "call")]
        if modules:
            print(f"| Inductor's call | {timed_round(lambda: modules[-1].call(list(args)), [], a.budget):.3f} |")


if __name__ == "__main__":
    main()
