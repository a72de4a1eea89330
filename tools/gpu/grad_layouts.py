#!/usr/bin/env python3
"""Why a training step copies (issue 17): runs a model's training step from torch_compile_check.py
(bert or mlp) compiled with toroid, then lists the parameters whose .grad strides differ from the
parameter's (AccumulateGrad copies those into a new tensor every step) and counts toroid's
CUDA-graph log lines (TOROID_LOG=cuda: call keys, captures, declines).

    TOROID_LOG=cuda TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/grad_layouts.py [--model bert] [--steps 4]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

import torch_compile_check as cases  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="bert")
    p.add_argument("--steps", type=int, default=4)
    a = p.parse_args()
    import toroid  # noqa: F401
    make = getattr(cases, "case_" + a.model)("cuda")
    captured = {}

    def compile_fn(m):
        captured["module"] = m
        return torch.compile(m, backend="toroid")
    step = make(compile_fn)
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    module = captured.get("module")
    params = list(module.parameters()) if hasattr(module, "parameters") else []
    bad = [(n, tuple(q.shape), q.stride(), q.grad.stride()) for n, q in
           zip(range(len(params)), params) if q.grad is not None and q.grad.stride() != q.stride()]
    print("%d parameters, %d with grad strides unlike the parameter's" % (len(params), len(bad)))
    for row in bad[:12]:
        print("  param %d shape %s strides %s, grad strides %s" % row)


if __name__ == "__main__":
    main()
