#!/usr/bin/env python3
"""One model-suite model compiled by toroid with a debug directory per compile (graphs after each
pass, loop IR, Wrapper IR, kernels, report.html): for reading a model's kernels on the CPU
machine after a GPU run.

    TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/debug_dump.py MODEL [--dtype float32] --out DIR
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import torch
    import toroid
    import model_suite
    toroid.config.debug = True
    toroid.config.debug_dir = a.out
    case = model_suite.built(a.model, a.dtype)
    model = case.model.eval()
    f = torch.compile(model, backend="toroid")
    with torch.no_grad():
        f(*case.inputs)
    torch.cuda.synchronize()
    print("debug directories:", sorted(os.listdir(a.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
