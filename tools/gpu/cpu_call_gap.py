#!/usr/bin/env python3
"""Where a CPU call through torch.compile(backend="toroid") spends the time its kernel alone does
not: row_sum (x.float().sum(-1), 8 MB of input) in f32 and bf16, timed as the compiled function,
as the kernel's shared object called through ctypes in this process on the same tensors, and
on buffers of its own. A gap between the last two is the process (threads, memory), between
the first two the call path.

    TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/cpu_call_gap.py
"""
import ctypes
import glob
import os
import statistics
import subprocess
import tempfile
import time

import torch

import toroid  # noqa: F401  (registers the backend)


def per_call_us(fn, calls=300):
    for _ in range(20):
        fn()
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(rounds)


def kernel_so(cache):
    found = glob.glob(os.path.join(cache, "so-*", "kernels.so"))
    assert len(found) == 1, f"one kernel module expected in {cache}: {found}"
    return found[0]


def main():
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS')}")
    print("| dtype | compiled fn us | Inductor fn us | kernel via ctypes, torch's tensors us | kernel via ctypes, own buffers us |")
    print("|---|---|---|---|---|")
    for dtype, rows in ((torch.float32, 2048), (torch.bfloat16, 4096)):
        x = (torch.rand(rows, 1024) * 2 - 1).to(dtype)
        cache = os.environ["TOROID_CACHE_DIR"] = tempfile.mkdtemp()  # this compile's module alone
        torch._dynamo.reset()
        f = torch.compile(lambda t: t.float().sum(-1), backend="toroid", dynamic=False)
        g = torch.compile(lambda t: t.float().sum(-1), dynamic=False)
        with torch.no_grad():
            f(x)
            g(x)
            so = kernel_so(cache)
            # The kernel's content symbol (tk_cpu_<hash>): its only export of that form.
            names = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True, text=True).stdout.split()
            kernel = getattr(ctypes.CDLL(so), next(n for n in names if n.startswith("tk_cpu_")))
            out = torch.empty(rows)
            bufs = (ctypes.c_void_p * 2)(out.data_ptr(), x.data_ptr())
            own_in = ctypes.create_string_buffer(x.numel() * x.element_size())
            own_out = ctypes.create_string_buffer(rows * 4)
            own = (ctypes.c_void_p * 2)(ctypes.addressof(own_out), ctypes.addressof(own_in))
            t_f = per_call_us(lambda: f(x))
            t_g = per_call_us(lambda: g(x))
            t_k = per_call_us(lambda: kernel(bufs, None))
            t_o = per_call_us(lambda: kernel(own, None))
        print(f"| {str(dtype).replace('torch.', '')} | {t_f:.1f} | {t_g:.1f} | {t_k:.1f} | {t_o:.1f} |", flush=True)


if __name__ == "__main__":
    main()
