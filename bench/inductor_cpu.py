"""PyTorch eager vs torch.compile (Inductor C++ backend) on CPU tensors, same graphs and shapes as
bench/graphs/*.tir. Prints a markdown table of median ms (warm-up first, median of --reps).

    python3 bench/inductor_cpu.py [--rows 8192] [--cols 4096] [--reps 10] [--json FILE]
"""
import argparse, json, statistics, time

import torch
import torch.nn.functional as F


def softmax(x):
    return torch.softmax(x, dim=-1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def rmsnorm_residual(x, r, w):
    h = x + r
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    return y, h


def gelu_affine(x, w, b):
    return F.gelu(x * w + b)


def cross_entropy(logits, raw):
    return F.cross_entropy(logits, torch.remainder(raw, logits.shape[-1]))


def add(x, y):
    return x + y


def make_inputs(rows, cols):
    g = torch.Generator().manual_seed(0)
    u = lambda *s: torch.rand(*s, generator=g) * 2 - 1
    x, r = u(rows, cols), u(rows, cols)
    w, b = u(cols), u(cols)
    raw = torch.randint(-8, 8, (rows,), generator=g)
    return {
        "add": (add, (x, r)),
        "softmax": (softmax, (x,)),
        "layer_norm": (layer_norm, (x, w, b)),
        "rmsnorm_residual": (rmsnorm_residual, (x, r, w)),
        "gelu_affine": (gelu_affine, (x, w, b)),
        "cross_entropy": (cross_entropy, (x, raw)),
    }


def bench(fn, args, reps, warmup=3):
    with torch.no_grad():
        for _ in range(warmup):
            fn(*args)
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(*args)
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, shape {a.rows}x{a.cols} f32")
    res = {}
    print("| graph | eager ms | inductor ms | compile s | max abs diff |")
    print("|---|---|---|---|---|")
    for name, (fn, args) in make_inputs(a.rows, a.cols).items():
        e = bench(fn, args, a.reps)
        torch._dynamo.reset()
        cfn = torch.compile(fn, dynamic=False)
        t0 = time.perf_counter()
        with torch.no_grad():
            out_c = cfn(*args)
        comp = time.perf_counter() - t0
        i = bench(cfn, args, a.reps)
        with torch.no_grad():
            out_e = fn(*args)
        oe = out_e if isinstance(out_e, tuple) else (out_e,)
        oc = out_c if isinstance(out_c, tuple) else (out_c,)
        diff = max(float((p - q).abs().max()) for p, q in zip(oe, oc))
        res[name] = {"eager_ms": e, "inductor_ms": i, "compile_s": comp, "max_abs_diff": diff}
        print(f"| {name} | {e:.2f} | {i:.2f} | {comp:.1f} | {diff:.2e} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
