"""Which ops a model reaches at each stage of torch.compile: the call targets of dynamo's graphs
and of AOTAutograd's ATen graphs after toroid's attention rewrite and decompositions, counted, for one
model of tools/gpu/model_suite.py. It compiles nothing with toroid: it shows what toroid's
backend is handed, e.g. to find which op of a model falls back and where it comes from.

    python3 tools/gpu/graph_ops.py vit_b_16 [--dtype bfloat16] [--mode inference|training] [--device cuda]
                                   [--layouts slice_scatter]

--layouts OP prints, for each ATen node whose op name contains OP, its tensor arguments' and its
traced result's layouts (sizes, strides, storage offset), and the result's layout when the op
runs eagerly on real tensors of the arguments' layouts: where the traced and eager layouts
differ, toroid's meta functions must follow the traced one.
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


def layout(t):
    return "%s%s strides=%s offset=%d storage=%d" % (str(t.dtype).replace("torch.", ""), list(t.shape), list(t.stride()),
                                                     t.storage_offset(), t.untyped_storage().nbytes() // t.element_size())


def real_like(fake):
    """A real tensor with `fake`'s sizes, strides, offset and dtype (random values)."""
    import torch
    need = fake.storage_offset() + 1 + sum((s - 1) * st for s, st in zip(fake.shape, fake.stride()) if s > 0)
    base = torch.randn(need, device=fake.device).to(fake.dtype) if fake.dtype.is_floating_point else \
        torch.zeros(need, device=fake.device, dtype=fake.dtype)
    return base.as_strided(fake.shape, fake.stride(), fake.storage_offset())


def show_layouts(gm, op):
    import torch
    for n in gm.graph.nodes:
        if n.op != "call_function" or op not in str(n.target):
            continue
        print("  %s %s" % (n.name, n.target))
        args = []
        for a in n.args:
            val = a.meta.get("val") if hasattr(a, "meta") else None
            if isinstance(val, torch.Tensor):
                print("    arg %s: %s" % (a.name, layout(val)))
                args.append(real_like(val))
            else:
                args.append(a)
        print("    other args: %s %s" % ([a for a in n.args if not hasattr(a, "meta")], dict(n.kwargs)))
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor):
            print("    traced: %s" % layout(val))
        try:
            out = n.target(*args, **n.kwargs)
            if isinstance(out, torch.Tensor):
                print("    eager:  %s" % layout(out))
        except Exception as e:  # the probe only reports
            print("    eager: %s: %s" % (type(e).__name__, e))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--mode", default="inference", choices=("inference", "training"))
    p.add_argument("--device", default="cuda")
    p.add_argument("--layouts", metavar="OP", help="print the layouts of the nodes of this op")
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
        if a.layouts:
            show_layouts(gm, a.layouts)
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
