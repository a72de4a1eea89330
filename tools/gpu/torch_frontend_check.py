#!/usr/bin/env python3
"""The frontend paths torch 1.13 cannot test (issue 6), on torch 2.x: dynamic shapes through
dynamo, a recompile when a guard fails, and torch.export programs.

    TOROID_LIBRARY=build/src/capi/libtoroid.so python3 tools/gpu/torch_frontend_check.py [--device cuda]

Each check prints PASS or FAIL with what it saw; the exit status is 1 when any fails.
- dynamic: torch.compile(backend="toroid", dynamic=True) over several batch sizes matches eager,
  with one dynamo graph and one toroid specialization per partition (sizes stay symbolic).
- static: without dynamic=True, a new batch size recompiles (dynamo's own guard) and still matches.
- export: a module with a buffer it mutates (a running count) is exported, saved, loaded with
  toroid.export.load, run, and matches eager, buffer update included; a second batch size runs
  through the same program when the batch dim was exported as dynamic.
"""
import argparse
import logging
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


class Block:
    @staticmethod
    def make(torch):
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = torch.nn.Linear(64, 128)
                self.norm = torch.nn.LayerNorm(128)
                self.fc2 = torch.nn.Linear(128, 32)
                self.register_buffer("calls", torch.zeros(()))

            def forward(self, x):
                self.calls.add_(1)
                h = torch.nn.functional.gelu(self.norm(self.fc1(x)))
                return torch.softmax(self.fc2(h), dim=-1)
        return M


def close(torch, a, b):
    return torch.allclose(a.float(), b.float(), atol=1e-4, rtol=1e-3)


class CompileCounter(logging.Handler):
    """Counts toroid's compiled graphs (the backend's INFO line per graph)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.graphs = 0

    def emit(self, record):
        if record.getMessage().startswith("toroid: compiled "):
            self.graphs += 1


def compiled_runs(torch, device, dynamic, batches):
    """torch.compile(backend="toroid") of a fresh Block over these batch sizes: whether every
    output matched eager, and how many graphs toroid compiled."""
    import toroid  # noqa: F401  registers the backend
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = Block.make(torch)().to(device)
    counter = CompileCounter()
    log = logging.getLogger("toroid")
    log.addHandler(counter)
    log.setLevel(logging.INFO)
    try:
        f = torch.compile(m, backend="toroid", dynamic=dynamic)
        with torch.no_grad():
            ok = all(close(torch, f(x), m(x)) for x in [torch.randn(b, 64, device=device) for b in batches])
    finally:
        log.removeHandler(counter)
    return ok, counter.graphs


def check_dynamic(torch, device):
    ok, graphs = compiled_runs(torch, device, True, (8, 16, 33, 7))
    return ok and graphs == 1, "4 batch sizes match: %s; toroid graphs compiled: %d (want 1)" % (ok, graphs)


def check_static(torch, device):
    ok, graphs = compiled_runs(torch, device, False, (8, 8, 12))
    return ok and graphs == 2, "matches: %s; toroid graphs compiled: %d (want 2: batch 8, then 12)" % (ok, graphs)


def check_export(torch, device):
    import toroid.export
    torch.manual_seed(0)
    m = Block.make(torch)().to(device)
    x = torch.randn(8, 64, device=device)
    batch = torch.export.Dim("batch", min=2, max=1024)
    ep = torch.export.export(m, (x,), dynamic_shapes={"x": {0: batch}})
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "block.pt2")
        torch.export.save(ep, path)
        prog = toroid.export.load(path, device=device)
    ref = Block.make(torch)().to(device)
    ref.load_state_dict(m.state_dict())
    ref.calls.zero_()
    prog_calls = [t for t in prog.lifted if t is not None and t.dim() == 0]
    for t in prog_calls:
        t.zero_()
    ok = True
    with torch.no_grad():
        for b in (8, 20):
            xb = torch.randn(b, 64, device=device)
            ok = ok and close(torch, prog(xb), ref(xb))
    counted = bool(prog_calls) and all(t.item() == 2 for t in prog_calls)
    return ok and counted, "two batch sizes match: %s; buffer mutation written back (calls == 2): %s; fallbacks: %s" % (
        ok, counted, [op for _, op, _ in prog.fallbacks])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    import torch
    try:
        import torch._dynamo  # noqa: F401
        import torch.export  # noqa: F401
    except ImportError:
        sys.exit("these checks need torch >= 2.1 (dynamo and torch.export); this is torch %s" % torch.__version__)
    print("torch %s, device %s" % (torch.__version__, args.device))
    failed = 0
    for name, check in (("dynamic", check_dynamic), ("static", check_static), ("export", check_export)):
        try:
            ok, what = check(torch, args.device)
        except Exception:
            ok, what = False, traceback.format_exc()
        failed += not ok
        print("%s: %s  %s" % (name, "PASS" if ok else "FAIL", what), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
