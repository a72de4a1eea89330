#!/usr/bin/env python3
"""A toroidc killed (SIGKILL) while its C++ compiler runs leaves no compiler process behind: the
compiler runs in a process group that a keeper process kills when toroidc dies. Then a compile
into the same cache still works (the killed compile's temporary directory is only garbage)."""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import compile_scaling  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--toroidc", required=True)
args = ap.parse_args()


def processes_mentioning(text):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append("%s: %s" % (pid, cmd[:200]))
    return found


with tempfile.TemporaryDirectory(prefix="toroid-kill-") as work:
    graph = os.path.join(work, "chain.tir")
    with open(graph, "w") as f:
        f.write(compile_scaling.chain(3000))
    cache = os.path.join(work, "cache")
    env = dict(os.environ, TOROID_CACHE_DIR=cache)
    p = subprocess.Popen([args.toroidc, "run", graph, "--compile-only"], env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not processes_mentioning(cache + "/tmp-") and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    compiling = processes_mentioning(cache + "/tmp-")
    if not compiling:
        print("the compiler never started (or finished first): nothing to test")
        sys.exit(1)
    p.send_signal(signal.SIGKILL)
    p.wait()
    time.sleep(1.0)
    left = processes_mentioning(cache + "/tmp-")
    print("compiler processes while compiling: %d; after toroidc was killed: %d" % (len(compiling), len(left)))
    for line in left:
        print("  left running: " + line)
    again = subprocess.run([args.toroidc, "run", graph, "--random-inputs", "--check"], env=env, capture_output=True,
                           text=True)
    matched = again.returncode == 0 and "check: match" in again.stdout
    print("compile into the same cache afterwards: %s" % ("matches" if matched else "FAILED " + again.stderr[-300:]))
    sys.exit(0 if not left and matched else 1)
