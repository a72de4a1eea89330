#!/usr/bin/env python3
"""Host time per call of compiled graphs (issue 17's starting point): graphs of 1 to 32 blocks on
a tiny tensor, so that every call is host-bound, run by eager PyTorch, by toroid
(torch.compile(backend="toroid"), or toroid.compile_graph over make_fx where torch has no
dynamo) and by Inductor, side by side. Two families: `fused` blocks
(`x = x - x.amax(-1, keepdim=True)`, which toroid fuses into one kernel however many there are)
and `mm` blocks (`x = (x @ w).relu()`: a library matmul and a kernel each, so launches grow with
the blocks).

    PYTHONPATH=python TOROID_LIBRARY=build/src/capi/libtoroid.so \\
        python3 bench/host_overhead_bench.py [--device cpu|cuda] [--reps 300] [--json FILE]

Wall-clock per call, median of --reps calls (a synchronize after each on CUDA: the GPU work of
these graphs is a few µs per kernel, so the time is the host's). toroid's kernel count is read
from its Wrapper IR (kernel, library, device-kernel and fallback lines), so `per kernel` is the
call's time over the launches it makes.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402


def blocks(family, k, w):
    def fused(x):
        for _ in range(k):
            x = x - x.amax(-1, keepdim=True)
        return x

    def mm(x):
        for _ in range(k):
            x = torch.mm(x, w).relu()
        return x
    return fused if family == "fused" else mm


def timed(f, x, reps, cuda):
    for _ in range(10):
        f(x)
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f(x)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def launches(dump):
    """Kernel launches per call, from the Wrapper IR dumps of the last compile."""
    n = 0
    for path in glob.glob(os.path.join(dump, "*.wrapper")):
        with open(path) as f:
            for line in f:
                word = line.strip().split(" ", 1)[0]
                n += word in ("call", "extern", "device", "fallback", "user_kernel")
    return n


def toroid_fn(fn, x, dump):
    import toroid  # noqa: F401  registers the backend
    if hasattr(torch, "compile"):
        torch._dynamo.reset()
        return torch.compile(fn, backend="toroid", dynamic=False, options={"dump_dir": dump}), "torch.compile"
    from torch.fx.experimental.proxy_tensor import make_fx
    c = toroid.compile_graph(make_fx(fn)(x), [x], dump_dir=dump)
    return (lambda t: c(t)), "compile_graph(make_fx)"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--reps", type=int, default=300)
    p.add_argument("--json", default=None, help="append one JSON line per row here")
    a = p.parse_args()
    cuda = a.device == "cuda"
    x = torch.randn(8, 32, device=a.device)
    w = torch.randn(32, 32, device=a.device) / 6
    rows = []
    print("device %s, torch %s, x %s" % (a.device, torch.__version__, list(x.shape)))
    print("| family | blocks | eager µs | toroid µs | toroid launches | toroid µs per launch | Inductor µs | toroid path |")
    print("|---|---|---|---|---|---|---|---|")
    for family, k in [(f, k) for f in ("fused", "mm") for k in (1, 4, 16, 32)]:
        fn = blocks(family, k, w)
        eager = timed(fn, x, a.reps, cuda)
        dump = tempfile.mkdtemp(prefix="toroid-overhead-")
        tf, path = toroid_fn(fn, x, dump)
        got, want = tf(x), fn(x)
        got = got[0] if isinstance(got, (tuple, list)) else got
        if not torch.allclose(got, want, atol=1e-5, rtol=1e-5):
            raise SystemExit("toroid's result differs from eager for %d %s blocks" % (k, family))
        toroid_us = timed(tf, x, a.reps, cuda)
        n = launches(dump)
        inductor = None
        if hasattr(torch, "compile"):
            torch._dynamo.reset()
            fi = torch.compile(fn, dynamic=False)
            inductor = timed(fi, x, a.reps, cuda)
        row = {"device": a.device, "family": family, "blocks": k, "eager_us": eager, "toroid_us": toroid_us, "toroid_launches": n,
               "toroid_us_per_launch": toroid_us / max(n, 1), "inductor_us": inductor, "toroid_path": path,
               "torch": torch.__version__}
        rows.append(row)
        print("| %s | %d | %.1f | %.1f | %d | %.2f | %s | %s |" % (family, k, eager, toroid_us, n,
                                                                row["toroid_us_per_launch"],
                                                                "%.1f" % inductor if inductor else "-", path))
    if a.json:
        with open(a.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
