#!/usr/bin/env python3
"""A/B of toroid's Python call path in one process: the `python/` package of another commit
against the working tree's, on the same tiny CPU graphs (one fused kernel; four matmul+relu
blocks), interleaved with eager, median of 5 rounds of 400 calls each.

    git archive <commit> python | tar x -C /tmp/old
    TOROID_LIBRARY=build/src/capi/libtoroid.so python3 bench/host_overhead_ab.py /tmp/old/python

Run-to-run noise on a shared machine is larger than the differences this looks for, so both
sides run in the same process, alternating.
"""
import importlib
import os
import statistics
import sys
import time

import torch
from torch.fx.experimental.proxy_tensor import make_fx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")


def load(path):
    """The toroid package under `path` (a fresh import)."""
    for m in [k for k in sys.modules if k == "toroid" or k.startswith("toroid.")]:
        del sys.modules[m]
    sys.path.insert(0, path)
    try:
        return importlib.import_module("toroid")
    finally:
        sys.path.pop(0)


def median_us(f, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main():
    x = torch.randn(8, 32)
    w = torch.randn(32, 32) / 6

    def fused1(x):
        return x - x.amax(-1, keepdim=True)

    def mm4(x):
        for _ in range(4):
            x = torch.mm(x, w).relu()
        return x
    fns = {"fused1": fused1, "mm4": mm4}
    compiled = {}
    for tag, path in (("old", sys.argv[1]), ("new", HERE)):
        toroid = load(path)
        for name, fn in fns.items():
            compiled[(tag, name)] = toroid.compile_graph(make_fx(fn)(x), [x])
    for name, fn in fns.items():
        rounds = {"eager": [], "old": [], "new": []}
        for _ in range(5):
            rounds["eager"].append(median_us(lambda: fn(x), 400))
            for tag in ("old", "new"):
                rounds[tag].append(median_us(lambda: compiled[(tag, name)](x), 400))
        print(name, " ".join("%s %.1f µs" % (k, statistics.median(v)) for k, v in rounds.items()))


if __name__ == "__main__":
    main()
