#!/usr/bin/env python3
"""Issue 19's AOT check: torchvision resnet18 (eval, fp32, batch 4) exported with torch.export,
packaged by toroid.aot.package for the CPU and for CUDA, each package run by the C++ example
(examples/aot, built against an install of toroid) in a fresh process with no Python in it, and
its output compared with eager PyTorch on the same input.

  TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/aot_resnet18.py --aot-run .cudacarry/aot_run
      [--devices cpu,cuda] [--batch 4] [--work DIR] [--json bench/results/aot-gpu.jsonl --commit SHA]

Prints one PASS/FAIL line per device with the max abs error against eager (relative to the
output's largest magnitude) and the package's size and load+run time; --json appends one row per
device to a JSON-lines file."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aot-run", required=True, help="the examples/aot binary")
    ap.add_argument("--devices", default="cpu,cuda")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--work")
    ap.add_argument("--json", help="append one JSON row per device here")
    ap.add_argument("--commit", default="", help="the toroid commit, for --json")
    args = ap.parse_args()
    import torch
    import torchvision
    import toroid
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    x = torch.randn(args.batch, 3, 224, 224)
    with torch.no_grad():
        expected = model(x)
    work = args.work or tempfile.mkdtemp(prefix="toroid-aot-")
    os.makedirs(work, exist_ok=True)
    x_bin = os.path.join(work, "x.bin")
    x.numpy().astype("float32").tofile(x_bin)
    failures = 0
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    for device in args.devices.split(","):
        if device == "cuda" and not torch.cuda.is_available():
            print("SKIP cuda: no GPU")
            continue
        m = model.to(device)
        ep = torch.export.export(m, (x.to(device),))
        pkg = os.path.join(work, "resnet18-%s.toroidpkg" % device)
        start = time.time()
        toroid.aot.package(ep, pkg, device=device)
        pack_s = time.time() - start
        y_bin = os.path.join(work, "y-%s.bin" % device)
        # A fresh process with an empty kernel cache and no compiler on the path: the package's
        # kernels are all it has.
        env = dict(os.environ, CXX="/nonexistent/c++", TOROID_CACHE_DIR=os.path.join(work, "empty-cache-" + device))
        start = time.time()
        run = subprocess.run([args.aot_run, pkg, x_bin, ",".join(map(str, x.shape)), y_bin], env=env,
                             capture_output=True, text=True)
        run_s = time.time() - start
        if run.returncode != 0:
            print("FAIL %s: aot_run exited %d: %s" % (device, run.returncode, (run.stderr or run.stdout).strip()))
            failures += 1
            continue
        import numpy
        got = torch.from_numpy(numpy.fromfile(y_bin, dtype="float32")).reshape(expected.shape)
        err = (got - expected).abs().max().item()
        scale = expected.abs().max().item()
        ok = err <= 1e-3 * max(scale, 1.0)
        failures += 0 if ok else 1
        if args.json:
            row = {"date": datetime.date.today().isoformat(), "commit": args.commit, "gpu": gpu, "torch": torch.__version__,
                   "model": "resnet18 eval fp32", "batch": args.batch, "device": device, "status": "PASS" if ok else "FAIL",
                   "max_abs_err": err, "output_max": scale, "package_mb": os.path.getsize(pkg) / 2**20,
                   "package_s": pack_s, "aot_run_s": run_s, "runner": "examples/aot (new process, no compiler, empty cache)"}
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
        print("%s %s: resnet18 batch %d from the C++ example: max abs err %.3g (output max %.3g); package %.1f MB, "
              "packaged in %.1f s, aot_run (load + run, new process) %.2f s; %s" % (
                  "PASS" if ok else "FAIL", device, args.batch, err, scale, os.path.getsize(pkg) / 2**20, pack_s,
                  run_s, run.stdout.strip()))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
