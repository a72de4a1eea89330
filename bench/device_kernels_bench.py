#!/usr/bin/env python3
"""toroid's device kernels for the ops Inductor leaves to ATen or scatters with atomics, through
torch.compile as a user calls them: toroid, eager PyTorch and Inductor on the same inputs, fp32
and bf16, at the sizes of GPT-2's embedding backward and sampling (vocabulary 50257).

    TOROID_LIBRARY=build/src/capi/libtoroid.so PYTHONPATH=python python3 bench/device_kernels_bench.py \
        [--json bench/results/device-kernels-cuda.json]

Each case is timed with triton.testing.do_bench (median of CUDA-event timed calls, the host
call included since each is one compiled graph). The floor is the bytes the op must move
(read its inputs once, write its outputs once) over the device's peak bandwidth (--bandwidth,
GB/s; H100 SXM: 3350); `deterministic` runs the same index_put with
torch.use_deterministic_algorithms(True) (toroid's sorted form; eager and Inductor their own).
`result` is ok when toroid's values are no further from an f64 computation than eager's (twice,
for atomics' varying order) and sort/topk indices select the values returned.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import toroid  # noqa: E402,F401  registers the backend


def cases(dtype):
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    es = torch.tensor([], dtype=dtype).element_size()
    vocab, d, tokens = 50257, 768, 8192
    idx = torch.randint(0, vocab, (tokens,), device=dev, generator=g)
    grads = torch.randn(tokens, d, device=dev, generator=g).to(dtype)
    table = torch.zeros(vocab, d, device=dev, dtype=dtype)
    logits = torch.randn(64, vocab, device=dev, generator=g).to(dtype)
    rows = torch.randn(256, 4096, device=dev, generator=g).to(dtype)
    big = torch.randn(4096, 1024, device=dev, generator=g).to(dtype)
    sidx = torch.randint(0, 4096, (4096, 1024), device=dev, generator=g)
    return [
        # name, fn, inputs, bytes moved
        ("embedding backward (index_put, accumulate) [50257, 768] <- 8192 rows",
         lambda t, i, v: t.index_put((i,), v, accumulate=True), (table, idx, grads),
         2 * table.numel() * es + grads.numel() * es + idx.numel() * 8),
        ("scatter_add [4096, 1024] dim 0", lambda x, i, s: x.scatter_add(0, i, s), (big, sidx, big),
         3 * big.numel() * es + sidx.numel() * 8),
        ("scatter_reduce amax [4096, 1024] dim 0", lambda x, i, s: x.scatter_reduce(0, i, s, "amax"), (big, sidx, big),
         3 * big.numel() * es + sidx.numel() * 8),
        ("cumsum [64, 50257] dim 1 (top-p)", lambda x: torch.cumsum(x, 1), (logits,), 2 * logits.numel() * es),
        ("sort [64, 50257] descending (top-p)", lambda x: torch.sort(x, -1, descending=True), (logits,),
         logits.numel() * (2 * es + 8)),
        ("topk 50 of [64, 50257] (top-k)", lambda x: torch.topk(x, 50, -1), (logits,), logits.numel() * es),
        ("sort [256, 4096]", lambda x: torch.sort(x, -1), (rows,), rows.numel() * (2 * es + 8)),
    ]


def timed(fn, inputs):
    from triton.testing import do_bench
    return do_bench(lambda: fn(*inputs), warmup=25, rep=200, return_mode="median")


def accurate(fn, inputs, got):
    """toroid's values no further from the f64 result than eager's (bf16 eager cumsum drifts by
    many ulps; toroid accumulates in double), and its indices select its values."""
    as_tuple = lambda v: v if isinstance(v, (tuple, list)) else (v,)  # noqa: E731
    exact = as_tuple(fn(*[t.double() if t.is_floating_point() else t for t in inputs]))
    want, got = as_tuple(fn(*inputs)), as_tuple(got)
    ok = True
    for g, w, e in zip(got, want, exact):
        if g.dtype == torch.int64 and g.shape == got[0].shape and len(got) == 2:  # sort/topk indices
            x = inputs[0]
            ok = ok and torch.equal(x.gather(-1, g), got[0])
            continue
        err_t, err_e = (g.double() - e).abs().max().item(), (w.double() - e).abs().max().item()
        ok = ok and err_t <= 2 * err_e + 1e-6 * (1 + e.abs().max().item())
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bandwidth", type=float, default=3350.0, help="peak GB/s")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for deterministic in (False, True):
            torch.use_deterministic_algorithms(deterministic, warn_only=True)
            for name, fn, inputs, nbytes in cases(dtype):
                if deterministic and "index_put" not in name and "scatter_add" not in name:
                    continue
                torch._dynamo.reset()
                eager = timed(fn, inputs)
                tor = torch.compile(fn, backend="toroid")
                ind = torch.compile(fn)
                ok = accurate(fn, inputs, tor(*inputs))
                t_tor, t_ind = timed(tor, inputs), timed(ind, inputs)
                floor = nbytes / (args.bandwidth * 1e9) * 1e3
                rows.append({"case": name + (" [deterministic]" if deterministic else ""),
                             "dtype": str(dtype).replace("torch.", ""), "match": ok, "floor_ms": floor,
                             "eager_ms": eager, "toroid_ms": t_tor, "inductor_ms": t_ind})
                r = rows[-1]
                print("| %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f |" % (
                    r["case"], r["dtype"], "ok" if ok else "MISMATCH", floor, eager, t_tor, t_ind,
                    eager / t_tor, t_ind / t_tor), flush=True)
    torch.use_deterministic_algorithms(False)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    print("| case | dtype | result | floor ms | eager ms | toroid ms | Inductor ms | eager/toroid | Inductor/toroid |")
    print("|---|---|---|---|---|---|---|---|---|")
    main()
