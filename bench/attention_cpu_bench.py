#!/usr/bin/env python3
"""scaled_dot_product_attention on the CPU: toroid's generated kernel (a one-op graph through the
C ABI) against PyTorch eager (F.scaled_dot_product_attention where torch has it, else matmul,
softmax and matmul in f32), same inputs, f32 and bf16.

    TOROID_LIBRARY=build/src/capi/libtoroid.so python3 bench/attention_cpu_bench.py [--shape B,H,L,E] [--threads N]
        [--json FILE]   (appends one line per dtype: bench/results/attention-cpu.jsonl)
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

from toroid import _capi, runtime  # noqa: E402

TYPES = {torch.float32: "f32", torch.bfloat16: "bf16"}


def eager(q, k, v):
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q, k, v)
    s = (q.float() @ k.float().transpose(-1, -2)) / q.shape[-1] ** 0.5
    return (s.softmax(-1) @ v.float()).to(q.dtype)


def ms(f, calls):
    f()
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="4,6,750,64", help="batch, heads, sequence, head size (whisper-base)")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--json", help="append the rows to this JSON-lines file")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    B, H, L, E = (int(x) for x in a.shape.split(","))
    print("| dtype | toroid ms | eager ms | eager/toroid | max abs err |\n|---|---|---|---|---|")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    rows = []
    for dt, name in TYPES.items():
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(B, H, L, E, generator=g).to(dt) for _ in range(3))
        t = "%s[%d, %d, %d, %d]" % (name, B, H, L, E)
        text = ("graph @attention functional {\n" + "".join("  %%%s = input : %s\n" % (n, t) for n in "qkv") +
                "  %%o = aten.scaled_dot_product_attention.default(%%q, %%k, %%v) : %s\n  output %%o\n}\n" % t)
        m = _capi.Module(text)
        ins = (_capi.Tensor * 3)(*[runtime._header(x) for x in (q, k, v)])
        out = torch.empty(B, H, L, E, dtype=dt)
        outs = (_capi.Tensor * 1)(runtime._header(out))
        mine = ms(lambda: m.run_into(ins, outs), a.calls)
        theirs = ms(lambda: eager(q, k, v), a.calls)
        err = (out.float() - eager(q, k, v).float()).abs().max().item()
        print("| %s | %.2f | %.2f | %.2f | %.1e |" % (name, mine, theirs, theirs / mine, err))
        rows.append({"date": datetime.date.today().isoformat(), "commit": commit, "device": platform.processor() or "cpu",
                     "torch": torch.__version__, "eager": "sdpa" if hasattr(torch.nn.functional, "scaled_dot_product_attention")
                     else "math", "dtype": name, "shape": [B, H, L, E], "threads": a.threads, "calls": a.calls,
                     "toroid_ms": mine, "eager_ms": theirs, "eager_over_toroid": theirs / mine, "max_abs_err": err})
    if a.json:
        with open(a.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
