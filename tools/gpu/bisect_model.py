#!/usr/bin/env python3
"""Finds the smallest submodules of a model whose toroid-compiled output differs from eager.

    TOROID_LIBRARY=... python3 tools/gpu/bisect_model.py swin_t [--device cuda] [--dtype float32]
        [--dump DIR] [--depth 6] [--tol 1e-3]

Runs the model once in eager with forward hooks that record every submodule's inputs and output,
then compiles each submodule alone (torch.compile(backend="toroid"), fresh dynamo state) and runs
it on its recorded inputs. A submodule fails when its output is off by more than --tol relative to
its largest eager value. Prints the failing submodules deepest first (a failing parent whose
children all pass points at the glue code in its own forward), and with --dump writes each
failing submodule's partitions (.tir, loop IR, kernels) under DIR/<name>/.
Models: those of tools/gpu/model_suite.py (its builders are reused).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)


def flat(x):
    import torch
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for e in x for t in flat(e)]
    if isinstance(x, dict):
        return [t for e in x.values() for t in flat(e)]
    return [t for e in getattr(x, "__dict__", {}).values() for t in flat(e)] if hasattr(x, "to_tuple") else []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--dump", default=None)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--tol", type=float, default=1e-3)
    args = ap.parse_args()
    import torch
    import toroid  # noqa: F401  registers the backend
    import model_suite
    torch.manual_seed(0)
    entry = next(e for e in model_suite.MODELS if e[0] == args.model)
    case = entry[2][0](args.device, "sdpa")
    dtype = getattr(torch, args.dtype)
    model = case.model.eval().to(dtype)
    inputs = [x.to(dtype) if x.is_floating_point() else x for x in case.inputs]
    records = {}
    hooks = []
    for name, mod in model.named_modules():
        if name.count(".") >= args.depth:
            continue
        def hook(m, a, k, out, name=name):
            if name not in records:
                records[name] = ([x.detach().clone() if isinstance(x, torch.Tensor) else x for x in a],
                                 {key: v for key, v in k.items()}, [t.detach().clone() for t in flat(out)])
        hooks.append(mod.register_forward_hook(hook, with_kwargs=True))
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    failing = []
    for name, (a, k, want) in records.items():
        mod = model.get_submodule(name) if name else model
        torch._dynamo.reset()
        options = {"dump_dir": os.path.join(args.dump, name or "model")} if args.dump else {}
        try:
            with torch.no_grad():
                got = flat(torch.compile(mod, backend="toroid", options=options)(*a, **k))
            err = max(((g.float() - w.float()).abs().max().item() / max(w.float().abs().max().item(), 1e-6)
                       for g, w in zip(got, want)), default=0.0)
            bad = err > args.tol or len(got) != len(want)
            what = "rel err %.3g" % err
        except Exception as e:
            bad, what = True, "error: %s" % str(e).splitlines()[0][:200]
        if bad:
            failing.append((name.count(".") if name else -1, name or "<model>", type(mod).__name__, what))
        elif args.dump:
            import shutil
            shutil.rmtree(os.path.join(args.dump, name or "model"), ignore_errors=True)
    for depth, name, kind, what in sorted(failing, reverse=True):
        print("FAIL %-50s %-28s %s" % (name, kind, what))
    print("%d of %d submodules differ from eager" % (len(failing), len(records)))


if __name__ == "__main__":
    main()
