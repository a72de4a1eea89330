#!/usr/bin/env python3
"""The CPU micro suite through torch.compile (issue 18): eager PyTorch, Inductor and toroid
(`torch.compile(backend="toroid")`) on the same CPU tensors, at sizes of 1, 8 and 64 MB of main
input, in fp32 and bf16, in one process.

    PYTHONPATH=python TOROID_LIBRARY=build/src/capi/libtoroid.so \\
        python3 bench/cpu_micro.py [--sizes 1,8,64] [--dtypes f32,bf16] [--only NAME,..] [--rounds 5]
        [--fresh-inputs] [--json FILE] [--commit C] [--profile FILE]

Rows of width 1024 (a transformer's hidden size); the number of rows sets the size. Before the
first row both compilers compile and run the first workload at 10 KB (the process's one-time
costs, such as Inductor's compile workers, stay out of the rows). Each backend compiles first (its first call, timed as the compile), then the timing alternates the three
backends in --rounds rounds (each starts at the next backend), each round taking the median of
enough calls to last ~0.2 s, so that a host whose speed drifts slows all three alike; the figure
is the median over rounds. Outputs are compared with eager's (bf16 tolerance). The summary gives
each dtype's geomean of Inductor/toroid (above 1: toroid faster) and the slowest workload.
torch's thread count is the host's (torch.get_num_threads()); toroid's kernels use OpenMP's.
--profile FILE samples 2 s of toroid's calls of the first row with gperftools' CPU profiler
(see tools/gpu/capi_loop.py for carrying it to the GPU machine and reading the profile back).
Sizes may be fractions (0.001: 1 KB, where a call's fixed cost is all there is).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inductor_cpu import add, gelu_affine, layer_norm, softmax  # noqa: E402  (the same graphs as there)

COLS = 1024
ATOL, RTOL = 1e-2, 1.6e-2


# These two compute their statistics in f32 for bf16 inputs, as models do.
def rmsnorm_residual(x, r, w):
    h = x + r
    y = h * torch.rsqrt(h.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(h.dtype) * w
    return y, h


def cross_entropy(x, target):
    return F.cross_entropy(x.float(), target)


def row_sum(x):
    return x.float().sum(-1)


WORKLOADS = {
    "add": (add, "xr"),
    "gelu_affine": (gelu_affine, "xwb"),
    "softmax": (softmax, "x"),
    "layer_norm": (layer_norm, "xwb"),
    "rmsnorm_residual": (rmsnorm_residual, "xrw"),
    "cross_entropy": (cross_entropy, "xt"),
    "row_sum": (row_sum, "x"),
}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def inputs(kinds, mb, dtype):
    cols = min(COLS, max(1, int(mb * 2**20) // torch.empty((), dtype=dtype).element_size()))
    rows = max(1, int(mb * 2**20) // (cols * torch.empty((), dtype=dtype).element_size()))
    g = torch.Generator().manual_seed(0)
    u = lambda *s: (torch.rand(*s, generator=g) * 2 - 1).to(dtype)
    make = {"x": lambda: u(rows, cols), "r": lambda: u(rows, cols), "w": lambda: u(cols), "b": lambda: u(cols),
            "t": lambda: torch.randint(0, cols, (rows,), generator=g)}
    return [make[k]() for k in kinds]


def flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def matches(got, want):
    for a, b in zip(flat(got), flat(want)):
        a, b = a.float(), b.float()
        if a.shape != b.shape or not bool(((a - b).abs() <= ATOL + RTOL * b.abs()).all()):
            return False
    return True


def timed_round(fn, args, budget_s=0.2, max_calls=5000):
    """Median ms of calls made for about budget_s. The call count comes from a few calls timed
    first (the first call alone can be slow). A cap of 200 calls made a 1 MB row's round 6-10 ms,
    and such rows moved by up to 25% between runs (bench/RESULTS.md 34b)."""
    t0 = time.perf_counter()
    for _ in range(3):
        fn(*args)
    once = (time.perf_counter() - t0) / 3
    n = max(3, min(max_calls, int(budget_s / max(once, 1e-6))))
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


class Timer:
    """Time inside a wrapped function while `on`."""

    def __init__(self):
        self.on = False
        self.reset()

    def reset(self):
        self.total, self.calls = 0.0, 0

    def per_call_us(self):
        return self.total / max(self.calls, 1) * 1e6

    def wrap(self, fn):
        def timed(obj, *args, **kwargs):
            if not self.on:
                return fn(obj, *args, **kwargs)
            t0 = time.perf_counter()
            try:
                return fn(obj, *args, **kwargs)
            finally:
                self.total += time.perf_counter() - t0
                self.calls += 1
        return timed


def profile(path, fn, args, seconds=2.0):
    import ctypes
    profiler = ctypes.CDLL(os.environ.get("TOROID_PROFILER_LIB", "libprofiler.so.0"))
    if not profiler.ProfilerStart(path.encode()):
        sys.exit("ProfilerStart failed for " + path)
    end, calls = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        for _ in range(100):
            fn(*args)
        calls += 100
    profiler.ProfilerStop()
    print(f"profile of {calls} toroid calls: {path}")


def python_profile(name, fn, args, calls, top=30):
    """Prints the Python function calls a call of fn makes and its top functions by own time."""
    import cProfile
    import pstats
    for _ in range(20):
        fn(*args)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn(*args)
    prof.disable()
    stats = pstats.Stats(prof)
    print(f"{name}: {stats.total_calls / calls:.1f} Python function calls per call, "
          f"{stats.total_tt / calls * 1e6:.1f} µs per call under the profiler")
    stats.sort_stats("tottime").print_stats(top)


def distinct(fn):
    """fn in a code object of its own: dynamo keeps one cache list per code object, and a backend
    sharing it would evaluate the other backends' guards on every call."""
    code = fn.__code__.replace()
    return type(fn)(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def warm_up(name, dtype, calls=200):
    """Compiles and runs the first workload at 10 KB in both compilers before any row is timed: the
    process's one-time costs (Inductor's first compile starts its compile workers and warms its
    C++ toolchain, some 70 s on the GPU machine's host) otherwise land in the first row's
    timings (its toroid time was 1.5x that of the same row in other runs)."""
    fn, kinds = WORKLOADS[name]
    args = inputs(kinds, 0.01, dtype)
    with torch.no_grad():
        for backend in ("toroid", "inductor"):
            f = torch.compile(distinct(fn), backend=backend, dynamic=False)
            for _ in range(calls):
                f(*args)
    torch._dynamo.reset()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,8,64", help="MB of the main input")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--only", default="", help="comma-separated: " + ",".join(WORKLOADS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None, help="append one JSON line per row to this file")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--fresh-inputs", action="store_true",
                    help="copies of the inputs, at new addresses, for every round (so that one placement of the "
                         "inputs against the outputs does not decide a row for the whole process)")
    ap.add_argument("--torch-threads", type=int, default=0,
                    help="torch.set_num_threads(N) (with OMP_NUM_THREADS=M: toroid's kernels use M, torch N)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also the µs of a toroid call spent in its partitions and, inside them, in the C ABI")
    ap.add_argument("--profile", default=None, help="a gperftools CPU profile of toroid's calls of the first row")
    ap.add_argument("--cprofile", type=int, default=0, metavar="CALLS",
                    help="cProfile CALLS calls of toroid and of Inductor on the first row: Python calls per call "
                         "and the top functions by own time")
    a = ap.parse_args()
    import toroid  # noqa: F401  (registers the backend)
    if a.torch_threads:
        torch.set_num_threads(a.torch_threads)

    only = [w for w in a.only.split(",") if w] or list(WORKLOADS)
    timers = None
    if a.breakdown:
        from toroid import _capi, runtime
        timers = {"partition": Timer(), "capi": Timer()}
        runtime.Partition.__call__ = timers["partition"].wrap(runtime.Partition.__call__)
        _capi.Module.run_into = timers["capi"].wrap(_capi.Module.run_into)
        _capi.Module.run_into_data = timers["capi"].wrap(_capi.Module.run_into_data)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, rows of {COLS}")
    print("| workload | dtype | MB | eager ms | toroid ms | Inductor ms | Inductor/toroid | toroid compile s | match |")
    print("|---|---|---|---|---|---|---|---|---|")
    ratios = {}
    warm_up(only[0], DTYPES[a.dtypes.split(",")[0]])
    for dname in a.dtypes.split(","):
        for mb in [float(s) for s in a.sizes.split(",")]:
            for name in only:
                fn, kinds = WORKLOADS[name]
                args = inputs(kinds, mb, DTYPES[dname])
                torch._dynamo.reset()
                backends = {"eager": fn, "toroid": torch.compile(distinct(fn), backend="toroid", dynamic=False),
                            "inductor": torch.compile(distinct(fn), dynamic=False)}
                compile_s, ok = {}, True
                with torch.no_grad():
                    want = fn(*args)
                    for k, f in backends.items():
                        t0 = time.perf_counter()
                        got = f(*args)
                        compile_s[k] = time.perf_counter() - t0
                        ok = ok and matches(got, want)
                    if a.profile:
                        profile(a.profile, backends["toroid"], args)
                        a.profile = None
                    if a.cprofile:
                        for k in ("toroid", "inductor"):
                            python_profile(k, backends[k], args, a.cprofile)
                        a.cprofile = 0
                    per = {k: [] for k in backends}
                    keys = list(backends)
                    for r in range(a.rounds):
                        if a.fresh_inputs and r:
                            args = [t.clone() for t in args]
                        for k in keys[r % 3:] + keys[:r % 3]:
                            for t in (timers or {}).values():
                                t.on = k == "toroid"
                            per[k].append(timed_round(backends[k], args))
                ms = {k: statistics.median(v) for k, v in per.items()}
                ratio = ms["inductor"] / ms["toroid"]
                ratios.setdefault(dname, []).append((ratio, f"{name} {mb} MB"))
                split = ""
                if timers:
                    split = " partition {:.1f} µs, C ABI {:.1f} µs |".format(*(t.per_call_us() for t in timers.values()))
                    for t in timers.values():
                        t.reset()
                print(f"| {name} | {dname} | {mb:g} | {ms['eager']:.3f} | {ms['toroid']:.3f} | {ms['inductor']:.3f} | "
                      f"{ratio:.2f} | {compile_s['toroid']:.2f} | {'yes' if ok else 'NO'} |{split}", flush=True)
                if a.json:
                    with open(a.json, "a") as f:
                        f.write(json.dumps({"date": time.strftime("%Y-%m-%d"), "commit": a.commit, "workload": name,
                                            "dtype": dname, "mb": mb, "threads": torch.get_num_threads(),
                                            "eager_ms": ms["eager"], "toroid_ms": ms["toroid"],
                                            "inductor_ms": ms["inductor"], "toroid_compile_s": compile_s["toroid"],
                                            "inductor_compile_s": compile_s["inductor"], "match": ok, "rounds": a.rounds,
                                            "fresh_inputs": a.fresh_inputs}) + "\n")
    for dname, rs in ratios.items():
        geo = math.exp(sum(math.log(r) for r, _ in rs) / len(rs))
        worst = min(rs)
        print(f"{dname}: geomean Inductor/toroid {geo:.2f}, slowest {worst[1]} at {worst[0]:.2f}")
    # Two OpenMP runtimes in one process (torch's bundled libgomp and the system's, which toroid's
    # kernels link) keep two thread pools spinning against each other.
    print("OpenMP runtimes loaded:", ", ".join(openmp_libraries()) or "none")


def openmp_libraries():
    """The OpenMP runtimes mapped into this process (paths)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if len(line.split()) >= 6}
    except OSError:
        return []
    return sorted(p for p in paths if any(k in os.path.basename(p) for k in ("gomp", "iomp", "libomp")))


if __name__ == "__main__":
    main()
