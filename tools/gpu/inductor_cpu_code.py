#!/usr/bin/env python3
"""Prints the C++ that Inductor generates for one of bench/cpu_micro.py's workloads, to read
beside toroid's (`toroidc run --emit=cpp`) where a row of the CPU micro suite is slow.

    python3 tools/gpu/inductor_cpu_code.py cross_entropy --mb 64 --dtype bf16 > inductor.py
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


if __name__ == "__main__":
    main()
