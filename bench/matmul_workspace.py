#!/usr/bin/env python3
"""cuBLASLt's workspace limit against matmul speed: torch.compile(backend="toroid") of one
matmul (bias added: addmm) at the shapes of transformer layers and of skinny products where
split-K algorithms need workspace, fp32 and bf16, beside eager PyTorch (its own 32 MiB workspace
on Hopper). Run once per limit, each in a process of its own (the limit is read once):

    for w in 32 4 1; do TOROID_CUBLASLT_WORKSPACE_MIB=$w TOROID_LIBRARY=... PYTHONPATH=python \\
        python3 bench/matmul_workspace.py --tag ws$w; done

Prints one line per shape and dtype: TFLOP/s of toroid and eager (CUDA events, median of 50).
"""
import argparse
import os
import statistics

import torch

SHAPES = [  # (m, n, k)
    (256, 768, 768), (256, 3072, 768), (256, 768, 3072), (512, 2304, 768),   # BERT/GPT-2 layers, batch 2-4 x 128
    (64, 4096, 1024), (64, 1024, 4096),                                      # the MLP case
    (4096, 4096, 4096), (1024, 2048, 8192), (128, 1024, 16384), (32, 4096, 32768),  # large, and skinny long-K
]


def time_ms(f, reps=50):
    for _ in range(5):
        f()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tag", default=os.environ.get("TOROID_CUBLASLT_WORKSPACE_MIB", "default"))
    a = ap.parse_args()
    import toroid  # noqa: F401
    for dtype in (torch.float32, torch.bfloat16):
        for m, n, k in SHAPES:
            x = torch.randn(m, k, device="cuda", dtype=dtype)
            w = torch.randn(k, n, device="cuda", dtype=dtype)
            bias = torch.randn(n, device="cuda", dtype=dtype)
            fn = lambda x, w, bias: torch.addmm(bias, x, w)  # noqa: E731
            torch._dynamo.reset()
            compiled = torch.compile(fn, backend="toroid", dynamic=False)
            with torch.no_grad():
                t = time_ms(lambda: compiled(x, w, bias))
                e = time_ms(lambda: fn(x, w, bias))
            flops = 2 * m * n * k
            print("%s %s m=%d n=%d k=%d: toroid %.1f TFLOP/s (%.3f ms), eager %.1f TFLOP/s (%.3f ms)" % (
                a.tag, str(dtype).replace("torch.", ""), m, n, k, flops / t / 1e9, t, flops / e / 1e9, e), flush=True)


if __name__ == "__main__":
    main()
