#!/usr/bin/env python3
"""GPU benchmark: toroid, PyTorch eager and torch.compile (Inductor, default mode) in one process,
on the same CUDA tensors, for the workloads of issue 5.

    python3 bench/gpu_bench.py --lib build/src/capi/libtoroid.so [--reps 50] [--only NAME] [--json FILE]

toroid runs through its C ABI (libtoroid.so, ctypes) on torch's current stream; its graphs are
written here as .tir text with the same sizes. Each workload reports the median time over
--reps runs (CUDA events around each run), the share of the measured copy bandwidth (the bytes
every implementation must move: inputs read once, outputs written once) and of a copy of the
same bytes (which has a kernel of that size's launch and tail), cold and warm compile
times, and the toroid/Inductor speed ratio. Compile caches start empty (fresh directories), so
the first compile is cold; the warm one compiles the same graph again in this process (toroid:
its in-memory module cache; Inductor: torch._dynamo.reset() then its FX graph and Triton caches).
"warm, new process" is toroid's whole pipeline in a fresh toroidc process (--compile-only), with
only the kernels coming from the on-disk cache.
--isolate runs each workload in a process of its own (this script again, with --only), the rows
then merged into one table and JSON: a workload then meets no state an earlier one left (the
caching allocator's blocks, Inductor's dynamo caches: two workloads built from the same Python
function make Inductor recompile the second with dynamic shapes). Each row's bandwidth shares
are against its own process's copy measurement.
"""
import argparse
import ctypes
import json
import subprocess
import os
import statistics
import sys
import tempfile
import time

os.environ["TOROID_CACHE_DIR"] = tempfile.mkdtemp(prefix="toroid-cache-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cache-")
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-cache-"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

MAX_DIMS = 16
DTYPE_CODES = {torch.bool: 0, torch.uint8: 1, torch.int8: 2, torch.int16: 3, torch.int32: 4, torch.int64: 5,
               torch.float16: 6, torch.bfloat16: 7, torch.float32: 8, torch.float64: 9}
CODE_DTYPES = {v: k for k, v in DTYPE_CODES.items()}


class ToroidTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS),
                ("offset", ctypes.c_int64), ("scalar", ctypes.c_double), ("owner", ctypes.c_void_p)]


class Toroid:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        lib.toroid_last_error.restype = ctypes.c_char_p
        lib.toroid_compile.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.toroid_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(ToroidTensor), ctypes.c_int,
                                   ctypes.POINTER(ToroidTensor), ctypes.c_int, ctypes.c_void_p]
        lib.toroid_num_outputs.argtypes = [ctypes.c_void_p]
        lib.toroid_compile_ms.argtypes = [ctypes.c_void_p]
        lib.toroid_compile_ms.restype = ctypes.c_double
        lib.toroid_cache_hit.argtypes = [ctypes.c_void_p]
        lib.toroid_tensor_release.argtypes = [ctypes.POINTER(ToroidTensor)]
        lib.toroid_module_free.argtypes = [ctypes.c_void_p]
        self.lib = lib

    def check(self, rc):
        if rc != 0:
            raise RuntimeError("toroid: " + self.lib.toroid_last_error().decode())

    def compile(self, text, name):
        m = ctypes.c_void_p()
        self.check(self.lib.toroid_compile(text.encode(), name.encode(), b"cuda", ctypes.byref(m)))
        return m

    def runner(self, module, inputs):
        """A callable running `module` on `inputs` (torch CUDA tensors); returns the outputs as torch tensors
        only when asked (views of toroid's memory, released when the runner runs again)."""
        n_in = len(inputs)
        arr = (ToroidTensor * n_in)()
        for i, t in enumerate(inputs):
            arr[i].data = t.data_ptr() - t.storage_offset() * t.element_size()
            arr[i].dtype = DTYPE_CODES[t.dtype]
            arr[i].ndim = t.dim()
            for d in range(t.dim()):
                arr[i].sizes[d] = t.shape[d]
                arr[i].strides[d] = t.stride(d)
            arr[i].offset = t.storage_offset()
        n_out = self.lib.toroid_num_outputs(module)
        outs = (ToroidTensor * n_out)()
        lib = self.lib

        def run(keep=False):
            for k in range(n_out):
                lib.toroid_tensor_release(ctypes.byref(outs[k]))
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            self.check(lib.toroid_run(module, arr, n_in, outs, n_out, stream))
            return [as_torch(outs[k]) for k in range(n_out)] if keep else None

        return run


class _CudaArray:
    def __init__(self, t):
        dtype = CODE_DTYPES[t.dtype]
        self.dtype = dtype
        itemsize = torch.tensor([], dtype=dtype).element_size()
        store = {torch.bfloat16: torch.int16}.get(dtype, dtype)
        typestr = {torch.float32: "<f4", torch.float64: "<f8", torch.float16: "<f2", torch.int16: "<i2",
                   torch.int32: "<i4", torch.int64: "<i8", torch.uint8: "|u1", torch.int8: "|i1", torch.bool: "|b1"}[store]
        shape = tuple(t.sizes[d] for d in range(t.ndim))
        strides = tuple(t.strides[d] * itemsize for d in range(t.ndim))
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides, "version": 2,
                                         "data": (t.data + t.offset * itemsize, False)}


def as_torch(t):
    if t.ndim < 0:
        return torch.tensor(t.scalar)
    a = _CudaArray(t)
    x = torch.as_tensor(a, device="cuda")
    return x.view(torch.bfloat16) if a.dtype == torch.bfloat16 else x


# ---------------------------------------------------------------------------------------------
# Workloads: (tir text, torch function, inputs, bytes moved)


def nbytes(*ts):
    return sum(t.numel() * t.element_size() for t in ts)


def gelu_affine(rows=8192, cols=8192):
    tir = f"""graph @gelu_affine functional {{
  sym s0 : hint={rows}, range=[1, inf]
  %x = input : bf16[s0, {cols}]
  %w = input : bf16[{cols}]
  %b = input : bf16[{cols}]
  %xw = aten.mul.Tensor(%x, %w) : bf16[s0, {cols}]
  %t = aten.add.Tensor(%xw, %b) : bf16[s0, {cols}]
  %y = aten.gelu.default(%t) : bf16[s0, {cols}]
  output %y
}}
"""
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    return tir, lambda x, w, b: F.gelu(x * w + b), [x, w, b], nbytes(x, w, b) + nbytes(x)


def softmax(rows=8192, cols=8192):
    tir = f"""graph @softmax functional {{
  sym s0 : hint={rows}, range=[1, inf]
  %x = input : f32[s0, {cols}]
  %y = aten._softmax.default(%x, -1, false) : f32[s0, {cols}]
  output %y
}}
"""
    x = torch.randn(rows, cols, device="cuda")
    return tir, lambda x: torch.softmax(x, dim=-1), [x], 2 * nbytes(x)


def window_softmax(windows=8192, heads=3, n=49, dtype=torch.float32):
    """Swin's window attention softmax: scores over 7x7 windows plus a per-head position bias,
    rows of 49 (a row per warp or per block would leave most threads idle)."""
    t = {torch.float32: "f32", torch.bfloat16: "bf16"}[dtype]
    tir = f"""graph @window_softmax functional {{
  sym s0 : hint={windows}, range=[1, inf]
  %x = input : {t}[s0, {heads}, {n}, {n}]
  %b = input : {t}[{heads}, {n}, {n}]
  %a = aten.add.Tensor(%x, %b) : {t}[s0, {heads}, {n}, {n}]
  %y = aten._softmax.default(%a, -1, false) : {t}[s0, {heads}, {n}, {n}]
  output %y
}}
"""
    x = torch.randn(windows, heads, n, n, device="cuda", dtype=dtype)
    b = torch.randn(heads, n, n, device="cuda", dtype=dtype)
    return tir, lambda x, b: torch.softmax(x + b, dim=-1), [x, b], 2 * nbytes(x) + nbytes(b)


def layer_norm(rows=16384, cols=4096, dtype=torch.bfloat16):
    t = {torch.float32: "f32", torch.bfloat16: "bf16"}[dtype]
    tir = f"""graph @layer_norm functional {{
  sym s0 : hint={rows}, range=[1, inf]
  %x = input : {t}[s0, {cols}]
  %w = input : {t}[{cols}]
  %b = input : {t}[{cols}]
  %y = aten.layer_norm.default(%x, [{cols}], %w, %b, 1e-05, true) : {t}[s0, {cols}]
  output %y
}}
"""
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    w = torch.randn(cols, device="cuda", dtype=dtype)
    b = torch.randn(cols, device="cuda", dtype=dtype)
    return tir, lambda x, w, b: F.layer_norm(x, (cols,), w, b, 1e-5), [x, w, b], nbytes(x, w, b) + nbytes(x)


def rmsnorm_residual(rows=16384, cols=4096):
    tir = f"""graph @rmsnorm_residual functional {{
  sym s0 : hint={rows}, range=[1, inf]
  %x = input : bf16[s0, {cols}]
  %r = input : bf16[s0, {cols}]
  %w = input : bf16[{cols}]
  %h = aten.add.Tensor(%x, %r) : bf16[s0, {cols}]
  %hf = aten._to_copy.default(%h, dtype=torch.float32) : f32[s0, {cols}]
  %sq = aten.mul.Tensor(%hf, %hf) : f32[s0, {cols}]
  %ms = aten.mean.dim(%sq, [-1], true) : f32[s0, 1]
  %ve = aten.add.Tensor(%ms, 1e-06) : f32[s0, 1]
  %rs = aten.rsqrt.default(%ve) : f32[s0, 1]
  %hn = aten.mul.Tensor(%hf, %rs) : f32[s0, {cols}]
  %hb = aten._to_copy.default(%hn, dtype=torch.bfloat16) : bf16[s0, {cols}]
  %y = aten.mul.Tensor(%hb, %w) : bf16[s0, {cols}]
  output %y, %h
}}
"""

    def fn(x, r, w):
        h = x + r
        hf = h.float()
        y = (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16) * w
        return y, h

    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    r = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    return tir, fn, [x, r, w], nbytes(x, r, w) + 2 * nbytes(x)


def cross_entropy(rows=4096, classes=32000):
    tir = f"""graph @cross_entropy functional {{
  sym s0 : hint={rows}, range=[1, inf]
  %logits = input : bf16[s0, {classes}]
  %target = input : i64[s0]
  %lf = aten._to_copy.default(%logits, dtype=torch.float32) : f32[s0, {classes}]
  %lsm = aten._log_softmax.default(%lf, 1, false) : f32[s0, {classes}]
  %loss, %tw = aten.nll_loss_forward.default(%lsm, %target, None, 1, -100) : f32[], f32[]
  output %loss
}}
"""
    logits = torch.randn(rows, classes, device="cuda", dtype=torch.bfloat16)
    target = torch.randint(0, classes, (rows,), device="cuda")
    return tir, lambda l, t: F.cross_entropy(l.float(), t), [logits, target], nbytes(logits, target) + 4


def adam(params=100):
    shapes = [(1024 * (1 + i % 7), 512) for i in range(params)]
    lines, outs, ins = [], [], []
    for i, (a, b) in enumerate(shapes):
        t = f"f32[{a}, {b}]"
        for n in "pgmv":
            ins.append(f"  %{n}{i} = input : {t}")
        lines += [f"  %ma{i} = aten.mul.Tensor(%m{i}, 0.9) : {t}", f"  %mb{i} = aten.mul.Tensor(%g{i}, 0.1) : {t}",
                  f"  %mn{i} = aten.add.Tensor(%ma{i}, %mb{i}) : {t}", f"  %va{i} = aten.mul.Tensor(%v{i}, 0.999) : {t}",
                  f"  %gs{i} = aten.mul.Tensor(%g{i}, %g{i}) : {t}", f"  %vb{i} = aten.mul.Tensor(%gs{i}, 0.001) : {t}",
                  f"  %vn{i} = aten.add.Tensor(%va{i}, %vb{i}) : {t}", f"  %mh{i} = aten.div.Tensor(%mn{i}, 0.1) : {t}",
                  f"  %vh{i} = aten.div.Tensor(%vn{i}, 0.001) : {t}", f"  %sq{i} = aten.sqrt.default(%vh{i}) : {t}",
                  f"  %de{i} = aten.add.Tensor(%sq{i}, 1e-08) : {t}", f"  %up{i} = aten.div.Tensor(%mh{i}, %de{i}) : {t}",
                  f"  %st{i} = aten.mul.Tensor(%up{i}, 0.001) : {t}", f"  %pn{i} = aten.sub.Tensor(%p{i}, %st{i}) : {t}"]
        outs += [f"%pn{i}", f"%mn{i}", f"%vn{i}"]
    tir = "graph @adam functional {\n" + "\n".join(ins + lines) + "\n  output " + ", ".join(outs) + "\n}\n"

    def fn(*ts):
        res = []
        for i in range(params):
            p, g, m, v = ts[4 * i:4 * i + 4]
            mn = m * 0.9 + g * 0.1
            vn = v * 0.999 + (g * g) * 0.001
            pn = p - (mn / 0.1) / (torch.sqrt(vn / 0.001) + 1e-8) * 0.001
            res += [pn, mn, vn]
        return res

    tensors = []
    for a, b in shapes:
        tensors += [torch.randn(a, b, device="cuda"), torch.randn(a, b, device="cuda"),
                    torch.randn(a, b, device="cuda"), torch.rand(a, b, device="cuda")]
    return tir, fn, tensors, nbytes(*tensors) // 4 * 7


def attention(dtype, batch=4, heads=6, seq=750, head=64):
    """Whisper-base encoder's attention (4 x 6 heads x 750 tokens x 64): one fused kernel in toroid;
    eager (and Inductor, which calls it as an extern kernel) runs PyTorch's fused SDPA. The bytes
    are q, k, v and the output, each once."""
    t = {torch.float32: "f32", torch.bfloat16: "bf16"}[dtype]
    shape = f"{t}[{batch}, {heads}, {seq}, {head}]"
    tir = f"""graph @attention functional {{
  %q = input : {shape}
  %k = input : {shape}
  %v = input : {shape}
  %o = aten.scaled_dot_product_attention.default(%q, %k, %v) : {shape}
  output %o
}}
"""
    q, k, v = (torch.randn(batch, heads, seq, head, device="cuda", dtype=dtype) for _ in range(3))
    return tir, lambda q, k, v: F.scaled_dot_product_attention(q, k, v), [q, k, v], 4 * nbytes(q)


WORKLOADS = {"gelu_affine": gelu_affine, "softmax": softmax, "layer_norm": layer_norm,
             "rmsnorm_residual": rmsnorm_residual, "cross_entropy": cross_entropy, "adam": adam}
# Run only when named with --only (not part of the default suite yet).
# layer_norm_large moves the copy reference's bytes (1 GiB read, 1 GiB written): against the
# default size it separates a kernel's fixed cost (launch, ramp, tail) from its rate.
# window_softmax(_bf16), softmax_197: the short rows of swin's and ViT's attention.
OPT_IN = {"attention_f32": lambda: attention(torch.float32), "attention_bf16": lambda: attention(torch.bfloat16),
          "layer_norm_large": lambda: layer_norm(rows=131072), "window_softmax": window_softmax,
          "window_softmax_bf16": lambda: window_softmax(dtype=torch.bfloat16),
          # ViT's attention rows (197 = 14 x 14 patches and a class token), batch 64 x 12 heads.
          "softmax_197": lambda: softmax(rows=64 * 12 * 197, cols=197),
          # BERT-base's and GPT-2's layer norm rows (768 bf16: a row of 96 groups).
          "layer_norm_768": lambda: layer_norm(rows=131072, cols=768),
          "layer_norm_768_f32": lambda: layer_norm(rows=65536, cols=768, dtype=torch.float32),
          "softmax_1024": lambda: softmax(rows=65536, cols=1024)}

# ---------------------------------------------------------------------------------------------


def median_ms(fn, reps, warmup=3):
    """Median of per-run times between CUDA events, the runs queued back to back (as Triton's
    do_bench): host work overlaps the previous run's kernels, so a run costs its GPU time unless
    its host side is the slower."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    events[0].record()
    for i in range(reps):
        fn()
        events[i + 1].record()
    events[-1].synchronize()
    return statistics.median(events[i].elapsed_time(events[i + 1]) for i in range(reps))


def host_us(fn, reps):
    """Host time of one call (nothing waited for), in microseconds."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    t = (time.perf_counter() - t0) / reps * 1e6
    torch.cuda.synchronize()
    return t


def copy_bandwidth(reps, nbytes=2 << 30):
    """Bytes a second of a device copy moving `nbytes` (half read, half written). The default, 1 GiB
    each way, is the reference the % columns use; a workload's own byte count gives its
    copy_same_bytes_pct (a copy of that size has the launch and tail a kernel of that size has)."""
    x = torch.empty(max(1, int(nbytes) // 8), device="cuda")
    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x), reps)
    return 2 * x.numel() * 4 / (ms * 1e-3)


def close(a, b):
    a, b = a.float(), b.float()
    tol = 2e-2 if b.dtype != torch.float64 else 1e-6
    return torch.allclose(a, b, rtol=tol, atol=tol)


def process_compile_ms(toroidc, tir, name):
    """The compile_ms a fresh toroidc process reports for `tir` (kernels from the disk cache)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name + ".tir")
        with open(path, "w") as f:
            f.write(tir)
        major, minor = torch.cuda.get_device_capability()
        out = subprocess.run([toroidc, "run", path, "--device", "cuda", "--compile-only", "--json",
                              "--cuda-arch=%d%d" % (major, minor)], check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])["compile_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="path of libtoroid.so")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--only", action="append", help="run only these workloads (repeatable)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--toroidc", help="toroidc for the new-process warm compile (default: beside --lib)")
    ap.add_argument("--isolate", action="store_true", help="each workload in a process of its own")
    args = ap.parse_args()
    if args.isolate:
        return isolated(args)
    torch.manual_seed(0)
    toroid = Toroid(args.lib)
    toroidc = args.toroidc or os.path.join(os.path.dirname(os.path.abspath(args.lib)), "toroidc")
    bw = copy_bandwidth(args.reps)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, copy bandwidth {bw / 1e12:.2f} TB/s",
          flush=True)
    results = []
    for name in chosen_workloads(args.only):
        tir, fn, inputs, moved = dict(WORKLOADS, **OPT_IN)[name]()
        r = {"workload": name, "bytes": moved}
        # toroid: cold compile (empty cache), warm compile (the same graph again).
        t0 = time.perf_counter()
        m = toroid.compile(tir, name + ".tir")
        r["toroid_cold_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        m2 = toroid.compile(tir, name + ".tir")
        r["toroid_warm_ms"] = (time.perf_counter() - t0) * 1e3
        toroid.lib.toroid_module_free(m2)
        if os.path.exists(toroidc):
            # The first also compiles the 64-bit entry points --compile-only checks (a run compiles
            # them only when it needs them); the second is the warm one.
            process_compile_ms(toroidc, tir, name)
            r["toroid_warm_process_ms"] = process_compile_ms(toroidc, tir, name)
        run = toroid.runner(m, inputs)
        expected = fn(*inputs)
        expected = list(expected) if isinstance(expected, (list, tuple)) else [expected]
        got = run(keep=True)
        r["toroid_matches_eager"] = all(close(g, e) for g, e in zip(got, expected))
        del got
        r["toroid_ms"] = median_ms(run, args.reps)
        r["toroid_host_us"] = host_us(run, 5)
        r["eager_ms"] = median_ms(lambda: fn(*inputs), args.reps)
        if not args.no_inductor:
            torch._dynamo.reset()
            compiled = torch.compile(fn)
            t0 = time.perf_counter()
            compiled(*inputs)
            torch.cuda.synchronize()
            r["inductor_cold_s"] = time.perf_counter() - t0
            torch._dynamo.reset()
            compiled = torch.compile(fn)
            t0 = time.perf_counter()
            compiled(*inputs)
            torch.cuda.synchronize()
            r["inductor_warm_ms"] = (time.perf_counter() - t0) * 1e3
            r["inductor_ms"] = median_ms(lambda: compiled(*inputs), args.reps)
        same = copy_bandwidth(args.reps, moved)
        r["copy_same_bytes_bw_pct"] = 100 * same / bw
        for k in ("toroid", "eager", "inductor"):
            if k + "_ms" in r:
                r[k + "_bw_pct"] = 100 * moved / (r[k + "_ms"] * 1e-3) / bw
                r[k + "_copy_same_bytes_pct"] = 100 * moved / (r[k + "_ms"] * 1e-3) / same
        if "inductor_ms" in r:
            r["toroid_vs_inductor"] = r["inductor_ms"] / r["toroid_ms"]
        results.append(r)
        print(json.dumps(r), flush=True)
        toroid.lib.toroid_module_free(m)
        del inputs, expected
        torch.cuda.empty_cache()
    report(results, bw, args.json, torch.cuda.get_device_name(), build_commit(args.lib))
    return 0


def chosen_workloads(only):
    chosen = dict(WORKLOADS, **{n: f for n, f in OPT_IN.items() if only and n in only})
    return [n for n in chosen if not only or n in only]


def isolated(args):
    """Each workload through this script in a fresh process; their rows merged."""
    names = chosen_workloads(args.only)
    results, bws, device = [], [], None
    for name in names:
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            cmd = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--reps", str(args.reps),
                   "--only", name, "--json", tmp.name]
            cmd += ["--no-inductor"] if args.no_inductor else []
            cmd += ["--toroidc", args.toroidc] if args.toroidc else []
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{name}: its process failed (exit {run.returncode}):\n{run.stdout[-2000:]}{run.stderr[-2000:]}",
                      file=sys.stderr, flush=True)
                continue
            with open(tmp.name) as f:
                got = json.load(f)
        for r in got["results"]:
            r["copy_bw"] = got["copy_bw"]
            results.append(r)
            print(json.dumps(r), flush=True)
        bws.append(got["copy_bw"])
        device = got["device"]
    if not results:
        return 1
    report(results, statistics.median(bws), args.json, device, build_commit(args.lib))
    return 0 if len(results) == len(names) else 1


def build_commit(lib):
    """The commit the library was built at: tools/gpu/make_carry.sh writes COMMIT beside it."""
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(lib)), "COMMIT")) as f:
            return f.read().strip()[:7] or None
    except OSError:
        return None


def report(results, bw, json_path, device, commit=None):
    """The table of `results` on standard output; all of it as JSON to json_path, with the date
    and the library's commit."""
    print()
    print("| workload | toroid ms | eager ms | Inductor ms | toroid % copy BW | Inductor % copy BW "
          "| same-bytes copy % copy BW | toroid % same-bytes copy | toroid/Inductor | toroid cold s | toroid warm ms | toroid warm, new process ms | Inductor cold s | Inductor warm ms | matches |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        g = lambda k, f="{:.3f}": f.format(r[k]) if k in r else "-"  # noqa: E731
        # Two decimals on the shares of the copy bandwidth: one rounded 89.95% up to a 90.0% line.
        print(f"| {r['workload']} | {g('toroid_ms', '{:.4f}')} | {g('eager_ms')} | {g('inductor_ms', '{:.4f}')} | {g('toroid_bw_pct', '{:.2f}%')} "
              f"| {g('inductor_bw_pct', '{:.2f}%')} | {g('copy_same_bytes_bw_pct', '{:.0f}%')} "
              f"| {g('toroid_copy_same_bytes_pct', '{:.0f}%')} | {g('toroid_vs_inductor', '{:.2f}x')} | {g('toroid_cold_s', '{:.2f}')} "
              f"| {g('toroid_warm_ms', '{:.2f}')} | {g('toroid_warm_process_ms', '{:.1f}')} | {g('inductor_cold_s', '{:.2f}')} | {g('inductor_warm_ms', '{:.0f}')} "
              f"| {r['toroid_matches_eager']} |")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "commit": commit, "device": device, "copy_bw": bw,
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
