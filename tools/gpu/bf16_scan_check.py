#!/usr/bin/env python3
"""bf16 cumsum and scatter_add through torch.compile(backend="toroid") against eager and an f64
ground truth: the largest error of each, and where toroid and eager differ most.

    TOROID_LIBRARY=build/src/capi/libtoroid.so PYTHONPATH=python python3 tools/gpu/bf16_scan_check.py
"""
import torch
import toroid  # noqa: F401

g = torch.Generator(device="cuda").manual_seed(0)
logits = torch.randn(64, 50257, device="cuda", generator=g).to(torch.bfloat16)
big = torch.randn(4096, 1024, device="cuda", generator=g).to(torch.bfloat16)
sidx = torch.randint(0, 4096, (4096, 1024), device="cuda", generator=g)
for name, fn, inputs in (("cumsum", lambda x: torch.cumsum(x, 1), (logits,)),
                         ("scatter_add", lambda x, i, s: x.scatter_add(0, i, s), (big, sidx, big))):
    torch._dynamo.reset()
    got = torch.compile(fn, backend="toroid")(*inputs).double()
    want = fn(*inputs).double()
    exact = fn(*[t.double() if t.is_floating_point() else t for t in inputs])
    d = (got - want).abs()
    at = d.argmax()
    print("%s: toroid vs eager max %.4g at %d (toroid %.6g, eager %.6g, f64 %.6g); toroid vs f64 %.4g, eager vs f64 %.4g"
          % (name, d.max().item(), at.item(), got.flatten()[at].item(), want.flatten()[at].item(),
             exact.flatten()[at].item(), (got - exact).abs().max().item(), (want - exact).abs().max().item()))
