#!/usr/bin/env python3
"""PyTorch's OpInfo database through torch.compile: toroid and Inductor against eager, on the same
samples in the same run.

    TOROID_LIBRARY=build/src/capi/libtoroid.so python3 tools/gpu/opinfo_suite.py
        [--device cuda] [--dtypes float32,bfloat16,float16] [--max-samples 3] [--only add,nn.functional.gelu]
        [--jobs 8] [--op-timeout 300] [--backends toroid,inductor] [--shard K/N] [--out PATH]
        [--time-budget SECONDS] [--resume]
    python3 tools/gpu/opinfo_suite.py --list [--only ...]        # the selection, no device needed
    python3 tools/gpu/opinfo_suite.py --merge A.json B.json ... [--out PATH]

Which OpInfos (printed by --list with the reason for each one left out): every entry of
torch.testing._internal.common_methods_invocations.op_db, since each is a torch function that
dynamo traces and AOTAutograd decomposes to core ATen (the graphs toroid receives), except
  - sparse layouts (sparse.*, to_sparse*): toroid and Inductor compile strided tensors only;
  - FFT (fft.* but fftshift/ifftshift, stft, istft) and LAPACK/cuSOLVER factorizations and
    solvers (linalg.* other than vector_norm, cross, vecdot, multi_dot, vander, diagonal and
    matmul, which decompose to arithmetic; cholesky*, lu, lu_solve, qr, svd, det, inverse, norm's
    nuclear variant, ...): library calls in every backend, not code generation;
  - random output: ops whose OpInfo reseeds around the call (wrapper_set_seed: dropout, bernoulli,
    normal, rand*_like, multinomial, rrelu, fractional_max_pool, ...) and the other samplers by
    name; compiled RNG streams differ from eager's, so outputs are not comparable. The attention
    ops (scaled_dot_product_attention, multi_head_attention_forward) stay: they are called
    directly (the wrapper's torch.manual_seed breaks dynamo's graph) and their samples with
    dropout are skipped;
  - uninitialized output (empty*, new_empty*, resize_*); complex-only ops (view_as_complex,
    view_as_real, complex, polar, chalf); CUDA jiterator ops (user-written kernels, not ATen) and
    broadcast_shapes (no tensor computation).
Per OpInfo the output records its ATen op (op.aten_name, else the name's last part, else the name
with '.' as '_', when torch.ops.aten has it) and whether that op is in data/core_aten_ops.tsv.
(torch 2.11: 575 of the 697 OpInfos are selected, 146 of them with a core ATen op.)

What runs: for each selected op, dtype and the first --max-samples samples of
op.sample_inputs(device, dtype, requires_grad=False), fn(*tensors) calls op(sample.input,
*sample.args, **sample.kwargs) with the sample's tensors (flattened with torch.utils._pytree) as
its inputs; it runs in eager twice (a sample where eager raises, returns complex values or gives
two answers that differ beyond the tolerance below is skipped, not counted) and then through
torch.compile(fn, backend=B, dynamic=False, fullgraph=False) for each backend, every run on fresh
clones of the inputs, dynamo reset before each compile. Outputs, and the inputs after the call
(in-place ops), are compared with torch.testing.assert_close, equal_nan=True, dtype and device
checked: float32 atol=rtol=1e-3, bfloat16 2e-2, float16 1e-2, integer and bool results exactly.
An op passes for a dtype when every counted sample matches and nothing raised; it is counted for
a dtype when it supports the dtype on the device and at least one sample ran in eager. Where
dynamo captured no graph for any backend (data-dependent shapes: masked_select, argwhere), the op
still counts, and per_dtype[dtype]["no_graph"] names it. --backends eager runs fn itself,
uncompiled: the harness's self-check, where everything passes (and the one mode on torch < 2).

Workers: --jobs processes (multiprocessing, spawn) take (op, dtype) units from a queue. A worker
that crashes, or runs one backend of a unit longer than --op-timeout seconds, is replaced; that
backend is an error for that unit and the unit's other backends run again in a fresh worker. A
CUDA error that leaves the context unusable (illegal address, device assert) is the backend's
error too, and the backends after it run in a fresh worker rather than in the broken context.

Splitting a long run: --shard K/N takes the selected ops whose index is K mod N; the file is
written every 30 s and at the end; --time-budget S stops handing out units after S seconds (those
in flight finish); --resume skips units already in --out. --merge combines shard files (their
"ops" sections) and recomputes the totals. On an H100 with 16 cores, Inductor alone ran a tenth
of the ops (174 units) in about 65 s with --jobs 14 and cold caches; toroid comes on top.
Counts: per dtype, toroid_pass/inductor_pass/total; top-level sums over dtypes; fallback_ops counts
the (op, dtype) units in which toroid logged that ATen op falling back to eager (the "toroid"
logger's WARNING lines).
"""
import argparse
import datetime
import itertools
import json
import logging
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, HERE)
from suite_common import FallbackCounter, commit, cuda_healthy, first_line  # noqa: E402

ALL_DTYPES = ("float32", "bfloat16", "float16")
TOLERANCES = {"float32": (1e-3, 1e-3), "bfloat16": (2e-2, 2e-2), "float16": (1e-2, 1e-2)}  # atol, rtol

# ---------------------------------------------------------------------------------------------
# Selection

LINALG_KEPT = {  # linalg ops that decompose into arithmetic (no factorization)
    "linalg.vector_norm", "linalg.cross", "linalg.vecdot", "linalg.multi_dot", "linalg.vander",
    "linalg.diagonal", "linalg.matmul"}
LAPACK = {  # factorizations, solvers and what is built on them (LAPACK, MAGMA, cuSOLVER calls)
    "cholesky", "cholesky_inverse", "cholesky_solve", "geqrf", "lu", "lu_solve", "ormqr", "qr",
    "svd", "svd_lowrank", "pca_lowrank", "symeig", "triangular_solve", "logdet", "det", "inverse", "pinverse",
    "slogdet", "eig", "lstsq", "matrix_rank", "norm.nuc", "nuclear_norm", "linalg.matrix_norm", "linalg.norm"}
RANDOM = {  # samplers, beyond those found through wrapper_set_seed
    "bernoulli", "multinomial", "normal", "uniform", "rand", "rand_like", "randn", "randn_like", "randint",
    "randint_like", "randperm", "cauchy", "exponential", "geometric", "log_normal", "random_",
    "nn.functional.dropout", "nn.functional.dropout1d", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout", "nn.functional.rrelu",
    "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d", "native_dropout"}
UNINITIALIZED = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted",
                 "resize_", "resize_as_"}
COMPLEX_ONLY = {"view_as_complex", "view_as_real", "complex", "polar", "chalf", "cfloat", "cdouble"}
NOT_COMPUTE = {"broadcast_shapes"}
# Attention ops whose OpInfo reseeds around the call for its dropout samples: kept, and their
# samples with dropout (dropout_p > 0, or training=True) are skipped.
SEEDED_KEPT = {"nn.functional.scaled_dot_product_attention", "nn.functional._scaled_dot_product_attention",
               "nn.functional.multi_head_attention_forward"}


def op_key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def _uses_seed(f, depth=0):
    """Whether an OpInfo's function reseeds around the call (the test suite's random ops)."""
    import functools
    if f is None or depth > 3:
        return False
    if isinstance(f, functools.partial):
        return getattr(f.func, "__name__", "") == "wrapper_set_seed" or _uses_seed(f.func, depth + 1)
    code = getattr(f, "__code__", None)
    return code is not None and "wrapper_set_seed" in code.co_names


def exclusion_reason(op):
    name, key = op.name, op_key(op)
    if name.startswith("sparse.") or name.startswith("to_sparse") or "sparse" in name:
        return "sparse layout"
    if (name.startswith("fft.") and not name.endswith("shift")) or name in ("stft", "istft"):
        return "FFT (a library call)"
    if (name.startswith("linalg.") and name not in LINALG_KEPT) or name in LAPACK or key in LAPACK:
        return "LAPACK/cuSOLVER factorization or solver"
    if name in RANDOM or key in RANDOM or (_uses_seed(getattr(op, "op", None)) and name not in SEEDED_KEPT):
        return "random output"
    if name in UNINITIALIZED:
        return "uninitialized output"
    if name in COMPLEX_ONLY:
        return "complex-only"
    if name.startswith("jiterator_"):
        return "CUDA jiterator (a user-written kernel, not an ATen op)"
    if name in NOT_COMPUTE:
        return "no tensor computation"
    return None


def load_core_ops():
    """Base names (aten.X.overload -> X) of data/core_aten_ops.tsv."""
    names = set()
    with open(os.path.join(REPO, "data", "core_aten_ops.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split("\t")[0].split(".")
            if len(parts) >= 2:
                names.add(parts[1])
    return names


def aten_name(op):
    import torch
    for cand in (op.aten_name, op.name.split(".")[-1], op.name.replace(".", "_")):
        if not cand or "." in cand:
            continue
        try:
            getattr(torch.ops.aten, cand)
            return cand
        except Exception:
            pass
    return None


def load_op_db():
    """op_db, importable where expecttest (a test-only dependency) is not installed. The test
    module also parses sys.argv when imported (and prints unittest's help for --help), so it
    sees an empty command line."""
    import types
    import unittest
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("expecttest")
        stub.ACCEPT = False
        stub.TestCase = type("TestCase", (unittest.TestCase,), {})
        sys.modules["expecttest"] = stub
    argv = sys.argv
    sys.argv = [argv[0]]
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    finally:
        sys.argv = argv
    return op_db


def select(op_db, only):
    """(selected OpInfos in op_db order, {key: reason} for the rest)."""
    chosen, excluded = [], {}
    for op in op_db:
        key = op_key(op)
        if only and key not in only and op.name not in only:
            continue
        why = exclusion_reason(op)
        if why:
            excluded[key] = why
        else:
            chosen.append(op)
    return chosen, excluded


# ---------------------------------------------------------------------------------------------
# One (op, dtype) unit, in a worker



def squash(msg, limit=300):
    return " | ".join(ln.strip() for ln in str(msg).splitlines() if ln.strip())[:limit]


def leaves(x):
    import torch
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for k in sorted(x, key=str) for t in leaves(x[k])]
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        return [t for v in x for t in leaves(v)]
    return [x]


def compare(got, want, atol, rtol):
    """None when `got` matches `want`, else a one-line description."""
    import math
    import torch
    g, w = leaves(got), leaves(want)
    if len(g) != len(w):
        return "%d results, eager has %d" % (len(g), len(w))
    for i, (a, b) in enumerate(zip(g, w)):
        if isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                return "result %d: %s, eager gives a tensor" % (i, type(a).__name__)
            exact = not (b.is_floating_point() or b.is_complex())
            try:
                torch.testing.assert_close(a, b, atol=0 if exact else atol, rtol=0 if exact else rtol,
                                           equal_nan=True, check_device=True, check_dtype=True)
            except AssertionError as e:
                return "result %d: %s" % (i, squash(e, 260))
        elif isinstance(b, float) and isinstance(a, (int, float)):
            if not (math.isnan(b) and math.isnan(a)) and abs(a - b) > atol + rtol * abs(b):
                return "result %d: %r, eager %r" % (i, a, b)
        elif a != b:
            return "result %d: %r, eager %r" % (i, a, b)
    return None


def has_complex(x):
    import torch
    return any(isinstance(t, torch.Tensor) and t.is_complex() or isinstance(t, complex) for t in leaves(x))


def describe(sample, dtype):
    import torch

    def d(x):
        if isinstance(x, torch.Tensor):
            return "T%s%s" % (list(x.shape), "" if x.dtype == dtype else ":" + str(x.dtype).replace("torch.", ""))
        if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
            return "[" + ", ".join(d(v) for v in x) + "]"
        return repr(x)
    parts = [d(sample.input)] + [d(a) for a in sample.args] + ["%s=%s" % (k, d(v)) for k, v in sample.kwargs.items()]
    return ", ".join(parts)[:200]


def make_fn(func, vals, pos, spec):
    """fn(*tensors): the OpInfo's call, with the sample's tensors as inputs and the rest fixed."""
    from torch.utils._pytree import tree_unflatten

    def fn(*tensors):
        v = list(vals)
        for i, t in zip(pos, tensors):
            v[i] = t
        inp, args, kwargs = tree_unflatten(v, spec)
        return func(inp, *args, **kwargs)
    return fn


def run_fn(fn, tensors, device):
    """(outputs, inputs after the call), on fresh clones of the inputs."""
    import torch
    ins = [t.clone() for t in tensors]
    out = fn(*ins)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    detach = lambda x: x.detach() if isinstance(x, torch.Tensor) else x  # noqa: E731
    return [detach(x) for x in leaves(out)], ins


def graph_count():
    try:
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"])
    except Exception:
        return 0


def reset_dynamo():
    try:
        import torch._dynamo
        torch._dynamo.reset()
    except ImportError:  # torch < 2: only the 'eager' self-check runs there
        pass


def run_unit(op, key, dtype_name, backends, cfg, send, counter):
    """Runs one (op, dtype) unit; sends ("eager", info), then ("backend", name, result) per backend."""
    import torch
    from torch.utils._pytree import tree_flatten
    dtype = getattr(torch, dtype_name)
    device = cfg["device"]
    atol, rtol = TOLERANCES[dtype_name]
    info = {"samples": 0, "skipped": [], "note": None}
    cases = []
    if not op.supports_dtype(dtype, torch.device(device).type):
        info["note"] = "dtype not supported on %s" % device
    else:
        func = op.op
        if op.name in SEEDED_KEPT:  # the function itself: torch.manual_seed inside the call breaks the graph
            func = getattr(torch.nn.functional, op.name.split(".")[-1])
        torch.manual_seed(0)
        try:
            samples = list(itertools.islice(op.sample_inputs(device, dtype, requires_grad=False), cfg["max_samples"]))
        except Exception as e:
            samples = []
            info["note"] = "sample_inputs raised: " + first_line(e)
        for i, s in enumerate(samples):
            desc = "#%d %s" % (i, describe(s, dtype))
            if op.name in SEEDED_KEPT and (s.kwargs.get("training") is True or (s.kwargs.get("dropout_p") or 0) > 0):
                info["skipped"].append("%s: random (dropout)" % desc)
                continue
            vals, spec = tree_flatten((s.input, tuple(s.args), dict(s.kwargs)))
            pos = [j for j, v in enumerate(vals) if isinstance(v, torch.Tensor)]
            tensors = [vals[j] for j in pos]
            fn = make_fn(func, vals, pos, spec)
            try:
                want = run_fn(fn, tensors, device)
                again = run_fn(fn, tensors, device)
            except Exception as e:
                info["skipped"].append("%s: eager raised %s" % (desc, first_line(e)))
                continue
            if has_complex(want):
                info["skipped"].append("%s: complex results" % desc)
                continue
            if compare(again, want, atol, rtol) is not None:
                info["skipped"].append("%s: eager gives different results on two runs" % desc)
                continue
            cases.append((desc, fn, tensors, want))
    if not cuda_healthy(device):  # eager broke the context: nothing after it would mean anything
        info["note"], cases = "the CUDA context is unusable after eager", []
    info["samples"] = len(cases)
    send(("eager", info))
    if not cases:
        return cuda_healthy(device)
    for b in backends:
        send(("phase", b))
        res = {"status": "pass", "failure": None, "fallbacks": [], "graphs": 0}
        del counter.ops[:]
        for desc, fn, tensors, want in cases:
            send(("sample", desc))
            reset_dynamo()
            before = graph_count()
            try:
                f = fn if b == "eager" else torch.compile(fn, backend=b, dynamic=False, fullgraph=False)
                got = run_fn(f, tensors, device)
                problem = compare(got, want, atol, rtol)
                if problem:
                    res["status"] = "fail"
                    res["failure"] = {"sample": desc, "error": ("mismatch: " + problem)[:300]}
            except Exception as e:
                res["status"] = "error"
                res["failure"] = {"sample": desc, "error": first_line(e)}
            res["graphs"] += max(graph_count() - before, 0)
            if res["status"] != "pass":
                break  # the op fails for this dtype; the first failure is the one reported
        res["fallbacks"] = sorted(set(counter.ops))
        reset_dynamo()
        healthy = cuda_healthy(device)
        if not healthy:
            res["status"] = "error"
            res["failure"] = res["failure"] or {"sample": "", "error": "the CUDA context is unusable after this op"}
            res["failure"]["error"] = ("(CUDA context lost) " + res["failure"]["error"])[:300]
        send(("backend", b, res))
        if not healthy:
            return False
    return True


def worker_main(conn, cfg):
    """A worker process: takes (key, dtype, backends) from conn until None."""
    try:
        import torch
        if "toroid" in cfg["backends"] or "inductor" in cfg["backends"]:
            import torch._dynamo
            for name in ("cache_size_limit", "recompile_limit"):  # reset per compile anyway; be generous
                if hasattr(torch._dynamo.config, name):
                    setattr(torch._dynamo.config, name, 64)
        if "toroid" in cfg["backends"]:
            import toroid  # noqa: F401  registers the backend
        counter = FallbackCounter()
        log = logging.getLogger("toroid")
        log.addHandler(counter)
        log.propagate = False  # the lines are collected per unit; 12 workers printing them is noise
        import warnings
        warnings.simplefilter("ignore")  # likewise dynamo's and the ops' warnings
        ops = {op_key(op): op for op in load_op_db()}
        conn.send(("ready", os.getpid()))
    except Exception:
        conn.send(("fatal", traceback.format_exc()))
        return
    while True:
        msg = conn.recv()
        if msg is None:
            return
        key, dtype_name, backends = msg
        try:
            ok = run_unit(ops[key], key, dtype_name, backends, cfg, conn.send, counter)
        except Exception:
            conn.send(("harness", traceback.format_exc()[-2000:]))
            ok = cuda_healthy(cfg["device"])
        conn.send(("done", None))
        import gc
        gc.collect()
        if cfg["device"].startswith("cuda"):
            try:
                torch.cuda.empty_cache()
            except Exception:
                pass
        if not ok:
            sys.exit(3)  # a fresh process for the next unit


# ---------------------------------------------------------------------------------------------
# The parent: queue, workers, results

class Worker:
    def __init__(self, ctx, cfg):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child, cfg), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.dead = False  # its pipe reached EOF
        self.unit = None  # (key, dtype, backends)
        self.phase = None  # None (sampling and eager), then the backend running
        self.sample = ""  # the sample it runs
        self.since = time.time()

    def kill(self):
        try:
            self.proc.kill()
            self.proc.join(5)
        except Exception:
            pass


class Results:
    def __init__(self, meta, ops_meta, prior=None):
        self.meta = meta
        self.ops = prior or {}
        self.ops_meta = ops_meta

    def entry(self, key, dtype):
        op = self.ops.setdefault(key, dict(self.ops_meta.get(key, {}), dtypes={}))
        return op["dtypes"].setdefault(dtype, {"samples": 0, "skipped": [], "note": None})

    def complete(self, key, dtype, backends):
        e = self.ops.get(key, {}).get("dtypes", {}).get(dtype)
        if e is None:
            return False
        return bool(e.get("harness")) or (e.get("eager_done") and e.get("samples", 0) == 0) or all(
            b in e for b in backends)


def run_units(units, cfg, results, out_path, budget):
    """Runs the units on cfg["jobs"] worker processes; returns the units left unrun (budget)."""
    import multiprocessing
    from multiprocessing.connection import wait
    ctx = multiprocessing.get_context("spawn")
    queue = list(units)
    workers = []
    started = last_save = time.time()
    retried = set()
    left = []  # units not handed out within the time budget
    progress = {"done": 0, "total": len(queue)}

    def requeue_missing(key, dtype, backends, why):
        """Backends of a unit that got no result (the worker was lost) run again, once."""
        e = results.entry(key, dtype)
        missing = [b for b in backends if b not in e]
        if not missing or not e.get("eager_done") or not e.get("samples") or e.get("harness"):
            return False
        if (key, dtype) not in retried:
            retried.add((key, dtype))
            queue.insert(0, (key, dtype, missing))
            return True
        for b in missing:
            e[b] = {"status": "error", "failure": {"sample": "", "error": ("not run: " + why)[:300]},
                    "fallbacks": [], "graphs": 0}
        return False

    def finish(w):
        key, dtype, backends = w.unit
        w.unit = None
        e = results.entry(key, dtype)
        if requeue_missing(key, dtype, backends, "the worker was lost twice"):
            return
        progress["done"] += 1
        counted = e.get("samples") and not e.get("harness")
        status = {b: e[b]["status"] for b in cfg["backends"] if b in e}
        if not counted or any(s != "pass" for s in status.values()) or progress["done"] % 25 == 0:
            print("[%d/%d] %s %s: %s" % (
                progress["done"], progress["total"], key, dtype,
                " ".join("%s=%s" % kv for kv in status.items()) if counted else
                "not counted (%s)" % (e.get("note") or e.get("harness") or "no sample ran in eager")), flush=True)

    def lost(w, why):
        """The worker died or hung: the backend it was running errs, the unit's others run again."""
        key, dtype, _ = w.unit
        e = results.entry(key, dtype)
        if w.phase is None:
            e["harness"] = why[:300]
            e["eager_done"] = True
        else:
            e[w.phase] = {"status": "error", "failure": {"sample": w.sample, "error": why[:300]}, "fallbacks": [],
                          "graphs": 0}
        finish(w)

    while queue or any(w.unit for w in workers):
        if budget and queue and time.time() - started > budget:
            print("time budget spent: %d units left for --resume" % len(queue), flush=True)
            left += queue
            del queue[:]
        for w in list(workers):
            if w.dead or (not w.proc.is_alive() and not w.conn.poll()):
                w.proc.join(1)
                if w.unit:
                    lost(w, "worker died (exit code %s) in %s" % (w.proc.exitcode, w.phase or "eager"))
                w.kill()
                workers.remove(w)
        while len(workers) < min(cfg["jobs"], len(queue) + sum(1 for w in workers if w.unit)):
            workers.append(Worker(ctx, cfg))
        for w in workers:
            if w.ready and w.unit is None and queue:
                w.unit, w.phase, w.since, w.sample = queue.pop(0), None, time.time(), ""
                w.conn.send(w.unit)
        if not queue:  # idle workers are done
            for w in [w for w in workers if w.ready and w.unit is None]:
                try:
                    w.conn.send(None)
                    w.proc.join(10)
                except Exception:
                    pass
                w.kill()
                workers.remove(w)
        for conn in (wait([w.conn for w in workers], timeout=2.0) if workers else []):
            w = next(w for w in workers if w.conn is conn)
            try:
                msg = w.conn.recv()
            except (EOFError, OSError):
                w.dead = True
                continue
            kind = msg[0]
            if kind == "ready":
                w.ready, w.since = True, time.time()
            elif kind == "fatal":
                for x in workers:
                    x.kill()
                sys.exit("a worker could not start:\n" + msg[1])
            elif kind == "eager":
                e = results.entry(w.unit[0], w.unit[1])
                e.update(msg[1])
                e["eager_done"] = True
            elif kind == "phase":
                w.phase, w.since, w.sample = msg[1], time.time(), ""
            elif kind == "sample":
                w.sample = msg[1]
            elif kind == "backend":
                results.entry(w.unit[0], w.unit[1])[msg[1]] = msg[2]
            elif kind == "harness":
                e = results.entry(w.unit[0], w.unit[1])
                e["harness"] = msg[1].strip().splitlines()[-1][:300]
                e["eager_done"] = True
                print("harness error in %s %s:\n%s" % (w.unit[0], w.unit[1], msg[1]), flush=True)
            elif kind == "done":
                finish(w)
        now = time.time()
        for w in list(workers):
            limit = cfg["op_timeout"] if w.ready else max(cfg["op_timeout"], 600)  # startup imports op_db
            if (w.unit or not w.ready) and now - w.since > limit:
                print("timeout: %s in %s" % (w.unit, w.phase or "eager"), flush=True)
                if w.unit:
                    lost(w, "timeout after %ds in %s" % (limit, w.phase or "eager"))
                w.kill()
                workers.remove(w)
        if now - last_save > 30:
            save(results, out_path)
            last_save = now
    for w in workers:
        w.kill()
    return left


# ---------------------------------------------------------------------------------------------
# Summary

def summarize(results):
    meta, ops = results.meta, results.ops
    backends = meta["backends"]
    per_dtype, all_fail, ind_only, tor_only, fallback_ops = {}, [], {}, {}, {}
    dtypes = [d for d in ALL_DTYPES if any(d in o["dtypes"] for o in ops.values())]
    for dt in dtypes:
        row = {"toroid_pass": 0, "inductor_pass": 0, "total": 0, "failures": [], "not_counted": 0, "no_graph": []}
        ind_only[dt], tor_only[dt] = [], []
        for key in sorted(ops):
            e = ops[key]["dtypes"].get(dt)
            if e is None:
                continue
            if not e.get("samples") or e.get("harness") or not all(b in e for b in backends):
                row["not_counted"] += 1
                continue
            row["total"] += 1
            ok = {}
            for b in backends:
                r = e[b]
                ok[b] = r["status"] == "pass"
                row["%s_pass" % b] = row.get("%s_pass" % b, 0) + ok[b]
                if not ok[b]:
                    f = {"op": key, "backend": b, "sample": r["failure"]["sample"], "error": r["failure"]["error"]}
                    row["failures"].append(f)
                    if b == "toroid":
                        all_fail.append(dict(f, dtype=dt))
            if "toroid" in backends and "inductor" in backends:
                if ok["toroid"] and not ok["inductor"]:
                    ind_only[dt].append(key)
                if ok["inductor"] and not ok["toroid"]:
                    tor_only[dt].append(key)
            if all(e[b].get("graphs", 0) == 0 for b in backends):
                row["no_graph"].append(key)
            for f in e.get("toroid", {}).get("fallbacks", []):
                fallback_ops[f] = fallback_ops.get(f, 0) + 1
        per_dtype[dt] = row
    out = dict(meta)
    out["per_dtype"] = per_dtype
    for k in ("toroid_pass", "inductor_pass", "total"):
        out[k] = sum(r.get(k, 0) for r in per_dtype.values())
    out["failures"] = all_fail
    out["inductor_only_failures"] = ind_only
    out["toroid_only_failures"] = tor_only
    out["fallback_ops"] = dict(sorted(fallback_ops.items(), key=lambda kv: (-kv[1], kv[0])))
    out["ops"] = ops
    return out


def save(results, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(summarize(results), f, indent=1, sort_keys=False)
    os.replace(tmp, path)


def print_table(summary):
    backends = summary["backends"]
    both = "toroid" in backends and "inductor" in backends
    cols = ["dtype", "total"] + ["%s pass" % b for b in backends] + (
        ["toroid-only failures", "inductor-only failures"] if both else [])
    print()
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for dt, r in summary["per_dtype"].items():
        cells = [dt, r["total"]] + [r.get("%s_pass" % b, 0) for b in backends]
        if both:
            cells += [len(summary["toroid_only_failures"].get(dt, [])),
                      len(summary["inductor_only_failures"].get(dt, []))]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    if len(summary["per_dtype"]) > 1:
        cells = ["all", summary["total"]] + [sum(r.get("%s_pass" % b, 0) for r in summary["per_dtype"].values())
                                             for b in backends] + (["", ""] if both else [])
        print("| " + " | ".join(str(c) for c in cells) + " |")
    if summary["fallback_ops"]:
        top = list(summary["fallback_ops"].items())[:20]
        print("\ntoroid fallbacks ((op, dtype) units): " + ", ".join("%s %d" % kv for kv in top))


def parse_shard(s):
    if not s:
        return 0, 1
    k, n = s.split("/")
    k, n = int(k), int(n)
    if not 0 <= k < n:
        raise SystemExit("--shard K/N needs 0 <= K < N")
    return k, n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda or cpu (default cuda)")
    ap.add_argument("--dtypes", default=",".join(ALL_DTYPES))
    ap.add_argument("--max-samples", type=int, default=3, help="samples per op and dtype (default 3)")
    ap.add_argument("--only", default="", help="comma-separated op names or name.variant keys")
    ap.add_argument("--jobs", type=int, default=8, help="worker processes (default 8)")
    ap.add_argument("--op-timeout", type=float, default=300, help="seconds one backend may spend on one unit")
    ap.add_argument("--backends", default="toroid,inductor",
                    help="dynamo backends; 'eager' runs fn uncompiled (the harness's self-check: all pass)")
    ap.add_argument("--shard", default="", help="K/N: only the selected ops with index %% N == K")
    ap.add_argument("--out", default=None, help="default bench/results/opinfo-<device>[.shardKofN].json")
    ap.add_argument("--time-budget", type=float, default=0, help="stop handing out units after this many seconds")
    ap.add_argument("--resume", action="store_true", help="keep the units already in --out and run the rest")
    ap.add_argument("--list", action="store_true", help="print the selection and the exclusions, then exit")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="merge shard outputs into --out and exit")
    args = ap.parse_args()

    if args.merge:
        return merge(args)
    import torch
    dtypes = [d for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in TOLERANCES:
            sys.exit("unknown dtype %s (choose from %s)" % (d, ", ".join(ALL_DTYPES)))
    backends = [b for b in args.backends.split(",") if b]
    only = set(filter(None, args.only.split(",")))
    t0 = time.time()
    op_db = load_op_db()
    chosen, excluded = select(op_db, only)
    k, n = parse_shard(args.shard)
    chosen = [op for i, op in enumerate(chosen) if i % n == k]
    core = load_core_ops()
    ops_meta = {}
    for op in chosen:
        a = aten_name(op)
        ops_meta[op_key(op)] = {"aten": "aten." + a if a else None, "core": bool(a and a in core)}
    if args.list:
        for op in chosen:
            m = ops_meta[op_key(op)]
            print("%-55s %-35s %s" % (op_key(op), m["aten"] or "-", "core" if m["core"] else ""))
        print("\n%d OpInfos selected (of %d in op_db, torch %s; %d with a core ATen op)%s" % (
            len(chosen), len(op_db), torch.__version__, sum(m["core"] for m in ops_meta.values()),
            " in shard %d/%d" % (k, n) if n > 1 else ""))
        print("\n%d excluded:" % len(excluded))
        for key, why in sorted(excluded.items(), key=lambda kv: (kv[1], kv[0])):
            print("  %-55s %s" % (key, why))
        return
    if not hasattr(torch, "compile") and set(backends) != {"eager"}:
        sys.exit("torch %s has no torch.compile (2.0 or later is needed); --list works here" % torch.__version__)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("no CUDA device")
    if "toroid" in backends:
        import toroid  # noqa: F401  a missing library is an error here, before any worker starts
        from toroid import _capi
        _capi.lib()
    out_path = args.out or os.path.join(REPO, "bench", "results", "opinfo-%s%s.json" % (
        args.device.split(":")[0], ".shard%dof%d" % (k, n) if n > 1 else ""))
    meta = {"device": args.device,
            "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
            "torch": torch.__version__, "commit": commit(), "backends": backends, "dtypes": dtypes,
            "max_samples": args.max_samples, "shard": "%d/%d" % (k, n),
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "excluded": excluded, "tolerances": {d: TOLERANCES[d] for d in dtypes}}
    prior = None
    if args.resume and os.path.exists(out_path):
        with open(out_path) as f:
            prior = json.load(f).get("ops")
    results = Results(meta, ops_meta, prior)
    units = [(op_key(op), d, backends) for d in dtypes for op in chosen
             if not results.complete(op_key(op), d, backends)]
    # Op by op, its dtypes together: a partial run covers every dtype evenly.
    order = {op_key(op): i for i, op in enumerate(chosen)}
    units.sort(key=lambda u: (order[u[0]], dtypes.index(u[1])))
    print("torch %s, %s, toroid library %s: %d ops x %d dtypes, %d units to run, %d jobs" % (
        torch.__version__, meta["gpu"], os.environ.get("TOROID_LIBRARY", "(default search)"), len(chosen),
        len(dtypes), len(units), args.jobs), flush=True)
    # One compile thread per worker: each worker is its own process, and Inductor's default pool
    # per process would put jobs x cores compile processes on the machine.
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    cfg = {"device": args.device, "backends": backends, "max_samples": args.max_samples, "jobs": max(1, args.jobs),
           "op_timeout": args.op_timeout}
    left = run_units(units, cfg, results, out_path, args.time_budget)
    save(results, out_path)
    summary = summarize(results)
    print_table(summary)
    print("\nwrote %s (%.0f s)%s" % (out_path, time.time() - t0,
                                     "; %d units not run: rerun with --resume" % len(left) if left else ""))


def merge(args):
    parts = []
    for p in args.merge:
        with open(p) as f:
            parts.append(json.load(f))
    if not parts:
        sys.exit("nothing to merge")
    meta = {k: parts[0][k] for k in ("device", "gpu", "torch", "commit", "backends", "dtypes", "max_samples",
                                     "date", "excluded", "tolerances") if k in parts[0]}
    meta["shard"] = "merged from %d files" % len(parts)
    ops = {}
    for p in parts:
        if p.get("commit") != meta.get("commit"):
            print("warning: %s is of commit %s, the first file's is %s" % (p.get("shard"), p.get("commit"),
                                                                            meta.get("commit")))
        for key, op in p.get("ops", {}).items():
            dst = ops.setdefault(key, {k: v for k, v in op.items() if k != "dtypes"})
            dst.setdefault("dtypes", {}).update(op.get("dtypes", {}))
    results = Results(meta, {}, ops)
    out_path = args.out or os.path.join(REPO, "bench", "results", "opinfo-%s.json" % meta["device"].split(":")[0])
    save(results, out_path)
    print_table(summarize(results))
    print("\nwrote %s" % out_path)


if __name__ == "__main__":
    main()
