#!/usr/bin/env python3
"""Host time of toroid's own call (issue 17's Done-when): toroid_run_into on a CUDA module, from a
loop that reuses its inputs, outputs and workspace (as a serving loop or the Python frontend's
steady state does), with CUDA graphs on and off, for graphs of 1 to 32 blocks on a small tensor.

    TOROID_LIBRARY=build/src/capi/libtoroid.so PYTHONPATH=python python3 bench/capi_call_bench.py [--calls 5000] [--json FILE]

`adam` k: an optimizer-like step over k parameters (4k inputs, 3k written in place), for the
cost per input. `fused` blocks (`x - amax(x)`, fused into one kernel however many), `kernels`
blocks (the same over rows and columns in turn: k + 1 generated kernels, the cost per launch of
toroid's own kernels) and `mm` blocks
(`relu(x @ w)`: a cuBLASLt matmul with its epilogue, or a matmul and a kernel). µs per call is
the loop's wall time over its calls, the GPU queue drained at the end: the host's cost, as long
as the GPU keeps up (it does: each kernel here is a few µs). Launches are counted from the
Wrapper IR. The ctypes call itself (header arrays passed as they are) is part of the figure.
The `host µs` columns time the call alone (median), the GPU queue drained between calls outside
the timing: what the call costs the host when the GPU is not the bottleneck.
"""
import argparse
import ctypes
import glob
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402


def adam_graph(k):
    """An optimizer step over k parameters of 256 elements: 4k inputs (param, grad, two moments),
    each param and moment written in place by a trailing copy_ (an Adam-like update)."""
    lines = ["graph @adam%d functional {" % k]
    for i in range(k):
        lines += ["  %%%s%d = input : f32[256]" % (n, i) for n in "pgmv"]
    for i in range(k):
        lines += ["  %%ma%d = aten.mul.Tensor(%%m%d, 0.9) : f32[256]" % (i, i),
                  "  %%mb%d = aten.mul.Tensor(%%g%d, 0.1) : f32[256]" % (i, i),
                  "  %%mn%d = aten.add.Tensor(%%ma%d, %%mb%d) : f32[256]" % (i, i, i),
                  "  %%gs%d = aten.mul.Tensor(%%g%d, %%g%d) : f32[256]" % (i, i, i),
                  "  %%vn%d = aten.add.Tensor(%%v%d, %%gs%d) : f32[256]" % (i, i, i),
                  "  %%sq%d = aten.sqrt.default(%%vn%d) : f32[256]" % (i, i),
                  "  %%up%d = aten.div.Tensor(%%mn%d, %%sq%d) : f32[256]" % (i, i, i),
                  "  %%pn%d = aten.sub.Tensor(%%p%d, %%up%d) : f32[256]" % (i, i, i)]
    for i in range(k):
        lines += ["  %%c%s%d = aten.copy_.default(%%%s%d, %%%s%d) : f32[256]{storage=%%%s%d}" % (n, i, n, i, src, i, n, i)
                  for n, src in (("p", "pn"), ("m", "mn"), ("v", "vn"))]
    lines += ["  output", "}", ""]
    return "\n".join(lines)


def graph(family, k):
    if family == "adam":
        return adam_graph(k)
    lines = ["graph @%s%d functional {" % (family, k), "  %x0 = input : f32[8, 32]"]
    if family == "mm":
        lines.append("  %w = input : f32[32, 32]")
    for i in range(k):
        x, y = "%%x%d" % i, "%%x%d" % (i + 1)
        if family == "fused":
            lines += ["  %%m%d = aten.amax.default(%s, [1], true) : f32[8, 1]" % (i, x),
                      "  %s = aten.sub.Tensor(%s, %%m%d) : f32[8, 32]" % (y, x, i)]
        elif family == "kernels":  # rows, then columns: each block's reduction is a kernel of its own
            dim, shape = ("[0]", "[1, 32]") if i % 2 else ("[1]", "[8, 1]")
            lines += ["  %%m%d = aten.amax.default(%s, %s, true) : f32%s" % (i, x, dim, shape),
                      "  %s = aten.sub.Tensor(%s, %%m%d) : f32[8, 32]" % (y, x, i)]
        else:
            lines += ["  %%h%d = aten.mm.default(%s, %%w) : f32[8, 32]" % (i, x),
                      "  %s = aten.relu.default(%%h%d) : f32[8, 32]" % (y, i)]
    lines += ["  output %%x%d" % k, "}", ""]
    return "\n".join(lines)


def launches(dump):
    n = 0
    for path in glob.glob(os.path.join(dump, "*", "wrapper.txt")):  # one debug directory per compile
        with open(path) as f:
            n += sum(line.strip().split(" ", 1)[0] in ("call", "extern", "user_kernel") for line in f)
    return n


def inputs_of(family, k, device):
    if family == "adam":
        return [torch.randn(256, device=device).abs() for _ in range(4 * k)]
    return [torch.randn(8, 32, device=device)] + ([torch.randn(32, 32, device=device) / 8] if family == "mm" else [])


def per_call(family, k, graphs, calls, device="cuda"):
    from toroid import _capi
    from toroid.runtime import _header
    dump = tempfile.mkdtemp(prefix="capi-bench-")
    cuda = device == "cuda"
    m = _capi.Module(graph(family, k), device=device, dynamic=False, dump_dir=dump,
                     **({"cuda_graphs": graphs} if cuda else {}))
    ins = inputs_of(family, k, device)
    headers = (_capi.Tensor * len(ins))(*[_header(t) for t in ins])
    infos, ws_bytes = m.output_info(headers)
    out_tensors = [torch.empty(8, 32, device=device) for _ in infos]  # alive for the whole loop
    outs = (_capi.Tensor * len(infos))(*[_header(t) for t in out_tensors])
    ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=device) if cuda else None
    stream = torch.cuda.current_stream().cuda_stream or None if cuda else None
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    run = m.run_into
    args = (headers, outs, ws.data_ptr() if cuda else None, ws_bytes if cuda else 0, stream)
    for _ in range(50):
        run(*args)
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        run(*args)
    sync()
    loop = (time.perf_counter() - t0) / calls * 1e6
    # The call alone, on an idle GPU: the queue is drained between calls, outside the timing.
    host = []
    for _ in range(min(calls, 2000)):
        t0 = time.perf_counter()
        run(*args)
        host.append(time.perf_counter() - t0)
        sync()
    host.sort()
    return loop, host[len(host) // 2] * 1e6, launches(dump)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=5000)
    p.add_argument("--json", default=None)
    p.add_argument("--commit", default=None)
    p.add_argument("--families", default="fused,kernels,mm,adam")
    p.add_argument("--device", default="cuda", help="cuda, or cpu (the host path alone; graphs columns equal)")
    a = p.parse_args()
    print("| family | blocks | launches | graphs off µs | µs per launch | graphs on µs | host µs, off | host µs, on |")
    print("|---|---|---|---|---|---|---|---|")
    for family in a.families.split(","):
        for k in (1, 4, 16, 32) if family != "adam" else (10, 100):
            off, host_off, n = per_call(family, k, False, a.calls, a.device)
            on, host_on, _ = per_call(family, k, True, a.calls, a.device) if a.device == "cuda" else (off, host_off, n)
            print("| %s | %d | %d | %.1f | %.2f | %.1f | %.1f | %.1f |" % (family, k, n, off, off / max(n, 1), on,
                                                                      host_off, host_on))
            if a.json:
                with open(a.json, "a") as fh:
                    fh.write(json.dumps({"date": time.strftime("%Y-%m-%d"), "commit": a.commit, "family": family,
                                         "blocks": k, "launches": n, "graphs_off_us": round(off, 2),
                                         "graphs_on_us": round(on, 2), "host_off_us": round(host_off, 2),
                                         "host_on_us": round(host_on, 2),
                                         "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu"}) + "\n")


if __name__ == "__main__":
    main()
