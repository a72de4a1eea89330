#!/usr/bin/env python3
"""The lean CPU call's output allocation, A/B: a partition's lean function (runtime.Partition._lean)
built with torch.empty_strided, then with torch 2's dispatcher-free _empty_strided_cpu, called
in alternating rounds on the same inputs; prints the median µs of each.

    TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/lean_alloc_ab.py [--rounds 10] [--calls 20000]
"""
import argparse
import statistics
import sys
import time
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

from toroid import runtime  # noqa: E402


def lean_of(fn, args, empty):
    saved = runtime._empty_strided_cpu
    runtime._empty_strided_cpu = lambda: empty
    try:
        c = runtime.compile_graph(make_fx(fn)(*args), list(args))
        part = c.steps[0][1]
        with torch.no_grad():
            for _ in range(3):
                part(list(args))
        return c, next(iter(part._leans.values()))  # the graph keeps the module alive
    finally:
        runtime._empty_strided_cpu = saved


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=20000)
    a = ap.parse_args()
    cpu = torch.device("cpu")
    slow = lambda sizes, strides, dtype: torch.empty_strided(sizes, strides, dtype=dtype, device=cpu)  # noqa: E731
    fast = runtime._empty_strided_cpu()
    print("allocation:", getattr(fast, "__qualname__", repr(fast)))
    for name, fn, args in (("x - amax(x), 8 x 32", lambda x: x - x.amax(1, keepdim=True), (torch.rand(8, 32),)),
                           ("(x + r, x * r), 8 x 32", lambda x, r: (x + r, x * r), (torch.rand(8, 32), torch.rand(8, 32)))):
        leans = {"torch.empty_strided": lean_of(fn, args, slow), "_empty_strided_cpu": lean_of(fn, args, fast)}
        times = {k: [] for k in leans}
        full = list(args)
        for r in range(a.rounds):
            for k, (_, lean) in (list(leans.items()) if r % 2 == 0 else list(leans.items())[::-1]):
                t0 = time.perf_counter()
                for _ in range(a.calls):
                    lean(full)
                times[k].append((time.perf_counter() - t0) / a.calls * 1e6)
        print("%s: %s" % (name, ", ".join("%s %.2f µs" % (k, statistics.median(v)) for k, v in times.items())))


if __name__ == "__main__":
    main()
