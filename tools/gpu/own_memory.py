#!/usr/bin/env python3
"""Where toroid's own device memory goes in a model step (issue 17's peaks): runs a case of
torch_compile_check.py compiled with toroid for a few steps in a child process per setting
(the environment as given, TOROID_CUDA_GRAPHS=0, TOROID_SEGMENT_BACKWARD=0, both), and prints
toroid's allocator figures (the first call's peak, compile included; then over the steps: lent
now, peak lent, cached), PyTorch's peaks, and the step's ms.

    TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/own_memory.py [--model bert] [--steps 4]
        [--wrap] [--eager-first] [--settings "as given,no CUDA graphs"]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SETTINGS = [("as given", {}), ("no CUDA graphs", {"TOROID_CUDA_GRAPHS": "0"}),
            ("backward whole", {"TOROID_SEGMENT_BACKWARD": "0"}),
            ("both", {"TOROID_CUDA_GRAPHS": "0", "TOROID_SEGMENT_BACKWARD": "0"})]


def child(model, steps, wrap, eager_first):
    sys.path.insert(0, HERE)
    import torch
    import toroid
    import torch_compile_check as cases
    make = getattr(cases, "case_" + model)("cuda")
    if eager_first:  # as torch_compile_check does: the eager step first, kept alive
        eager = make(lambda m: m)
        eager()
    step = make(lambda m: torch.compile(cases.distinct(m, "toroid_step") if wrap else m, backend="toroid"))
    toroid.device_memory(True)
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    first = toroid.device_memory(True)
    first_torch = torch.cuda.max_memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    for _ in range(steps):
        out = step()
        del out
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t) * 1e3 / steps
    m = toroid.device_memory()
    mib = 2 ** 20
    print(json.dumps({"first_call_toroid_peak_mib": round(first["peak_lent_bytes"] / mib, 1),
                      "first_call_torch_peak_mib": round(first_torch / mib, 1), "ms": round(ms, 2), "torch_peak_mib": round(torch.cuda.max_memory_allocated() / mib, 1),
                      "torch_now_mib": round(torch.cuda.memory_allocated() / mib, 1),
                      "toroid_lent_mib": round(m["lent_bytes"] / mib, 1),
                      "toroid_peak_mib": round(m["peak_lent_bytes"] / mib, 1),
                      "toroid_cached_mib": round(m["cached_bytes"] / mib, 1),
                      "fresh_blocks": m["fresh_blocks"], "reused_blocks": m["reused_blocks"]}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="bert")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--wrap", action="store_true", help="compile the model behind a function (torch_compile_check's distinct)")
    ap.add_argument("--eager-first", action="store_true", help="run (and keep) an eager step first")
    ap.add_argument("--settings", default="", help="comma-separated names of SETTINGS to run (default all)")
    a = ap.parse_args()
    if a.child:
        return child(a.model, a.steps, a.wrap, a.eager_first)
    for name, env in SETTINGS:
        if a.settings and name not in a.settings.split(","):
            continue
        extra = (["--wrap"] if a.wrap else []) + (["--eager-first"] if a.eager_first else [])
        r = subprocess.run([sys.executable, __file__, "--child", "--model", a.model, "--steps", str(a.steps)] + extra,
                           env=dict(os.environ, **env), capture_output=True, text=True)
        line = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else \
            "error: " + (r.stderr.strip().splitlines() or ["?"])[-1]
        print("%-16s %s" % (name, line), flush=True)


if __name__ == "__main__":
    main()
