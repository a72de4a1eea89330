#!/usr/bin/env python3
"""The cost of the data-dependent Wrapper IR lines on the GPU: an item() read, a cond, and one
while_loop iteration, each as the difference between two graphs that do the same kernel work,
one with the line and one without. Also eager PyTorch doing the same (x.max().item(), a Python
if on a device value, a Python while loop), for scale.

    python3 bench/control_flow_bench.py --lib build/src/capi/libtoroid.so [--reps 200] [--json FILE]

Times are host wall-clock per call (the lines' cost is host time and device syncs, which CUDA
events inside one stream would not show), after a synchronize, median of --reps calls.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_bench import Toroid  # noqa: E402

import torch  # noqa: E402

N = 4096


def item_graphs():
    with_item = f"""graph @with_item functional {{
  sym uf0 : float, unbacked
  %x = input : f32[{N}]
  %a = aten.abs.default(%x) : f32[{N}]
  %m = aten.max.default(%a) : f32[]
  %v = aten._local_scalar_dense.default(%m) : float{{value=uf0}}
  %y = aten.div.Tensor(%x, uf0 + 1.0) : f32[{N}]
  output %y
}}
"""
    without = f"""graph @without_item functional {{
  %x = input : f32[{N}]
  %a = aten.abs.default(%x) : f32[{N}]
  %m = aten.max.default(%a) : f32[]
  %m1 = aten.add.Tensor(%m, 1.0) : f32[]
  %y = aten.div.Tensor(%x, %m1) : f32[{N}]
  output %y
}}
"""
    return with_item, without


def cond_graphs():
    with_cond = f"""graph @with_cond functional {{
  %x = input : f32[{N}]
  %y = input : f32[{N}]
  %s = aten.sum.default(%x) : f32[]
  %p = aten.gt.Scalar(%s, 0) : bool[]
  %r = higher_order.cond(%p, [%x, %y]) : f32[{N}]
    subgraph true_branch functional {{
      %a = input : f32[{N}]
      %b = input : f32[{N}]
      %c = aten.mul.Tensor(%a, %b) : f32[{N}]
      output %c
    }}
    subgraph false_branch functional {{
      %a = input : f32[{N}]
      %b = input : f32[{N}]
      %c = aten.sub.Tensor(%a, %b) : f32[{N}]
      output %c
    }}
  output %r
}}
"""
    # The same kernels without the branch: the reduction, then one elementwise kernel.
    without = f"""graph @without_cond functional {{
  %x = input : f32[{N}]
  %y = input : f32[{N}]
  %s = aten.sum.default(%x) : f32[]
  %p = aten.gt.Scalar(%s, 0) : bool[]
  %c = aten.mul.Tensor(%x, %y) : f32[{N}]
  output %c, %p
}}
"""
    return with_cond, without


def loop_graph():
    return f"""graph @counted_loop functional {{
  %i = input : i64[]
  %limit = input : i64[]
  %x = input : f32[{N}]
  %k, %lim, %out = higher_order.while_loop([%i, %limit, %x]) : i64[], i64[], f32[{N}]
    subgraph cond_fn functional {{
      %j = input : i64[]
      %l = input : i64[]
      %v = input : f32[{N}]
      %go = aten.lt.Tensor(%j, %l) : bool[]
      output %go
    }}
    subgraph body_fn functional {{
      %j = input : i64[]
      %l = input : i64[]
      %v = input : f32[{N}]
      %j1 = aten.add.Tensor(%j, 1) : i64[]
      %h = aten.mul.Tensor(%v, 0.5) : f32[{N}]
      output %j1, %l, %h
    }}
  output %k, %out
}}
"""


def wall_us(fn, reps):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    t = Toroid(args.lib)
    torch.manual_seed(0)
    x = torch.randn(N, device="cuda")
    y = torch.randn(N, device="cuda")
    rows = {}

    a, b = item_graphs()
    with_us = wall_us(t.runner(t.compile(a, "with_item"), [x]), args.reps)
    without_us = wall_us(t.runner(t.compile(b, "without_item"), [x]), args.reps)
    eager_us = wall_us(lambda: x / (x.abs().max().item() + 1.0), args.reps)
    rows["item"] = {"with_us": with_us, "without_us": without_us, "line_us": with_us - without_us, "eager_us": eager_us}

    a, b = cond_graphs()
    with_us = wall_us(t.runner(t.compile(a, "with_cond"), [x, y]), args.reps)
    without_us = wall_us(t.runner(t.compile(b, "without_cond"), [x, y]), args.reps)
    eager_us = wall_us(lambda: x * y if bool(x.sum() > 0) else x - y, args.reps)
    rows["cond"] = {"with_us": with_us, "without_us": without_us, "line_us": with_us - without_us, "eager_us": eager_us}

    loop = t.compile(loop_graph(), "counted_loop")
    zero = torch.zeros((), dtype=torch.int64, device="cuda")
    per = {}
    for n in (0, 10, 100):
        limit = torch.full((), n, dtype=torch.int64, device="cuda")
        per[n] = wall_us(t.runner(loop, [zero, limit, x]), max(args.reps // 4, 20))

    def eager_loop(n):
        def run():
            j, v = 0, x
            lim = torch.full((), n, dtype=torch.int64, device="cuda")
            while bool(torch.tensor(j, device="cuda") < lim):
                j, v = j + 1, v * 0.5
            return v
        return run
    eager100 = wall_us(eager_loop(100), max(args.reps // 4, 20))
    eager0 = wall_us(eager_loop(0), max(args.reps // 4, 20))
    rows["while_loop"] = {"iters_0_us": per[0], "iters_10_us": per[10], "iters_100_us": per[100],
                          "line_us": (per[100] - per[0]) / 100, "eager_us": (eager100 - eager0) / 100}

    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, N={N} f32")
    print(f"{'line':<12}{'with (us)':>12}{'without (us)':>14}{'line cost (us)':>16}{'eager (us)':>12}")
    for k in ("item", "cond"):
        r = rows[k]
        print(f"{k:<12}{r['with_us']:>12.1f}{r['without_us']:>14.1f}{r['line_us']:>16.1f}{r['eager_us']:>12.1f}")
    r = rows["while_loop"]
    print(f"while_loop: 0 iterations {r['iters_0_us']:.1f} us, 10: {r['iters_10_us']:.1f} us, 100: {r['iters_100_us']:.1f} us;"
          f" {r['line_us']:.1f} us per iteration (eager Python loop: {r['eager_us']:.1f} us per iteration)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "n": N, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
