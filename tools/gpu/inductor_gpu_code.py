#!/usr/bin/env python3
"""Prints the Triton code Inductor generates for one of bench/gpu_bench.py's workloads, and the
launch configuration its autotuner picked for each kernel (block sizes, warps, stages): to read
beside toroid's kernel (`toroidc run G.tir --device=cuda --emit=cuda`) where a row of the GPU
micro suite is slow.

    python3 tools/gpu/inductor_gpu_code.py softmax_197 > inductor.py
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import torch  # noqa: E402
from gpu_bench import OPT_IN, WORKLOADS  # noqa: E402


def main():
    every = {**WORKLOADS, **OPT_IN}
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=sorted(every))
    a = ap.parse_args()
    _, fn, args, _ = every[a.workload]()
    from torch._inductor.codecache import PyCodeCache
    before = set(id(m) for m in getattr(PyCodeCache, "modules", []))
    compiled = torch.compile(fn, dynamic=False)
    with torch.no_grad():
        for _ in range(3):  # the autotuner picks at the first call
            compiled(*args)
    torch.cuda.synchronize()
    for m in getattr(PyCodeCache, "modules", []):
        if id(m) in before or not getattr(m, "__file__", None):
            continue
        print(f"# {m.__file__}")
        print(open(m.__file__).read())
        for name in sorted(vars(m)):
            launchers = getattr(getattr(m, name), "launchers", None)
            for launcher in launchers or []:
                print(f"# picked for {name}: {getattr(launcher, 'config', launcher)}")


if __name__ == "__main__":
    main()
