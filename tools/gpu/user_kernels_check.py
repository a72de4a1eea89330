#!/usr/bin/env python3
"""User kernels through torch.compile(backend="toroid") on torch 2.11 with Triton (issue 16): a
Triton add kernel, a Triton fused softmax, an autotuned Triton matmul, a torch.library.triton_op,
and CUDA C++ kernels registered with toroid.cuda_kernel.

    TOROID_LIBRARY=build/src/capi/libtoroid.so python3 tools/gpu/user_kernels_check.py [--dump DIR]

Each check compiles its function (dynamic shapes), runs it on inputs of two or three sizes and
compares with eager; it PASSes when every call matches, no node went to eager, and the Wrapper IR
clones exactly the written tensors whose old value is read later (the count each check expects).
The user_kernel lines of each Wrapper IR are printed.
"""
import argparse
import glob
import os
import re
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data_dependent_check import run_compiled  # noqa: E402
from dump_ttir import add_kernel  # noqa: E402,F401  (the Triton add kernel of the TTIR tests)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * out_row_stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.autotune(configs=[
    triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=3),
    triton.Config({"BM": 128, "BN": 64, "BK": 32}, num_warps=4, num_stages=4),
    triton.Config({"BM": 64, "BN": 128, "BK": 64}, num_warps=8, num_stages=3),
], key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def scale_inplace_kernel(x_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


CUDA_SOURCE = r'''
extern "C" __global__ void scale(float* v, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= a;
}
extern "C" __global__ void axpy(float* z, float a, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] += a * x[i];
}
'''

_triton_add_op = None


def triton_add_op():
    global _triton_add_op
    if _triton_add_op is None:
        from torch.library import triton_op, wrap_triton

        @triton_op("toroid_check::add", mutates_args=())
        def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            n = x.numel()
            wrap_triton(add_kernel)[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
            return out
        _triton_add_op = add
    return _triton_add_op


def wrapper_report(dump):
    """The user_kernel lines of the Wrapper IR dumps, and how many clones they write into (the
    buffers a kernel's comment names `clone of %x`)."""
    lines, clones = [], 0
    for path in sorted(glob.glob(os.path.join(dump, "*.wrapper"))):
        with open(path) as f:
            text = f.read()
        cloned = set(re.findall(r"(buf\d+) <- clone of ", text))
        for line in text.splitlines():
            if line.strip().startswith("user_kernel ") and "(" in line:
                line = re.sub(r"source=\S+", "", line.strip())
                written = re.findall(r"writes (buf\d+)", line)
                clones += sum(w in cloned for w in written)
                lines.append(line[:200] + (" [clone]" if any(w in cloned for w in written) else ""))
    return lines, clones


def check(name, fn, inputs_list, want_clones, root):
    dump = tempfile.mkdtemp(prefix=name + "-", dir=root)
    ok, graphs, fallbacks = run_compiled(torch, fn, inputs_list, dynamic=True, options={"dump_dir": dump})
    lines, clones = wrapper_report(dump)
    good = ok and not fallbacks and clones == want_clones and lines
    print("%s %s: match: %s; toroid graphs: %d; fallbacks: %s; clones: %d (want %d)" %
          ("PASS" if good else "FAIL", name, ok, graphs, fallbacks, clones, want_clones))
    for line in lines:
        print("    " + line)
    return good


def cases():
    dev = "cuda"

    def add(x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out * 2.0

    def softmax(x):
        rows, cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=1024)
        return out

    def matmul(a, b):
        M, K = a.shape
        _, N = b.shape
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        matmul_kernel[lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))](
            a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        return c

    def op(x, y):
        return triton_add_op()(x, y).relu()

    import toroid
    k_scale = toroid.cuda_kernel(CUDA_SOURCE, "scale")
    k_axpy = toroid.cuda_kernel(CUDA_SOURCE, "axpy")

    def cuda_cpp(x, y):
        t = x * 2.0
        z = torch.zeros_like(x)
        n = x.numel()
        k_scale(t, 3.0, n, grid=((n + 255) // 256,), block=(256,))  # nothing reads t's old value: no clone
        k_axpy(z, 0.5, y, n, grid=((n + 255) // 256,), block=(256,))  # z is read by the kernel only
        return t, z

    def triton_read_later(x):
        t = x + 1.0
        before = t * 1.0
        n = t.numel()
        scale_inplace_kernel[(triton.cdiv(n, 256),)](t, n, 2.0, BLOCK=256)
        return t + before.sum()

    yield "triton_add", add, [(torch.randn(n, device=dev), torch.randn(n, device=dev)) for n in (1000, 4096, 7)], 0
    yield "triton_softmax", softmax, [(torch.randn(r, c, device=dev),) for r, c in ((64, 1000), (33, 517))], 0
    yield "triton_matmul_autotune", matmul, [(torch.randn(m, k, device=dev), torch.randn(k, n, device=dev))
                                             for m, k, n in ((256, 128, 192), (100, 64, 70))], 0
    yield "triton_op", op, [(torch.randn(n, device=dev), torch.randn(n, device=dev)) for n in (1000, 33)], 0
    yield "cuda_kernel", cuda_cpp, [(torch.randn(n, device=dev), torch.randn(n, device=dev)) for n in (1000, 300)], 0
    yield "triton_clone_read_later", triton_read_later, [(torch.randn(n, device=dev),) for n in (1000, 70)], 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dump", default=None, help="keep the Wrapper IR dumps under this directory")
    p.add_argument("--only", default=None, help="comma-separated check names")
    a = p.parse_args()
    root = a.dump or tempfile.mkdtemp(prefix="toroid-user-kernels-")
    os.makedirs(root, exist_ok=True)
    only = set(a.only.split(",")) if a.only else None
    failed = 0
    for name, fn, inputs, clones in cases():
        if only and name not in only:
            continue
        try:
            failed += not check(name, fn, inputs, clones, root)
        except Exception:
            failed += 1
            print("FAIL %s: raised" % name)
            traceback.print_exc()
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
