#!/usr/bin/env python3
"""Where the host time of one compiled call goes (issues 17 and 18): a one-kernel graph and a
graph of four matmul blocks through torch.compile on a small tensor, called in a loop without
synchronizing (host throughput), then under cProfile.

    TOROID_LIBRARY=build/src/capi/libtoroid.so PYTHONPATH=python python3 tools/gpu/profile_call.py \
        [--calls 3000] [--device cuda|cpu] [--profile toroid,inductor] [--no-grad]

Prints µs per call for eager, toroid and Inductor (the loop's wall time over its calls, the GPU
queue drained at the end), then for each backend in --profile the Python functions a call runs
(cProfile's count over the calls) and its top functions by own time.
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))

import torch  # noqa: E402

from host_overhead_bench import blocks  # noqa: E402


def sync(x):
    if x.is_cuda:
        torch.cuda.synchronize()


def per_call(f, x, calls):
    for _ in range(20):
        f(x)
    sync(x)
    t0 = time.perf_counter()
    for _ in range(calls):
        f(x)
    sync(x)
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=3000)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--profile", default="toroid", help="comma-separated backends to profile (toroid, inductor)")
    p.add_argument("--no-grad", action="store_true", help="call under torch.no_grad() (as bench/cpu_micro.py)")
    a = p.parse_args()
    import contextlib
    import toroid  # noqa: F401
    x = torch.randn(8, 32, device=a.device)
    w = torch.randn(32, 32, device=a.device)
    with torch.no_grad() if a.no_grad else contextlib.nullcontext():
        for family, k in (("fused", 1), ("mm", 4)):
            fn = blocks(family, k, w)
            row = {}
            for mode in ("eager", "toroid", "inductor"):
                torch._dynamo.reset()
                f = fn if mode == "eager" else torch.compile(fn, backend=mode)
                row[mode] = per_call(f, x, a.calls)
            print("%s%d: eager %.1f µs, toroid %.1f µs, Inductor %.1f µs per call (no sync per call)" %
                  (family, k, row["eager"], row["toroid"], row["inductor"]))
            for backend in [b for b in a.profile.split(",") if b]:
                torch._dynamo.reset()
                f = torch.compile(fn, backend=backend)
                per_call(f, x, 100)
                prof = cProfile.Profile()
                prof.enable()
                for _ in range(a.calls):
                    f(x)
                prof.disable()
                sync(x)
                stats = pstats.Stats(prof)
                print("%s%d under %s: %.1f Python function calls per call" % (
                    family, k, backend, stats.total_calls / a.calls))
                stats.sort_stats("tottime").print_stats(a.top)


if __name__ == "__main__":
    main()
