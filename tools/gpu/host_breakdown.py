#!/usr/bin/env python3
"""Where the host time of a compiled training or optimizer step goes (issue 17): the step's wall
time split into toroid's partition calls (Partition.__call__), the part of them inside the C ABI
(Module.run_into), and the rest (dynamo, AOTAutograd, autograd, the case's own eager ops); then
the top Python functions by own time under cProfile. --profile FILE also samples toroid's timed
steps with gperftools' CPU profiler (C++ frames; see tools/gpu/capi_loop.py for reading it back).

    TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/host_breakdown.py --model adam [--steps 50]

Each step synchronizes at its end, as torch_compile_check.py's timing loop does.
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_compile_check as cases  # noqa: E402


class Timer:
    """Time in the wrapped function, in total and by the name of the object it is called on
    (a partition's module)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.total, self.calls, self.by = 0.0, 0, {}

    def wrap(self, fn, name=lambda obj: ""):
        def timed(obj, *a, **k):
            t0 = time.perf_counter()
            try:
                return fn(obj, *a, **k)
            finally:
                dt = time.perf_counter() - t0
                self.total += dt
                self.calls += 1
                key = name(obj)
                self.by[key] = self.by.get(key, 0.0) + dt
        return timed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="adam", choices=["mlp", "resnet18", "gpt2", "bert", "adam"])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--profile", default=None, help="a gperftools CPU profile of toroid's timed steps")
    args = ap.parse_args()
    import torch
    import toroid  # noqa: F401
    from toroid import _capi, runtime
    part_t, run_t = Timer(), Timer()
    runtime.Partition.__call__ = part_t.wrap(runtime.Partition.__call__, lambda p: str(id(p.module)))
    _capi.Module.run_into = run_t.wrap(_capi.Module.run_into, lambda m: str(id(m)))
    _capi.Module.run_into_data = run_t.wrap(_capi.Module.run_into_data, lambda m: str(id(m)))
    for name, compile_fn in (("eager", lambda m: m), ("toroid", lambda m: torch.compile(m, backend="toroid")),
                             ("inductor", torch.compile)):
        torch._dynamo.reset()
        step = getattr(cases, "case_" + args.model)("cuda")(compile_fn)
        step = getattr(step, "core", step)  # the Adam step without the clones made to compare it
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        part_t.reset()
        run_t.reset()
        walls = []
        profiler = None
        if args.profile and name == "toroid":
            import ctypes
            profiler = ctypes.CDLL(os.environ.get("TOROID_PROFILER_LIB", "libprofiler.so.0"))
            profiler.ProfilerStart(args.profile.encode())
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            walls.append(time.perf_counter() - t0)
        if profiler:
            profiler.ProfilerStop()
        walls.sort()
        wall = walls[len(walls) // 2] * 1e6
        line = "%-8s %s: %.0f µs per step (median)" % (name, args.model, wall)
        if name == "toroid":
            n = args.steps
            line += "; partitions %.0f µs in %d calls, of which the C ABI %.0f µs" % (
                part_t.total * 1e6 / n, part_t.calls // n, run_t.total * 1e6 / n)
            for j, (key, t) in enumerate(part_t.by.items()):
                line += "\n    partition %d: %.0f µs per step, C ABI %.0f µs" % (j, t * 1e6 / n, run_t.by.get(key, 0.0) * 1e6 / n)
        print(line, flush=True)
        if name == "toroid":
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.steps):
                step()
            torch.cuda.synchronize()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
