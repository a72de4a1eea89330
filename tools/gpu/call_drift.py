#!/usr/bin/env python3
"""Whether a compiled CPU call's time drifts within one process (issue 18's 1 MB rows): the same
add of two [rows, cols] f32 tensors through torch.compile with toroid and with Inductor, and
eager, timed in alternating segments of --calls calls, with glibc's heap figures after each
segment (mallinfo2: bytes in the heap, in mmapped blocks, and how many blocks are mmapped). A
1 MB output sits above glibc's initial mmap threshold (128 KB): whether it comes from the heap or
from fresh pages each call can change as the dynamic threshold and heap trimming move. Run it
once plainly and once with MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ set to compare.

    TOROID_LIBRARY=build/src/capi/libtoroid.so PYTHONPATH=python python3 tools/gpu/call_drift.py \
        [--rows 256 --cols 1024] [--calls 2000] [--segments 10]
"""
import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402


class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def heap():
    """glibc's heap bytes, mmapped bytes and mmapped blocks now (None where glibc lacks mallinfo2)."""
    try:
        f = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return None
    f.restype = MallInfo2
    m = f()
    return m.arena, m.hblkhd, m.hblks


def add(x, y):
    return x + y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--segments", type=int, default=10)
    a = ap.parse_args()
    import toroid  # noqa: F401  (registers the backend)
    x, y = torch.rand(a.rows, a.cols), torch.rand(a.rows, a.cols)
    fresh = lambda: type(add)(add.__code__.replace(), add.__globals__, "add")  # noqa: E731 (a cache list each)
    fns = {"eager": add, "toroid": torch.compile(fresh(), backend="toroid", dynamic=False),
           "inductor": torch.compile(fresh(), dynamic=False)}
    env = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, add of two [{a.rows}, {a.cols}] f32, "
          f"environment {env or 'plain'}")
    print("| segment | " + " | ".join(f"{k} µs" for k in fns) + " | heap MB | mmapped MB | mmapped blocks |")
    print("|---" * (len(fns) + 4) + "|")
    keys = list(fns)
    with torch.no_grad():
        for f in fns.values():
            for _ in range(200):
                f(x, y)
        for s in range(a.segments):
            us = {}
            for k in keys[s % 3:] + keys[:s % 3]:
                f = fns[k]
                t0 = time.perf_counter()
                for _ in range(a.calls):
                    f(x, y)
                us[k] = (time.perf_counter() - t0) / a.calls * 1e6
            h = heap()
            hs = " | ".join(f"{v / 2**20:.1f}" for v in h[:2]) + f" | {h[2]}" if h else "- | - | -"
            print(f"| {s} | " + " | ".join(f"{us[k]:.2f}" for k in keys) + f" | {hs} |", flush=True)


if __name__ == "__main__":
    main()
