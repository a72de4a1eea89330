#!/usr/bin/env python3
"""Prints what torch.compile hands a backend for user Triton kernels, and what Triton's compiled
kernels hold (signature, constants, metadata, PTX parameters), for the installed torch and
Triton. toroid's frontend reads these; run this after upgrading either.

    python3 tools/gpu/triton_probe.py
"""
import re

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=8)],
                 key=["n"])
@triton.jit
def tuned_add(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def show_graphs(name, fn, *args):
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    def fw(gm, inputs):
        print(f"--- {name}: aot graph")
        print(gm.graph)
        for n in gm.graph.nodes:
            if n.op == "call_function" and "triton" in str(n.target):
                print("   target", n.target, "kwargs", {k: v for k, v in n.kwargs.items()})
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    out = torch.compile(fn, backend=aot_autograd(fw_compiler=fw), dynamic=True)(*args)
    return out


def main():
    print("torch", torch.__version__, "triton", triton.__version__)
    x = torch.randn(1000, device="cuda")
    y = torch.randn(1000, device="cuda")

    def f(x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        return out + 1

    show_graphs("add", f, x, y)

    def g(x):
        out = torch.empty_like(x)
        n = x.numel()
        tuned_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out

    show_graphs("autotune", g, x)

    from torch.library import triton_op, wrap_triton

    @triton_op("probe::add", mutates_args=())
    def probe_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        wrap_triton(add_kernel)[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
        return out

    show_graphs("triton_op", lambda a, b: probe_add(a, b) * 2, x, y)

    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table
    print("side table kernels", {k: type(v).__name__ for k, v in kernel_side_table.id_to_kernel.items()})
    print("side table constants", dict(kernel_side_table.constant_args))

    # A compiled kernel without launching it.
    for n_value in (1000, 1024, 1):
        k = add_kernel.warmup(x, y, x, n_value, BLOCK=256, grid=(1,))
        print(f"--- warmup n={n_value}: type", type(k).__name__)
        print("   name", k.name, "metadata", {f: getattr(k.metadata, f) for f in k.metadata._fields})
        print("   src.signature", getattr(k.src, "signature", None))
        print("   src.constants", getattr(k.src, "constants", None))
        print("   src.attrs", getattr(k.src, "attrs", None))
        ptx = k.asm["ptx"]
        entry = re.search(r"\.entry\s+(\w+)\s*\((.*?)\)", ptx, re.S)
        print("   ptx entry", entry.group(1), [p.strip() for p in entry.group(2).split(",")])
        print("   asm keys", list(k.asm.keys()), "cubin bytes", len(k.asm["cubin"]))
    print("has launch_metadata", hasattr(k, "launch_metadata"), "run", hasattr(k, "run"))


if __name__ == "__main__":
    main()
