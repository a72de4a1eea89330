#!/usr/bin/env python3
"""Which code holds a model step's device memory under a backend: PyTorch's allocator history
(torch.cuda.memory._record_memory_history) over the first call (compile included) and --steps
more, then the blocks still allocated grouped by the Python line that allocated them (the first
frame outside torch, or the toroid frame), largest first, and toroid's own allocator's figures.
For the models of torch_compile_check.py.

    TOROID_LIBRARY=build/src/capi/libtoroid.so PYTHONPATH=python python3 tools/gpu/memory_breakdown.py \
        [--model mlp] [--backend toroid|inductor|eager] [--steps 5] [--top 12]
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_compile_check as cases  # noqa: E402


def where(frames):
    """The allocating line: the first toroid frame, else the first frame outside torch."""
    def fmt(f):
        return "%s:%d %s" % (os.path.relpath(f["filename"]) if "toroid" in f["filename"] else f["filename"],
                             f["line"], f["name"])
    for f in frames:
        if "/toroid/" in f["filename"]:
            return fmt(f)
    for f in frames:
        if "/torch/" not in f["filename"] and f["filename"] not in ("??", ""):
            return fmt(f)
    return fmt(frames[0]) if frames else "(no stack)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="mlp", choices=["mlp", "resnet18", "resnet18_bf16", "gpt2", "bert", "adam"])
    ap.add_argument("--backend", default="toroid", choices=["toroid", "inductor", "eager"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    import torch
    import toroid
    make_case = getattr(cases, "case_" + args.model)("cuda")
    compile_fn = {"toroid": lambda m: torch.compile(m, backend="toroid"), "inductor": torch.compile,
                  "eager": lambda m: m}[args.backend]
    mib = 2 ** 20
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
    step = make_case(compile_fn)
    step = getattr(step, "core", step)
    step()
    torch.cuda.synchronize()
    first = torch.cuda.memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    held = collections.defaultdict(lambda: [0, 0])
    for seg in snap["segments"]:
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                h = held[where(b.get("frames", []))]
                h[0] += b["size"]
                h[1] += 1
    print("%s %s: %.1f MiB more allocated after the first call, %.1f MiB after %d more; peak over them %.1f MiB" % (
        args.model, args.backend, first / mib, (torch.cuda.memory_allocated() - base) / mib, args.steps,
        (torch.cuda.max_memory_allocated() - base) / mib))
    t = toroid.device_memory()
    print("toroid's own allocator: %.1f MiB lent (peak %.1f), %.1f MiB cached, %d blocks fresh, %d reused" % (
        t["lent_bytes"] / mib, t["peak_lent_bytes"] / mib, t["cached_bytes"] / mib, t["fresh_blocks"], t["reused_blocks"]))
    print("\n| MiB held | blocks | allocated at |\n|---|---|---|")
    for site, (size, n) in sorted(held.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print("| %.2f | %d | %s |" % (size / mib, n, site))
    at_peak(snap, args.top)
    garbage_cycles(torch)


def at_peak(snap, top):
    """The blocks live when the recorded history reached its most allocated bytes, by site: a
    replay of the allocator's trace (an allocation adds its block, a free request removes it)."""
    live, total, best, best_live = {}, 0, 0, {}
    for trace in snap.get("device_traces", []):
        for e in trace:
            action = e.get("action")
            if action == "alloc":
                live[e["addr"]] = (e["size"], e.get("frames", []))
                total += e["size"]
                if total > best:
                    best, best_live = total, dict(live)
            elif action == "free_requested" and e["addr"] in live:
                total -= live.pop(e["addr"])[0]
    held = collections.defaultdict(lambda: [0, 0])
    for size, frames in best_live.values():
        h = held[where(frames)]
        h[0] += size
        h[1] += 1
    print("\nat the recorded peak (%.1f MiB live, the history's blocks only):" % (best / 2 ** 20))
    print("| MiB | blocks | allocated at |\n|---|---|---|")
    for site, (size, n) in sorted(held.items(), key=lambda kv: -kv[1][0])[:top]:
        print("| %.2f | %d | %s |" % (size / 2 ** 20, n, site))


def garbage_cycles(torch, device="cuda"):
    """Device memory only the cycle collector frees: tensors in reference cycles the steps left
    (held until a full collection runs), and the functions and types in those cycles."""
    import gc
    cuda = device == "cuda"
    before = torch.cuda.memory_allocated() if cuda else 0
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    gc.set_debug(0)
    def is_cuda_tensor(o):
        try:
            return isinstance(o, torch.Tensor) and o.device.type == device
        except ReferenceError:  # a weak proxy whose object is gone
            return False
    tensors = [o for o in gc.garbage if is_cuda_tensor(o)]
    in_garbage = {id(o) for o in gc.garbage}

    def describe(o):
        name = type(o).__name__
        if name == "function":
            return "function %s:%d %s" % (os.path.basename(o.__code__.co_filename), o.__code__.co_firstlineno, o.__name__)
        if name == "frame":
            return "frame %s:%d %s" % (os.path.basename(o.f_code.co_filename), o.f_lineno, o.f_code.co_name)
        if name == "cell":
            return "cell"
        return name
    # What holds the cycles' tensors: up to three levels of referrers inside the garbage.
    chains = collections.Counter()
    for t in tensors[:50]:
        level, path = [t], []
        for _ in range(3):
            refs = [r for o in level for r in gc.get_referrers(o) if id(r) in in_garbage and r is not gc.garbage]
            if not refs:
                break
            path.append(describe(refs[0]))
            level = refs[:1]
        chains[" <- ".join(path)] += 1
    nbytes = sum(t.element_size() * t.numel() for t in tensors)
    kinds = collections.Counter(type(o).__name__ for o in gc.garbage)
    funcs = collections.Counter(describe(o) for o in gc.garbage if type(o).__name__ == "function")
    frames = collections.Counter(describe(o) for o in gc.garbage if type(o).__name__ == "frame")
    print("\nreference cycles: %d objects, %d %s tensors (%.1f MiB of storage) only the cycle collector frees" % (
        len(gc.garbage), len(tensors), device, nbytes / 2 ** 20))
    print("types:", ", ".join("%s %d" % kv for kv in kinds.most_common(12)))
    print("functions:", ", ".join("%s %d" % kv for kv in funcs.most_common(8)))
    print("frames:", ", ".join("%s %d" % kv for kv in frames.most_common(8)))
    for chain, n in chains.most_common(5):
        print("  %d tensors held by: %s" % (n, chain))
    gc.garbage.clear()
    gc.collect()
    if cuda:
        torch.cuda.synchronize()
        print("a full collection freed %.1f MiB" % ((before - torch.cuda.memory_allocated()) / 2 ** 20))


if __name__ == "__main__":
    main()
