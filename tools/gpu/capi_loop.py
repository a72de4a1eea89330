#!/usr/bin/env python3
"""A loop of toroid_run_into_data calls on one module of bench/capi_call_bench.py's families, for
a profiler to look at toroid's host path: perf record -g on a machine with perf, or gperftools'
sampling profiler (the GPU machine has no perf): --profile FILE starts libprofiler.so around the
timed loop only (TOROID_PROFILER_LIB names the library; tools/gpu/make_carry.sh carries it with
PROFILER=1), and the profile reads back on the build machine with
`google-pprof --text --cum python3 FILE` (libtoroid.so at the path it had, with symbols).

    TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/capi_loop.py [--family adam] [--k 100] [--device cuda]
        [--calls 3000] [--graphs 1] [--profile FILE]

Prints the loop's µs per call (the GPU queue drained at the end).
"""
import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))

import torch  # noqa: E402
from capi_call_bench import graph, inputs_of  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="adam")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--graphs", type=int, default=1)
    ap.add_argument("--profile", default=None, help="write a gperftools CPU profile of the loop here")
    a = ap.parse_args()
    from toroid import _capi
    from toroid.runtime import _header
    cuda = a.device == "cuda"
    m = _capi.Module(graph(a.family, a.k), device=a.device, dynamic=False,
                     **({"cuda_graphs": bool(a.graphs)} if cuda else {}))
    ins = inputs_of(a.family, a.k, a.device)
    headers = (_capi.Tensor * len(ins))(*[_header(t) for t in ins])
    infos, ws_bytes = m.output_info(headers)
    outs_t = [torch.empty(8, 32, device=a.device) for _ in infos]
    outs = (_capi.Tensor * len(infos))(*[_header(t) for t in outs_t])
    data = (ctypes.c_void_p * len(ins))(*[t.data_ptr() for t in ins])
    out_data = (ctypes.c_void_p * len(infos))(*[t.data_ptr() for t in outs_t])
    ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=a.device) if cuda else None
    stream = torch.cuda.current_stream().cuda_stream or None if cuda else None
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    args = (headers, data, outs, out_data, ws.data_ptr() if cuda else None, ws_bytes if cuda else 0, stream)
    for _ in range(50):
        m.run_into_data(*args)
    sync()
    profiler = None
    if a.profile:
        profiler = ctypes.CDLL(os.environ.get("TOROID_PROFILER_LIB", "libprofiler.so.0"))
        if not profiler.ProfilerStart(a.profile.encode()):
            sys.exit("ProfilerStart failed for " + a.profile)
    t0 = time.perf_counter()
    for _ in range(a.calls):
        m.run_into_data(*args)
    sync()
    seconds = time.perf_counter() - t0
    if profiler:
        profiler.ProfilerStop()
    print("%s %d, graphs %d: %.1f us per call" % (a.family, a.k, a.graphs, seconds / a.calls * 1e6))


if __name__ == "__main__":
    main()
