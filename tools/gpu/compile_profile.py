#!/usr/bin/env python3
"""Where a model's first call (its cold compile) spends its time under torch.compile(backend=
"toroid"): cProfile over the first call of a torch_compile_check.py case, the top functions by
cumulative time, and toroid's own compile phases (TOROID_LOG=time lines go to stderr).

    TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/compile_profile.py [--model gpt2] [--top 30]
"""
import argparse
import cProfile
import io
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gpt2")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--backend", default="toroid")
    a = ap.parse_args()
    import torch
    import toroid  # noqa: F401
    import torch_compile_check as cases
    make = getattr(cases, "case_" + a.model)("cuda")
    step = make(lambda m: torch.compile(m, backend=a.backend))
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    step()
    torch.cuda.synchronize()
    prof.disable()
    print("first call: %.2f s" % (time.perf_counter() - t))
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(a.top)
    print("\n".join(line[:200] for line in out.getvalue().splitlines()))


if __name__ == "__main__":
    main()
