#!/usr/bin/env python3
"""Where a small CPU call's fixed time goes through torch.compile(backend="toroid") (issue 18): the
same add of two [rows, cols] tensors (f32, or --dtype bf16) timed at each layer in one process, without a
profiler: the whole compiled call (dynamo, AOTAutograd), the boxed function AOTAutograd calls,
CompiledGraph.call_list, Partition.__call__ (its guard check and the lean run), the lean run
alone (data pointers, output allocation, the C call), and beside them eager and Inductor.

    TOROID_LIBRARY=build/src/capi/libtoroid.so PYTHONPATH=python python3 tools/gpu/call_layers.py \
        [--rows 1 --cols 256] [--dtype f32|bf16] [--calls 20000]
"""
import argparse
import functools
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402


def per_call_us(fn, calls, rounds=5):
    """Median over rounds of the mean µs a call in a loop of `calls`."""
    for _ in range(200):
        fn()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(out)


def add(x, y):
    return x + y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--cols", type=int, default=256)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    a = ap.parse_args()
    import toroid
    from toroid import backend
    graphs = []
    backend.listeners.append(lambda name, cg, bw: graphs.append(cg))
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    x, y = torch.rand(a.rows, a.cols).to(dtype), torch.rand(a.rows, a.cols).to(dtype)
    code = add.__code__
    fresh = lambda: type(add)(code.replace(), add.__globals__, "add")  # noqa: E731 (a cache list each)
    # What dynamo calls (AOTAutograd's compiled function), kept to be timed without dynamo.
    compiled = {}

    def keep(name, make):
        def compiler(gm, example_inputs):
            compiled[name] = make(gm, example_inputs)
            return compiled[name]
        return compiler
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.output_code import CompiledFxGraph
    inductor_calls = []
    inner_call = CompiledFxGraph.__call__

    def seen(self, inputs):  # the first call's CompiledFxGraph, to be timed alone
        if not inductor_calls:
            inductor_calls.append(self)
        return inner_call(self, inputs)
    CompiledFxGraph.__call__ = seen
    t = torch.compile(fresh(), backend=keep("toroid", backend.toroid_backend), dynamic=False)
    i = torch.compile(fresh(), backend=keep("inductor", compile_fx), dynamic=False)
    rows = []
    with torch.no_grad():
        for _ in range(3):  # the partition makes its guard and lean function on its second call
            t(x, y), i(x, y)
        cg = graphs[-1]
        part = cg.steps[0][1]
        boxed = toroid.runtime.boxed(cg)
        lean = part._leans.get(part._last_key)
        full = [x, y]
        check = part._guard[0] if part._guard else None
        empty = toroid.runtime._empty_strided_cpu()
        CompiledFxGraph.__call__ = inner_call
        layers = [("eager", lambda: add(x, y)), ("Inductor, whole call", lambda: i(x, y)),
                  ("Inductor, whole call, gc disabled", lambda: i(x, y)),
                  ("Inductor, AOTAutograd's function (what dynamo calls)", lambda: compiled["inductor"](x, y))]
        if inductor_calls:
            layers.append(("Inductor, CompiledFxGraph (what AOTAutograd calls)", lambda: inductor_calls[0]([x, y])))
        layers += [("toroid, whole call", lambda: t(x, y)),
                   ("toroid, whole call, gc disabled", lambda: t(x, y)),
                   ("toroid, AOTAutograd's function (what dynamo calls)", lambda: compiled["toroid"](x, y)),
                   ("boxed (AOTAutograd calls)", lambda: boxed([x, y])),
                  ("CompiledGraph.call_list", lambda: cg.call_list([x, y])),
                  ("Partition.__call__", lambda: part([x, y]))]
        if lean:
            kind = "builtin" if isinstance(lean, functools.partial) else "Python frame"
            layers.append(("lean run (%s)" % kind, lambda: lean(full)))
            saved, toroid._capi._python_function = toroid._capi._python_function, None  # the Python frame
            through_frame = part._lean(part._plan(full, part._last_key))
            toroid._capi._python_function = saved
            layers.append(("lean run as a Python frame (TOROID_PYTHON_CALL=0)", lambda: through_frame(full)))
        if check:
            layers.append(("the guard's check alone", lambda: check(x, y)))
        layers.append(("one output allocation alone", lambda: empty((a.rows, a.cols), (a.cols, 1), dtype)))
        import gc
        print("partition: guard", "set" if part._guard else "NONE", "| lean functions by signature:",
              {str(k)[:60]: v is not None for k, v in part._leans.items()})
        try:  # why a missing guard is missing
            from torch._C._dynamo.guards import TensorGuards
            g = TensorGuards(x, y, dynamic_dims_sizes=[list(x.shape)] * 2, dynamic_dims_strides=[list(x.stride())] * 2)
            print("TensorGuards check:", g.check(x, y))
        except Exception as e:  # noqa: BLE001
            print("TensorGuards failed:", type(e).__name__, e)
        # The garbage collector's runs inside each layer's loops: how many a 1000 calls, and their
        # µs a call (a layer that leaves container objects behind makes the collector run more).
        gc_runs, gc_time, started = [0, 0, 0], [0.0], [0.0]

        def on_gc(phase, info):
            if phase == "start":
                started[0] = time.perf_counter()
            else:
                gc_runs[info["generation"]] += 1
                gc_time[0] += time.perf_counter() - started[0]
        gc.callbacks.append(on_gc)
        for name, fn in layers:
            if "gc disabled" in name:
                gc.disable()
            gc_runs[:], gc_time[0] = [0, 0, 0], 0.0
            us = per_call_us(fn, a.calls)
            calls = 200 + 5 * a.calls
            rows.append((name, us, "/".join(f"{n * 1000 / calls:.1f}" for n in gc_runs), gc_time[0] / calls * 1e6))
            gc.enable()
        gc.callbacks.remove(on_gc)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, add of two [{a.rows}, {a.cols}] {a.dtype}")
    print("| layer | µs a call | gc runs a 1000 calls (gen 0/1/2) | gc µs a call |\n|---|---|---|---|")
    for name, us, runs, gc_us in rows:
        print(f"| {name} | {us:.2f} | {runs} | {gc_us:.2f} |")


if __name__ == "__main__":
    main()
