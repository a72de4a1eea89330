#!/usr/bin/env python3
"""Where a model's step goes under torch.compile(backend="toroid"): wall time per step, GPU busy
time per step (sum of kernel times), and the kernels and host ranges that take the most, from
torch.profiler over a few steps after warm-up. For the models of torch_compile_check.py.

    TOROID_LIBRARY=build/src/capi/libtoroid.so PYTHONPATH=python python3 tools/gpu/profile_model.py \
        [--model bert] [--backend toroid|inductor|eager] [--steps 5] [--top 15] [--trace FILE.json]
        [--no-tf32] [--suite-model convnext_tiny [--dtype bfloat16]]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_compile_check as cases  # noqa: E402


def suite_step(name, dtype, compile_fn):
    """A model-suite model's inference call under no_grad, as model_suite.py runs it."""
    import torch
    import model_suite
    case = model_suite.built(name, dtype)
    model, inputs = case.model.eval(), case.inputs
    f = compile_fn(model)

    def step():
        with torch.no_grad():
            return f(*inputs)
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="bert", choices=["mlp", "resnet18", "resnet18_bf16", "gpt2", "bert", "adam"])
    ap.add_argument("--backend", default="toroid", choices=["toroid", "inductor", "eager"])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3, help="steps before timing (CUDA graph keys capture on their 2nd call)")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--trace", default=None, help="write the profiled steps' Chrome trace here (host and GPU timelines)")
    ap.add_argument("--suite-model", default=None, help="a model of tools/gpu/model_suite.py instead, in inference "
                    "(TF32 as --no-tf32 says)")
    ap.add_argument("--dtype", default="float32", help="with --suite-model: float32 or bfloat16")
    ap.add_argument("--no-tf32", action="store_true", help="TF32 off in float32 matmuls and convolutions (the "
                    "model suite's default)")
    args = ap.parse_args()
    import torch
    import toroid  # noqa: F401
    if args.no_tf32:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    compile_fn = {"toroid": lambda m: torch.compile(m, backend="toroid"), "inductor": torch.compile,
                  "eager": lambda m: m}[args.backend]
    if args.suite_model:
        step = suite_step(args.suite_model, args.dtype, compile_fn)
        args.model = "%s %s inference" % (args.suite_model, args.dtype)
    else:
        step = getattr(cases, "case_" + args.model)("cuda")(compile_fn)
    step = getattr(step, "core", step)  # the Adam step without the clones its comparison makes
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) * 1e3 / args.steps
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
    if args.trace:
        prof.export_chrome_trace(args.trace)
    events = prof.key_averages()
    gpu = sum(e.self_device_time_total for e in events if e.device_type == torch.autograd.DeviceType.CUDA) / 1e3
    print("%s %s: %.2f ms per step wall, %.2f ms per step of GPU kernels (%d steps)" % (
        args.model, args.backend, wall, gpu / args.steps, args.steps))
    print(events.table(sort_by="self_device_time_total", row_limit=args.top, max_name_column_width=60))
    print(events.table(sort_by="self_cpu_time_total", row_limit=args.top, max_name_column_width=60))


if __name__ == "__main__":
    main()
