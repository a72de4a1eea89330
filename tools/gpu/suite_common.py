"""Shared by the GPU suites (opinfo_suite.py, model_suite.py): the toroid logger's fallback
lines, an exception's innermost cause in one line, and the commit under test."""
import logging
import os
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class FallbackCounter(logging.Handler):
    """Collects the ATen op of each "falls back" warning of the "toroid" logger, and the first
    reason given for each op (the warning's text after "falls back to eager PyTorch: ")."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.ops = []
        self.reasons = {}

    def clear(self):
        del self.ops[:]
        self.reasons.clear()

    def emit(self, record):
        msg = record.getMessage()
        if "falls back" in msg:
            op = msg.split(" ")[1]
            self.ops.append(op)
            self.reasons.setdefault(op, msg.split("eager PyTorch: ", 1)[-1][:300])


def first_line(e):
    """The innermost cause's type and first line (BackendCompilerFailed wraps the real error)."""
    seen = set()
    while id(e) not in seen:
        seen.add(id(e))
        inner = getattr(e, "inner_exception", None) or e.__cause__
        if inner is None:
            break
        e = inner
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return ("%s: %s" % (type(e).__name__, lines[0] if lines else ""))[:300]


def commit():
    """The commit of the library under test: TOROID_COMMIT when set (the GPU machine's copy of the
    tree may carry a .git that is not the build's), else the COMMIT file beside TOROID_LIBRARY
    (a carried build), else the tree's HEAD."""
    if os.environ.get("TOROID_COMMIT"):
        return os.environ["TOROID_COMMIT"]
    carried = os.path.join(os.path.dirname(os.environ.get("TOROID_LIBRARY", "")), "COMMIT")
    if os.environ.get("TOROID_LIBRARY") and os.path.exists(carried):  # tools/gpu/make_carry.sh writes it
        with open(carried) as f:
            return f.read().strip()
    try:
        return subprocess.check_output(["git", "-C", REPO, "rev-parse", "HEAD"], stderr=subprocess.DEVNULL,
                                       text=True).strip()
    except Exception:
        return "unknown"


def cuda_healthy(device):
    """False once the CUDA context is unusable (a sticky error: illegal address, device assert)."""
    import torch
    if not device.startswith("cuda"):
        return True
    try:
        torch.cuda.synchronize()
        return (torch.ones(1, device=device) + 1).item() == 2
    except Exception:
        return False
