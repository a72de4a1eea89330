#!/usr/bin/env python3
"""scaled_dot_product_attention through torch.compile(backend="toroid") (torch >= 2.0): results
and gradients against eager's fused kernels, the number of ops left to eager, and the time of
one attention layer's call against eager and Inductor.

  TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/attention_check.py [--device cuda]
      [--json FILE --commit SHA]

Cases: causal, a bool mask with a query that sees no key, an additive float mask, an explicit
scale, grouped-query heads (torch >= 2.5), bf16, and the backward of a causal call. Timing: q,
k, v of GPT-2's shapes (batch 2, 12 heads, 128 tokens, 64 per head) in fp32 and bf16, forward
and forward+backward. Prints PASS/FAIL lines and a table; exits 1 on a failure."""
import argparse
import json
import platform
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", default=None)
    ap.add_argument("--commit", default="")
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    import torch
    import toroid
    import toroid.backend
    F = torch.nn.functional
    dev = args.device
    failures = 0
    fallbacks = []
    toroid.backend.listeners.append(lambda name, compiled, backward: fallbacks.extend(compiled.fallbacks))

    def check(cond, what):
        nonlocal failures
        print(("PASS " if cond else "FAIL ") + what, flush=True)
        failures += 0 if cond else 1

    def qkv(dtype=torch.float32, B=2, H=4, L=33, S=33, E=64, KH=None, grad=False):
        g = torch.Generator(device=dev).manual_seed(0)
        t = [torch.randn(B, h, n, E, device=dev, generator=g, dtype=dtype) for h, n in ((H, L), (KH or H, S), (KH or H, S))]
        return [x.requires_grad_(grad) for x in t]

    cases = [("causal", {}, dict(is_causal=True)), ("scale", {}, dict(scale=0.2)),
             ("bf16 causal", dict(dtype=torch.bfloat16), dict(is_causal=True))]
    keep = torch.rand(2, 1, 33, 33, device=dev) > 0.3
    keep[0, 0, 5] = False
    cases.append(("bool mask, a query with no key", {}, dict(attn_mask=keep)))
    cases.append(("float mask", {}, dict(attn_mask=torch.randn(33, 33, device=dev))))
    if "enable_gqa" in F.scaled_dot_product_attention.__doc__:
        cases.append(("grouped-query heads", dict(H=8, KH=2), dict(enable_gqa=True)))
    for name, shape, kw in cases:
        torch._dynamo.reset()
        fallbacks.clear()
        q, k, v = qkv(**shape)
        want = F.scaled_dot_product_attention(q, k, v, **kw)
        got = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw), backend="toroid")(q, k, v)
        err = (got.float() - want.float()).abs().max().item()
        tol = 2e-2 if q.dtype == torch.bfloat16 else 1e-4
        check(err < tol and not fallbacks, "%s: max abs err %.2e, %d ops left to eager %s" % (
            name, err, len(fallbacks), [f[1] for f in fallbacks]))

    torch._dynamo.reset()
    fallbacks.clear()
    q, k, v = qkv(grad=True)
    f = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), backend="toroid")
    dout = torch.randn_like(q)
    got = torch.autograd.grad(f(q, k, v), (q, k, v), dout)
    want = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v), dout)
    err = max((a - b).abs().max().item() for a, b in zip(got, want))
    check(err < 1e-4 and not fallbacks, "backward, causal: max abs err of dq, dk, dv %.2e, %d ops left to eager" % (
        err, len(fallbacks)))

    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for train in (False, True):
            q, k, v = qkv(dtype, B=2, H=12, L=128, S=128, E=64, grad=train)

            def layer(q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            fns = {"eager": layer}
            for backend in ("toroid", "inductor"):
                torch._dynamo.reset()
                fns[backend] = torch.compile(layer, backend=backend)
                fns[backend](q, k, v)
            ms = {}
            for b, fn in fns.items():
                def call():
                    out = fn(q, k, v)
                    if train:
                        out.sum().backward()
                for _ in range(10):
                    call()
                torch.cuda.synchronize() if dev == "cuda" else None
                t = time.perf_counter()
                for _ in range(args.calls):
                    call()
                torch.cuda.synchronize() if dev == "cuda" else None
                ms[b] = (time.perf_counter() - t) * 1e3 / args.calls
            row = dict(date=time.strftime("%Y-%m-%d"), commit=args.commit, device=dev,
                       gpu=torch.cuda.get_device_name() if dev == "cuda" else platform.processor(),
                       torch=torch.__version__, dtype=str(dtype).split(".")[-1],
                       step="fwd+bwd" if train else "fwd", shape="2x12x128x64 causal",
                       eager_ms=round(ms["eager"], 4), toroid_ms=round(ms["toroid"], 4),
                       inductor_ms=round(ms["inductor"], 4))
            rows.append(row)
            print("%-5s %-8s eager %.4f ms  toroid %.4f ms  inductor %.4f ms  (inductor/toroid %.2f)" % (
                row["dtype"], row["step"], ms["eager"], ms["toroid"], ms["inductor"], ms["inductor"] / ms["toroid"]),
                flush=True)
    if args.json:
        with open(args.json, "a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    print("attention_check: %d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
