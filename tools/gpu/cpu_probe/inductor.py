"""Inductor's compiled module for a cpu_probe workload, timed through its `call` (allocation of
the result included): prints microseconds a call (median of five rounds)."""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

N = sys.argv[1]
torch.set_num_threads(int(sys.argv[2]))
bf = torch.bfloat16
WORKLOADS = {
    "row_sum_bf16": (lambda x: x.float().sum(-1), [(4096, 1024, bf)]),
    "row_sum_f32": (lambda x: x.sum(-1), [(2048, 1024, torch.float32)]),
    "add_bf16": (lambda x, y: x + y, [(512, 1024, bf), (512, 1024, bf)]),
    "softmax_bf16": (lambda x: torch.softmax(x, -1), [(4096, 1024, bf)]),
    "layer_norm_bf16": (lambda x, w, b: F.layer_norm(x, (1024,), w, b, 1e-5), [(4096, 1024, bf), (1024, bf), (1024, bf)]),
    # toroid's kernel0 is the row max and the sum of exponentials; Inductor's figure is the whole loss.
    "cross_entropy_bf16": (lambda x, t: F.cross_entropy(x.float(), t), [(4096, 1024, bf), (4096, torch.int64)]),
    "cross_entropy_bf16_64mb": (lambda x, t: F.cross_entropy(x.float(), t), [(32768, 1024, bf), (32768, torch.int64)]),
    "gelu_affine_bf16": (lambda x, w, b: F.gelu(x * w + b), [(4096, 1024, bf), (1024, bf), (1024, bf)]),
}
fn, shapes = WORKLOADS[N]
args = [torch.rand(*s[:-1]).to(s[-1]) for s in shapes]
f = torch.compile(fn, dynamic=False)
with torch.no_grad():
    f(*args)
    from torch._inductor.codecache import PyCodeCache
    modules = [m for m in getattr(PyCodeCache, "modules", []) if hasattr(m, "call")]
    # Without the module list (another torch), the whole compiled call: marked with a *.
    call = (lambda: modules[-1].call(list(args))) if modules else (lambda: f(*args))
    for _ in range(20):
        call()
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(200):
            call()
        rounds.append((time.perf_counter() - t0) / 200 * 1e6)
print(f"{statistics.median(rounds):.2f}" + ("" if modules else "*"))
