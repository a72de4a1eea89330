#!/usr/bin/env python3
"""A loop of toroid_run_into_data calls on one module of bench/capi_call_bench.py's families, for
a profiler to look at toroid's host path (perf record -g python3 tools/gpu/capi_loop.py ...).

    TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/capi_loop.py [--family adam] [--k 100] [--device cuda] [--calls 3000]
"""
import argparse
import ctypes
import os
import sys

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
    for _ in range(a.calls):
        m.run_into_data(headers, data, outs, out_data, ws.data_ptr() if cuda else None, ws_bytes if cuda else 0, stream)
    if cuda:
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
