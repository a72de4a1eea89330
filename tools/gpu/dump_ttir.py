#!/usr/bin/env python3
"""Compiles the Triton kernels below with the installed Triton and writes each one's TTIR (the IR
toroid's mutation analysis reads) to DIR/<name>.ttir, for the lit tests of that analysis
(tests/lit/kernels/Inputs/ttir/), and its PTX (what toroid launches) to DIR/<name>.ptx.

    python3 tools/gpu/dump_ttir.py DIR

Each kernel's docstring says which pointer arguments it writes.
"""
import os
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """writes out_ptr"""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def atomic_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    """writes total_ptr (an atomic)"""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))


@triton.jit
def loop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """writes out_ptr, inside a loop whose pointers advance (scf.for iter_args)"""
    xs = x_ptr + tl.arange(0, BLOCK)
    os_ = out_ptr + tl.arange(0, BLOCK)
    for _ in range(0, n, BLOCK):
        tl.store(os_, tl.load(xs) * 2.0)
        xs += BLOCK
        os_ += BLOCK


@triton.jit
def read_only_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """writes nothing (Triton removes its loads: device_assert is off by default)"""
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n)
    tl.device_assert(v == v)


@triton.jit
def two_of_four_kernel(a_ptr, b_ptr, c_ptr, d_ptr, n, BLOCK: tl.constexpr):
    """writes b_ptr and d_ptr"""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(b_ptr + offs, tl.load(a_ptr + offs, mask=m), mask=m)
    tl.store(d_ptr + offs, tl.load(c_ptr + offs, mask=m), mask=m)


@triton.jit(noinline=True)
def store_helper(p, v):
    tl.store(p, v)


@triton.jit
def call_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """writes out_ptr through a noinline function (tt.call; noinline takes scalars only)"""
    i = tl.program_id(0)
    store_helper(out_ptr + i, tl.load(x_ptr + i))


@triton.jit
def block_ptr_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """writes out_ptr through a block pointer (tt.make_tensor_ptr, tt.advance)"""
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(tl.advance(dst, (0, 0)), tl.load(src))


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    """writes out_ptr (the tutorial's fused softmax)"""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    f = lambda *s: torch.empty(*s, device="cuda")  # noqa: E731
    cases = {
        "add": (add_kernel, (f(1024), f(1024), f(1024), 1024), dict(BLOCK=256)),
        "atomic": (atomic_kernel, (f(1024), f(1), 1024), dict(BLOCK=256)),
        "loop": (loop_kernel, (f(1024), f(1024), 1024), dict(BLOCK=256)),
        "read_only": (read_only_kernel, (f(256), f(256), 256), dict(BLOCK=256)),
        "two_of_four": (two_of_four_kernel, (f(64), f(64), f(64), f(64), 64), dict(BLOCK=64)),
        "call": (call_kernel, (f(64), f(64)), dict(BLOCK=64)),
        "block_ptr": (block_ptr_kernel, (f(64, 64), f(64, 64), 64, 64), dict(BM=32, BN=32)),
        "softmax": (softmax_kernel, (f(8, 128), f(8, 128), 128, 128), dict(BLOCK=128)),
    }
    for name, (kernel, args, meta) in cases.items():
        compiled = kernel.warmup(*args, grid=(1,), **meta)
        with open(os.path.join(out_dir, name + ".ttir"), "w") as fh:
            fh.write("// " + kernel.fn.__name__ + ": " + kernel.fn.__doc__ + "\n" + compiled.asm["ttir"])
        with open(os.path.join(out_dir, name + ".ptx"), "w") as fh:
            fh.write(compiled.asm["ptx"])
        print(name, "ok")


if __name__ == "__main__":
    main()
