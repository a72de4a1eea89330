#!/usr/bin/env python3
"""Data-dependent programs through torch.compile(backend="toroid") on torch 2.11 (issue 15):
item() feeding a kernel, an int item() as a size, nonzero + gather, a boolean mask, torch.cond
on a device predicate, torch.while_loop, an SGD loop whose lr changes every step, the sort, topk
and scatter device kernels, and their deterministic forms.

    TOROID_LIBRARY=build/src/capi/libtoroid.so python3 tools/gpu/data_dependent_check.py [--device cuda]

dynamo runs with capture_scalar_outputs and capture_dynamic_output_shape_ops on, so item() and
nonzero stay in the graph. Each check prints PASS when every call matches eager and no node was
sent to eager (the fallbacks are listed), else FAIL; the exit status is 1 when any fails.
"""
import argparse
import logging
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_frontend_check import CompileCounter, close  # noqa: E402


def run_compiled(torch, fn, inputs_list, dynamic=None, options=None):
    """fn compiled with toroid (torch.compile's `options`) over each inputs tuple: (all match
    eager, graphs, fallbacks)."""
    import toroid  # noqa: F401  registers the backend
    torch._dynamo.reset()
    counter = CompileCounter()
    log = logging.getLogger("toroid")
    log.addHandler(counter)
    log.setLevel(logging.INFO)
    try:
        f = torch.compile(fn, backend="toroid", dynamic=dynamic, options=options)
        ok = True
        for inputs in inputs_list:
            got, want = f(*inputs), fn(*inputs)
            got = got if isinstance(got, (tuple, list)) else (got,)
            want = want if isinstance(want, (tuple, list)) else (want,)
            ok = ok and len(got) == len(want) and all(
                g.shape == w.shape and close(torch, g, w) for g, w in zip(got, want))
    finally:
        log.removeHandler(counter)
    return ok, counter.graphs, counter.fallbacks


def report(ok, graphs, fallbacks, extra=""):
    return ok and not fallbacks, "match: %s; toroid graphs: %d; fallbacks: %s%s" % (ok, graphs, fallbacks, extra)


def check_item_feed(torch, device):
    def fn(x):
        return x / (x.abs().max().item() + 1.0)
    xs = [(torch.randn(n, device=device),) for n in (64, 64, 64)]
    return report(*run_compiled(torch, fn, xs))


def check_item_size(torch, device):
    w = torch.randn(3, device=device)

    def fn(x):
        n = (x > 0).sum().item()
        torch._check(n >= 0)
        return torch.ones(n, 3, device=x.device) * w
    xs = [(torch.randn(32, device=device),) for _ in range(3)]
    return report(*run_compiled(torch, fn, xs))


def check_nonzero_gather(torch, device):
    t = torch.randn(32, 8, device=device)

    def fn(x):
        idx = (x > 0).nonzero().squeeze(1)
        return torch.index_select(t, 0, idx) * 2.0
    xs = [(torch.randn(32, device=device),) for _ in range(3)]
    return report(*run_compiled(torch, fn, xs))


def check_bool_mask(torch, device):
    def fn(x):
        return x[x > 0] * 2.0
    xs = [(torch.randn(32, device=device),) for _ in range(3)]
    return report(*run_compiled(torch, fn, xs))


def check_cond(torch, device):
    def fn(x, y):
        return torch.cond(x.sum() > 0, lambda a, b: (a * b).exp(), lambda a, b: (a - b).tanh(), (x, y))
    xs = [(torch.randn(64, device=device) + s, torch.randn(64, device=device)) for s in (2.0, -2.0, 2.0)]
    return report(*run_compiled(torch, fn, xs))


def check_while_loop(torch, device):
    from torch._higher_order_ops.while_loop import while_loop

    def fn(i, x):
        def cond_fn(i, x):
            return x.abs().max() > 1.0

        def body_fn(i, x):
            return i + 1, x * 0.5
        return while_loop(cond_fn, body_fn, (i, x))
    xs = [(torch.zeros((), dtype=torch.int64, device=device), torch.randn(64, device=device) * s) for s in (40, 3, 0.5)]
    return report(*run_compiled(torch, fn, xs))


def check_sgd_lr(torch, device):
    """An SGD loop whose lr changes every step compiles once: with dynamic=True the lr is a float
    symbol from the first call (by default dynamo first specializes it, then compiles a second,
    dynamic graph, as it does for sizes: two, and none after)."""
    import torch._dynamo.config as dynamo_config
    old = getattr(dynamo_config, "specialize_float", True)
    dynamo_config.specialize_float = False
    try:
        def step(p, g, lr):
            return p - lr * g
        p, g = torch.randn(256, device=device), torch.randn(256, device=device)
        lrs = [(p, g, 0.1 / (k + 1)) for k in range(10)]
        ok, graphs, fallbacks = run_compiled(torch, step, lrs, dynamic=True)
        ok2, graphs2, fallbacks2 = run_compiled(torch, step, lrs)
    finally:
        dynamo_config.specialize_float = old
    return ok and ok2 and graphs == 1 and graphs2 <= 2 and not fallbacks + fallbacks2, (
        "10 learning rates match: %s; toroid graphs with dynamic=True: %d (want 1), by default: %d (want <= 2); "
        "fallbacks: %s" % (ok and ok2, graphs, graphs2, fallbacks + fallbacks2))


def check_sort_scatter(torch, device):
    """sort, argsort and topk over rows longer than one block's bitonic network, scatter_reduce
    (amax without self, mean with it), index_add with an alpha and scatter of a value: device
    kernels on the GPU, no fallback."""
    def fn(x, idx, src, base):
        v, i = torch.sort(x, dim=-1, descending=True)
        order = torch.argsort(x, dim=0)
        tv, ti = torch.topk(x, 5, dim=-1)
        amax = base.scatter_reduce(0, idx, src, "amax", include_self=False)
        mean = base.scatter_reduce(0, idx, src, "mean")
        added = base.index_add(0, idx[:, 0], src, alpha=0.5)
        filled = base.scatter(0, idx, 1.5)
        return v, i, order, tv, ti, amax, mean, added, filled

    def inputs(seed):
        g = torch.Generator(device=device).manual_seed(seed)
        return (torch.randn(16, 3000, device=device, generator=g),
                torch.randint(0, 10, (20, 8), device=device, generator=g),
                torch.randn(20, 8, device=device, generator=g), torch.randn(10, 8, device=device, generator=g))
    return report(*run_compiled(torch, fn, [inputs(1), inputs(2)]))


def check_deterministic(torch, device):
    """With torch.use_deterministic_algorithms(True): index_put with accumulate (embedding
    backward's form, thousands of repeats per row), scatter_add, index_add and a scatter_reduce
    mean compile to the sorted device kernels: they match eager, no fallback, and two runs agree
    bit for bit."""
    def fn(w, idx, vals, z, j, s):
        a = w.index_put((idx,), vals, accumulate=True)
        b = z.scatter_add(0, j, s)
        c = z.index_add(0, j[:, 0], s, alpha=2.0)
        d = z.scatter_reduce(0, j, s, "mean", include_self=False)
        return a, b, c, d

    g = torch.Generator(device=device).manual_seed(3)
    inputs = (torch.randn(1000, 64, device=device, generator=g),
              torch.randint(0, 50, (4096,), device=device, generator=g),
              torch.randn(4096, 64, device=device, generator=g), torch.randn(50, 64, device=device, generator=g),
              torch.randint(0, 50, (4096, 64), device=device, generator=g),
              torch.randn(4096, 64, device=device, generator=g))
    old = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)  # eager has no deterministic index_add
    try:
        import toroid  # noqa: F401
        ok, graphs, fallbacks = run_compiled(torch, fn, [inputs])
        f = torch.compile(fn, backend="toroid")
        first, second = f(*inputs), f(*inputs)
        same = all(torch.equal(x, y) for x, y in zip(first, second))
    finally:
        torch.use_deterministic_algorithms(old[0], warn_only=old[1])
    return report(ok and same, graphs, fallbacks, "; two runs bitwise equal: %s" % same)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="  %(message)s")  # each fallback, with its reason
    import torch
    import torch._dynamo.config as dynamo_config
    dynamo_config.capture_scalar_outputs = True
    dynamo_config.capture_dynamic_output_shape_ops = True
    print("torch %s, device %s" % (torch.__version__, args.device))
    failed = 0
    checks = (("item_feed", check_item_feed), ("item_size", check_item_size), ("nonzero_gather", check_nonzero_gather),
              ("bool_mask", check_bool_mask), ("cond", check_cond), ("while_loop", check_while_loop),
              ("sgd_lr", check_sgd_lr), ("sort_scatter", check_sort_scatter), ("deterministic", check_deterministic))
    for name, check in checks:
        if args.only and name != args.only:
            continue
        try:
            ok, what = check(torch, args.device)
        except Exception:
            ok, what = False, traceback.format_exc()[-3000:]
        failed += not ok
        print("%s: %s  %s" % (name, "PASS" if ok else "FAIL", what), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
