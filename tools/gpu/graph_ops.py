"""Which ops a model reaches at each stage of torch.compile: the call targets of dynamo's graphs
and of AOTAutograd's ATen graphs after toroid's attention rewrite and decompositions, counted, for one
model of tools/gpu/model_suite.py. It compiles nothing with toroid: it shows what toroid's
backend is handed, e.g. to find which op of a model falls back and where it comes from.

    python3 tools/gpu/graph_ops.py vit_b_16 [--dtype bfloat16] [--mode inference|training] [--device cuda]
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def name_of(target):
    return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or str(target)


def count(gm):
    return collections.Counter(name_of(n.target) if not hasattr(n.target, "name") else n.target.name()
                               for n in gm.graph.nodes if n.op == "call_function")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--mode", default="inference", choices=("inference", "training"))
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    import torch
    from torch._dynamo.backends.common import aot_autograd
    import model_suite
    from toroid.attention import decompose_attention
    from toroid.backend import _decompositions
    case = model_suite.built(a.model, a.dtype, a.device)
    model, inputs = case.model, case.inputs

    def show(title, gm):
        print("== %s: %d nodes" % (title, len(gm.graph.nodes)))
        for k, v in sorted(count(gm).items()):
            print("  %4d %s" % (v, k))

    def aten(gm, example_inputs):
        show("ATen graph", gm)
        return gm

    def backend(gm, example_inputs):
        show("dynamo graph", gm)
        for line in decompose_attention(gm):
            print("  attention kept: %s" % line)
        return aot_autograd(fw_compiler=aten, bw_compiler=aten, decompositions=_decompositions())(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(model.train(a.mode == "training"), backend=backend)
    if a.mode == "training":
        out = compiled(*inputs)
        (out[0] if isinstance(out, tuple) else out).float().sum().backward()
    else:
        with torch.no_grad():
            compiled(*inputs)


if __name__ == "__main__":
    main()
