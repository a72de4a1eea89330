#!/usr/bin/env python3
"""torch.compile(backend="toroid") against eager PyTorch and Inductor on a GPU (issue 6).

    TOROID_LIBRARY=build/src/capi/libtoroid.so python3 tools/gpu/torch_compile_check.py [--reps 20] [--rounds 5]
        [--only mlp,resnet18,resnet18_bf16,gpt2,bert,adam] [--device cuda] [--dump DIR]

For each model: eager, toroid and Inductor run the same inputs and weights (fp32); the row passes
when toroid's outputs (and gradients, for the training rows) match eager's within bf16 tolerance
(|a - b| <= 1e-2 + 1.6e-2 |b|). Compile is the first call's time. Times are medians of CUDA
synchronized calls, taken after all three backends compiled, in --rounds rounds of --reps calls
that alternate the backends (each round starts at the next one), so that a machine whose speed
drifts during the run slows all three alike; a case's `core` (the Adam step without the clones
made to compare it) is what is timed. A recompile during the timing is noted in the row. A model whose package (torchvision,
transformers) is missing is a SKIP row; a failure anywhere is a FAIL or ERROR row with its
traceback printed after the table, and the other rows still run. Ops that fell back to eager
are counted per row (the toroid logger's lines). A second table gives each backend's device memory
above what was allocated before its first call (peak from that call on, and held at the end;
PyTorch's allocator and toroid's own together) and device allocations per warm call. PyTorch's
cuBLAS and cuBLASLt workspaces are released before each backend's first call (torch allocates
them again at its next matmul), so that each backend's peak counts the library workspaces it
uses: without that, the eager run allocated PyTorch's (32 MiB on Hopper) before Inductor's base
and only toroid's own were counted. toroid's own workspaces are kept from row to row within a
process: for the peaks of record run each row in a process of its own (--only ROW).
"""
import argparse
import copy
import logging
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

ATOL, RTOL = 1e-2, 1.6e-2  # bf16: 8 bits of mantissa


class Skip(Exception):
    pass


class FallbackCounter(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.ops = []
        self.messages = []  # the whole lines, with the reasons (--verbose prints them)

    def emit(self, record):
        msg = record.getMessage()
        if "falls back" in msg:
            self.ops.append(msg.split(" ")[1])
            self.messages.append(msg)


class Grad:
    """A parameter's gradient, None when backward did not reach it. A compiled backward gives
    zeros where eager gives None (a parameter only an unused output depends on, such as BERT's
    pooler), as Inductor does; the two compare equal."""

    def __init__(self, g):
        self.g = g


def flat_tensors(x):
    import torch
    if isinstance(x, Grad):
        return [x]
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in flat_tensors(v)]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in flat_tensors(v)]
    if hasattr(x, "to_tuple"):  # transformers ModelOutput
        return flat_tensors(x.to_tuple())
    return []


def compare(got, want):
    """None when every tensor matches within bf16 tolerance, else a description."""
    g, w = flat_tensors(got), flat_tensors(want)
    if len(g) != len(w):
        return "%d tensors, eager has %d" % (len(g), len(w))
    for i, (a, b) in enumerate(zip(g, w)):
        if isinstance(a, Grad) or isinstance(b, Grad):
            a, b = a.g, b.g
            if a is None and b is None:
                continue
            if a is None or b is None:
                present = a if a is not None else b
                if present.abs().max().item() == 0:
                    continue
                return "tensor %d: a gradient is None on one side and nonzero on the other" % i
        if a.shape != b.shape:
            return "tensor %d: shape %s, eager %s" % (i, tuple(a.shape), tuple(b.shape))
        a, b = a.detach().float(), b.detach().float()
        excess = ((a - b).abs() - (ATOL + RTOL * b.abs())).max().item() if a.numel() else 0.0
        if excess != excess or excess > 0:  # NaN or out of tolerance
            return "tensor %d: max |diff| %.3g over tolerance (max |eager| %.3g)" % (
                i, (a - b).abs().max().item(), b.abs().max().item())
    return None


def first_call(fn, reps):
    """fn's first call (compile, CUDA synchronized), then memory(): the output of the first call,
    its seconds and the memory figures."""
    import gc
    import torch
    gc.collect()  # what earlier cases left in reference cycles is freed now, not during the measurement
    torch.cuda.synchronize()
    if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):  # see the module's docstring
        torch._C._cuda_clearCublasWorkspaces()
    base = (torch.cuda.memory_allocated(), toroid_memory()["lent_bytes"])
    torch.cuda.reset_peak_memory_stats()
    toroid_memory(reset=True)
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    return out, first, memory(fn, max(reps // 4, 3), base)


def interleaved(steps, reps, rounds):
    """The median ms of a synchronized call of each step (name -> function; its `core` where it
    has one), over `rounds` rounds of `reps` calls each that alternate the steps."""
    import torch
    names = list(steps)
    times = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = getattr(steps[name], "core", steps[name])
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                times[name].append((time.perf_counter() - t0) * 1e3)
    return {n: statistics.median(t) if t else float("nan") for n, t in times.items()}


def distinct(fn, tag):
    """fn behind a function whose code object is its own. Dynamo keeps compiled code per code
    object: two backends compiling copies of one model (one forward, one Adam.step) would share
    one cache list, and each call would first evaluate the other backend's guards (hundreds of
    tensors for the Adam step) before its own."""
    scope = {"fn": fn}
    exec(compile("def %s(*args, **kwargs):\n    return fn(*args, **kwargs)\n" % tag, "<%s>" % tag, "exec"), scope)
    return scope[tag]


def graphs_compiled():
    """Graphs dynamo has handed to a backend so far (a recompile adds one)."""
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


def toroid_memory(reset=False):
    try:
        import toroid
        return toroid.device_memory(reset)
    except Exception:  # an older library, or no CUDA: toroid's own memory is not counted
        return {"lent_bytes": 0, "peak_lent_bytes": 0, "fresh_blocks": 0, "reused_blocks": 0}


def memory(fn, reps, base):
    """A backend's memory, above what was allocated before its first call (`base`: PyTorch's
    bytes, toroid's): the peak MiB
    from its first call on (compile included) and the MiB still held after `reps` more warm calls
    of fn.core (the compiled call alone, where the case sets it) or fn, by PyTorch's allocator and
    toroid's own together (torch.cuda does not see toroid's); and device allocations per call."""
    import torch
    core = getattr(fn, "core", fn)
    torch.cuda.synchronize()
    t0 = toroid_memory()
    a0 = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
    for _ in range(reps):
        core()
    torch.cuda.synchronize()
    t1 = toroid_memory()
    allocs = torch.cuda.memory_stats().get("allocation.all.allocated", 0) - a0
    allocs += (t1["fresh_blocks"] + t1["reused_blocks"]) - (t0["fresh_blocks"] + t0["reused_blocks"])
    mib = 2 ** 20
    toroid_peak = t1["peak_lent_bytes"] - base[1]
    return {"peak_mib": round((torch.cuda.max_memory_allocated() - base[0] + toroid_peak) / mib, 2),
            "held_mib": round((torch.cuda.memory_allocated() - base[0] + t1["lent_bytes"] - base[1]) / mib, 2),
            "toroid_mib": round(toroid_peak / mib, 2),
            "allocs_per_call": round(allocs / reps, 2)}


# Each case builds (make(compile_fn) -> step function returning tensors to compare). make() is
# called once per backend with fresh copies of the same weights and inputs.

def training(base, forward):
    """make() for a forward and backward step of a copy of `base`; forward(f) is the output."""
    def make(compile_fn):
        m = copy.deepcopy(base)
        f = compile_fn(m)

        def step():
            for p in m.parameters():
                p.grad = None
            y = forward(f)
            y.float().pow(2).mean().backward()
            return [y] + [Grad(p.grad) for p in m.parameters()]
        return step
    return make


def case_mlp(device):
    import torch
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(device)
    x = torch.randn(64, 1024, device=device)
    return training(base, lambda f: f(x))


def case_resnet18(device, dtype=None):
    import torch
    try:
        import torchvision
    except ImportError:
        raise Skip("torchvision is not installed")
    torch.manual_seed(0)
    dtype = dtype or torch.float32
    base = torchvision.models.resnet18(weights=None).to(device=device, dtype=dtype).eval()
    x = torch.randn(8, 3, 224, 224, device=device, dtype=dtype)

    def make(compile_fn):
        f = compile_fn(copy.deepcopy(base))

        def step():
            with torch.no_grad():
                return f(x)
        return step
    return make


def _transformer(device, kind):
    import torch
    try:
        import transformers
    except ImportError:
        raise Skip("transformers is not installed")
    torch.manual_seed(0)
    if kind == "gpt2":
        model = transformers.GPT2Model(transformers.GPT2Config())
        vocab = transformers.GPT2Config().vocab_size
    else:
        model = transformers.BertModel(transformers.BertConfig())
        vocab = transformers.BertConfig().vocab_size
    ids = torch.randint(0, vocab, (2, 128), device=device)
    return model.to(device).eval(), ids  # eval: no dropout, so results are comparable


def case_gpt2(device):
    import torch
    base, ids = _transformer(device, "gpt2")

    def make(compile_fn):
        f = compile_fn(copy.deepcopy(base))

        def step():
            with torch.no_grad():
                return f(ids, use_cache=False).last_hidden_state
        return step
    return make


def case_bert(device):
    base, ids = _transformer(device, "bert")
    return training(base, lambda f: f(ids).last_hidden_state)


def case_adam(device):
    import torch
    torch.manual_seed(0)
    shapes = [(64, 64) if i % 3 == 0 else (256,) if i % 3 == 1 else (32, 16, 3) for i in range(100)]
    params = [torch.randn(s, device=device) for s in shapes]
    grads = [torch.randn(s, device=device) for s in shapes]

    def make(compile_fn):
        ps = [torch.nn.Parameter(p.clone()) for p in params]
        for p, g in zip(ps, grads):
            p.grad = g.clone()
        opt = torch.optim.Adam(ps, lr=1e-2)
        # The step itself is compiled: it is what torch.compile sees in a training loop.
        f = compile_fn(opt.step)

        def step():
            f()
            return [p.detach().clone() for p in ps]
        step.core = f  # memory(): the step alone, without the clones made to compare
        return step
    return make


def case_resnet18_bf16(device):
    import torch
    return case_resnet18(device, torch.bfloat16)


CASES = [("mlp fwd+bwd", "mlp", case_mlp), ("resnet18 inference", "resnet18", case_resnet18),
         ("resnet18 inference bf16", "resnet18_bf16", case_resnet18_bf16),
         ("gpt2 forward", "gpt2", case_gpt2), ("bert fwd+bwd", "bert", case_bert),
         ("adam step (100 params)", "adam", case_adam)]


def run_case(make_case, device, reps, rounds, dump):
    import torch
    import torch._dynamo
    from toroid import runtime
    row = {"status": "FAIL", "eager": None, "toroid": None, "inductor": None, "toroid_c": None, "inductor_c": None,
           "note": ""}
    errors = []
    make = make_case(device)
    steps = {"eager": make(lambda m: m)}
    want, _, row["eager_mem"] = first_call(steps["eager"], reps)
    counter = FallbackCounter()
    logging.getLogger("toroid").addHandler(counter)
    torch._dynamo.reset()
    try:
        backend = "toroid"
        if dump:
            from toroid.backend import toroid_backend
            backend = lambda gm, ex: toroid_backend(gm, ex, dump_dir=dump)  # noqa: E731
        step = make(lambda m: torch.compile(distinct(m, "toroid_step"), backend=backend))
        donations = list(runtime.DONATIONS)
        got, row["toroid_c"], row["toroid_mem"] = first_call(step, reps)
        row["donations"] = [runtime.DONATIONS[0] - donations[0], runtime.DONATIONS[1] - donations[1]]
        steps["toroid"] = step
        problem = compare(got, want)
        row["status"] = "PASS" if problem is None else "FAIL"
        row["note"] = problem or ""
    except Exception:
        row["status"] = "ERROR"
        errors.append(("toroid", traceback.format_exc()))
    finally:
        logging.getLogger("toroid").removeHandler(counter)
    if counter.ops:
        row["note"] = (row["note"] + "; " if row["note"] else "") + "fallbacks: " + ", ".join(sorted(set(counter.ops)))
    row["fallback_lines"] = sorted(set(counter.messages))
    try:
        # No dynamo reset: toroid's compiled frames stay for the timing below; dynamo keeps one
        # cache entry per backend (its guards check the backend), which the count confirms.
        before = graphs_compiled()
        step = make(lambda m: torch.compile(distinct(m, "inductor_step")))
        _, row["inductor_c"], row["inductor_mem"] = first_call(step, reps)
        if graphs_compiled() == before:
            raise RuntimeError("Inductor compiled no graph: dynamo reused another backend's")
        steps["inductor"] = step
    except Exception:
        errors.append(("inductor", traceback.format_exc()))
    before = graphs_compiled()
    times = interleaved(steps, reps, rounds)
    for name, ms in times.items():
        row[name] = ms
    if graphs_compiled() != before:
        row["note"] = (row["note"] + "; " if row["note"] else "") + "recompiled while timed"
    torch._dynamo.reset()
    return row, errors


def fmt(x, unit=""):
    return "-" if x is None else ("%.2f%s" % (x, unit))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20, help="calls per backend in each round")
    ap.add_argument("--rounds", type=int, default=5, help="rounds that alternate the backends")
    ap.add_argument("--only", default="", help="comma-separated keys: " + ",".join(k for _, k, _ in CASES))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dump", default=None, help="toroid debug dumps (graphs, kernels) go here")
    ap.add_argument("--verbose", action="store_true", help="print every fallback with its reason")
    ap.add_argument("--debug-log", default=None, help="the toroid logger's debug lines go to this file")
    ap.add_argument("--json", default=None, help="append one JSON line per model to this file")
    ap.add_argument("--commit", default=None, help="the toroid commit measured, recorded in each JSON line")
    args = ap.parse_args()
    import torch
    import toroid  # noqa: F401  registers the backend
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device")
    if args.debug_log:
        handler = logging.FileHandler(args.debug_log)
        handler.setLevel(logging.DEBUG)
        logging.getLogger("toroid").addHandler(handler)
        logging.getLogger("toroid").setLevel(logging.DEBUG)
    print("torch %s, %s, toroid library %s" % (torch.__version__,
                                                torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
                                                os.environ.get("TOROID_LIBRARY", "(default search)")))
    only = set(filter(None, args.only.split(",")))
    rows, failures = [], []
    for title, key, case in CASES:
        if only and key not in only:
            continue
        try:
            row, errors = run_case(case, args.device, args.reps, args.rounds, args.dump)
        except Skip as s:
            row, errors = {"status": "SKIP", "note": str(s)}, []
        except Exception:
            row, errors = {"status": "ERROR", "note": "eager run failed"}, [("eager", traceback.format_exc())]
        rows.append((title, row))
        failures += [(title, who, tb) for who, tb in errors]
        print("%s: %s %s" % (title, row["status"], row.get("note", "")), flush=True)
    print()
    print("| model | result | eager ms | toroid ms | Inductor ms | toroid compile s | Inductor compile s | notes |")
    print("|---|---|---|---|---|---|---|---|")
    for title, r in rows:
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            title, r["status"], fmt(r.get("eager")), fmt(r.get("toroid")), fmt(r.get("inductor")),
            fmt(r.get("toroid_c")), fmt(r.get("inductor_c")), r.get("note", "")))
    print()
    for title, r in rows:
        if r.get("donations") and any(r["donations"]):
            print("%s: toroid calls with donated inputs: %d donated, %d declined (an input held elsewhere)"
                  % (title, r["donations"][0], r["donations"][1]))
    print("MiB above what was allocated before each backend's first call; toroid's own allocator's in brackets")
    print("| model | peak MiB: eager / toroid / Inductor | held after: eager / toroid / Inductor | allocations per call: eager / toroid / Inductor |")
    print("|---|---|---|---|")
    for title, r in rows:
        m = [r.get(k) or {} for k in ("eager_mem", "toroid_mem", "inductor_mem")]
        print("| %s | %s / %s (%s) / %s | %s / %s / %s | %s / %s / %s |" % (
            title, fmt(m[0].get("peak_mib")), fmt(m[1].get("peak_mib")), fmt(m[1].get("toroid_mib")),
            fmt(m[2].get("peak_mib")), fmt(m[0].get("held_mib")), fmt(m[1].get("held_mib")), fmt(m[2].get("held_mib")),
            fmt(m[0].get("allocs_per_call")), fmt(m[1].get("allocs_per_call")), fmt(m[2].get("allocs_per_call"))))
    if args.json:
        import json
        with open(args.json, "a") as fh:
            for title, r in rows:
                fh.write(json.dumps({"date": time.strftime("%Y-%m-%d"), "commit": args.commit, "model": title,
                                     "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
                                     "cuda_graphs": os.environ.get("TOROID_CUDA_GRAPHS", "1") != "0",
                                     "timing": "interleaved %dx%d, core" % (args.rounds, args.reps),
                                     "status": r["status"], "eager_ms": r.get("eager"), "toroid_ms": r.get("toroid"),
                                     "inductor_ms": r.get("inductor"), "toroid_compile_s": r.get("toroid_c"),
                                     "inductor_compile_s": r.get("inductor_c"), "note": r.get("note", ""),
                                     "eager_mem": r.get("eager_mem"), "toroid_mem": r.get("toroid_mem"),
                                     "inductor_mem": r.get("inductor_mem"),
                                     "env": {k: v for k, v in os.environ.items() if k.startswith("TOROID_")
                                             and k not in ("TOROID_LIBRARY", "TOROID_CACHE_DIR")},
                                     "donations": r.get("donations")}) + "\n")
    if args.verbose:
        for title, r in rows:
            for line in r.get("fallback_lines", []):
                print("%s: %s" % (title, line))
    for title, who, tb in failures:
        print("\n--- %s (%s) ---\n%s" % (title, who, tb))
    sys.exit(0 if all(r["status"] in ("PASS", "SKIP") for _, r in rows) else 1)


if __name__ == "__main__":
    main()
