#!/usr/bin/env python3
"""toroid.explain and debug directories through torch.compile (torch >= 2.0), on the CPU and,
where there is one, the GPU: the local tests run the make_fx path of older torch.

  TOROID_LIBRARY=... PYTHONPATH=python python3 tools/gpu/explain_check.py [--devices cpu,cuda]

Checks, per device: explain's table has the forward and (backward=True) backward graphs, the
matmuls as library calls, relu in a kernel fused with other ops; with toroid.config.debug on,
every compile wrote its directory with report.html and the device's kernel source. Prints
PASS/FAIL lines; exits 1 on a failure."""
import argparse
import glob
import io
import os
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", default="cpu,cuda")
    args = ap.parse_args()
    import torch
    import toroid
    failures = 0

    def check(cond, what):
        nonlocal failures
        print(("PASS " if cond else "FAIL ") + what)
        failures += 0 if cond else 1

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 32)

        def forward(self, x):
            return torch.softmax(self.fc2(torch.relu(self.fc1(x)) * 2), -1)

    for device in args.devices.split(","):
        if device == "cuda" and not torch.cuda.is_available():
            print("SKIP cuda: no GPU")
            continue
        torch._dynamo.reset()
        net = Net().to(device)
        out = io.StringIO()
        e = toroid.explain(net, torch.randn(16, 64, device=device), backward=True, file=out)
        text = out.getvalue()
        print(text)
        graphs = {r["graph"] for r in e.rows}
        check(any("forward" in g for g in graphs) and any("backward" in g for g in graphs),
              "%s: explain tells the forward and backward graphs (%s)" % (device, sorted(graphs)))
        runs = {r["runs"] for r in e.rows}
        check("kernel" in runs and "library" in runs, "%s: kernels and library calls (%s)" % (device, sorted(runs)))
        # On the CPU relu fuses with its neighbours into a kernel; on CUDA it is the epilogue of
        # the cuBLASLt addmm before it (fuse_addmm_activation).
        relu = [r for r in e.rows if "relu" in r["op"] and "forward" in r["graph"]]
        want = ("library", "addmm") if device == "cuda" else ("kernel", "fused with")
        check(bool(relu) and relu[0]["runs"] == want[0] and want[1] in relu[0]["detail"],
              "%s: relu runs as %s (%s)" % (device, " ".join(want), relu[:1]))
        torch._dynamo.reset()
        with tempfile.TemporaryDirectory() as d:
            toroid.config.debug, toroid.config.debug_dir = True, d
            try:
                compiled = torch.compile(Net().to(device), backend="toroid")
                compiled(torch.randn(16, 64, device=device)).sum().backward()
            finally:
                toroid.config.debug, toroid.config.debug_dir = False, None
            dirs = sorted(glob.glob(os.path.join(d, "*")))
            kernels = "kernels.cu" if device == "cuda" else "kernels.cpp"
            complete = [x for x in dirs if os.path.exists(os.path.join(x, "report.html")) and
                        os.path.exists(os.path.join(x, kernels))]
            check(len(dirs) >= 2 and complete == dirs,
                  "%s: toroid.config.debug wrote %d directories, each with report.html and %s" % (device, len(dirs),
                                                                                              kernels))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
