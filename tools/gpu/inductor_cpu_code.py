#!/usr/bin/env python3
"""Prints the C++ that Inductor generates for one of bench/cpu_micro.py's workloads, to read
beside toroid's where a row of the CPU micro suite is slow; --toroid-debug DIR also compiles it
with toroid (a debug directory per compile: the graph torch.compile hands over, after each pass,
the loop IR and the kernels).

    python3 tools/gpu/inductor_cpu_code.py cross_entropy --mb 64 --dtype bf16 [--toroid-debug DIR] > inductor.py
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import torch  # noqa: E402
from cpu_micro import DTYPES, WORKLOADS, inputs  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("--mb", type=float, default=8)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    ap.add_argument("--toroid-debug", metavar="DIR")
    a = ap.parse_args()
    fn, kinds = WORKLOADS[a.workload]
    args = inputs(kinds, a.mb, DTYPES[a.dtype])
    from torch._inductor.codecache import PyCodeCache
    before = set(id(m) for m in getattr(PyCodeCache, "modules", []))
    with torch.no_grad():
        torch.compile(fn, dynamic=False)(*args)
    for m in getattr(PyCodeCache, "modules", []):
        if id(m) not in before and getattr(m, "__file__", None):
            print(f"# {m.__file__}")
            print(open(m.__file__).read())
    if a.toroid_debug:
        import toroid
        toroid.config.debug = True
        toroid.config.debug_dir = a.toroid_debug
        with torch.no_grad():
            torch.compile(fn, backend="toroid", dynamic=False)(*args)


if __name__ == "__main__":
    main()
