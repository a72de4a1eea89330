#!/usr/bin/env python3
"""User kernels in compiled functions (issue 16), timed: the functions of
tools/gpu/user_kernels_check.py (a Triton add, a Triton fused softmax, an autotuned Triton
matmul, a torch.library.triton_op, two toroid.cuda_kernel launches, a Triton kernel whose
written tensor is read later) at the sizes of real layers, run by eager PyTorch, by
torch.compile(backend="toroid") and by Inductor, side by side.

    PYTHONPATH=python TOROID_LIBRARY=build/src/capi/libtoroid.so \\
        python3 bench/user_kernels_bench.py [--json FILE] [--commit SHA]

Time per call: triton.testing.do_bench (CUDA events, L2 flushed between calls), median. The
floor is the kernels' bytes over the H100's HBM bandwidth (3.35 TB/s), what each function must
read and write at least, or for the matmul its flops over the TF32 tensor-core peak. Inductor runs the `cuda_kernel` case with toroid's eager launcher, so
that column is PyTorch's overhead around the same kernels.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "gpu"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import triton.testing  # noqa: E402

from user_kernels_check import cases  # noqa: E402

HBM = 3.35e12  # bytes/s
TF32 = 494.7e12  # dense tensor-core flop/s (tl.dot of fp32 takes TF32 by default)


def inputs(name):
    """Inputs at layer sizes, and the bytes the function moves at least (reads and writes)."""
    r = lambda *s: torch.randn(*s, device="cuda")  # noqa: E731
    n = 1 << 24
    if name in ("triton_add", "triton_op"):
        return (r(n), r(n)), 4 * n * 3 + 4 * n * 2  # the kernel, then the scale/relu pass
    if name == "triton_softmax":
        return (r(8192, 1024),), 4 * 8192 * 1024 * 2
    if name == "triton_matmul_autotune":
        return (r(2048, 2048), r(2048, 2048)), max(4 * 2048 * 2048 * 3, 2 * 2048 ** 3 / TF32 * HBM)
    if name == "cuda_kernel":
        return (r(n), r(n)), 4 * n * (2 + 2 + 3)  # x*2, scale in place, zeros + axpy
    if name == "triton_clone_read_later":
        return (r(n),), 4 * n * 6
    raise KeyError(name)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", default=None, help="append one JSON line per case to this file")
    p.add_argument("--commit", default=None, help="the toroid commit measured, recorded in each JSON line")
    a = p.parse_args()
    import toroid  # noqa: F401  registers the backend
    rows = []
    print("%-24s %10s %10s %10s %10s %8s %8s" % ("case", "floor us", "eager us", "toroid us", "inductor us",
                                               "t/ind", "t/floor"))
    for name, fn, _, _ in cases():
        args, nbytes = inputs(name)
        times = {}
        for mode in ("eager", "toroid", "inductor"):
            torch._dynamo.reset()
            f = fn if mode == "eager" else torch.compile(fn, backend=mode if mode == "toroid" else "inductor")
            f(*args)
            times[mode] = triton.testing.do_bench(lambda: f(*args), return_mode="median") * 1e3
        floor = nbytes / HBM * 1e6
        row = dict(date=time.strftime("%Y-%m-%d"), commit=a.commit, case=name, floor_us=round(floor, 2), **{k + "_us": round(v, 2) for k, v in times.items()},
                   toroid_over_inductor=round(times["toroid"] / times["inductor"], 3),
                   device=torch.cuda.get_device_name())
        rows.append(row)
        print("%-24s %10.1f %10.1f %10.1f %10.1f %8.2f %8.2f" % (name, floor, times["eager"], times["toroid"],
                                                               times["inductor"], times["toroid"] / times["inductor"],
                                                               times["toroid"] / floor))
    if a.json:
        with open(a.json, "a") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
