"""The executors read only the Wrapper IR: compiling each runtime source that runs lines reaches
no loop or graph header but the vocabulary ones (graph/types.h: DType, Device; graph/target.h:
Target; loop/library.h: the library-call enum), no runtime source compares op names, and the C
ABI (src/capi/capi.cpp) includes nothing below the driver and reaches no executor.

Usage: layering.py --cxx CXX --root SRC [--include DIR]... FILE...   (FILE relative to SRC)"""
import argparse
import os
import re
import subprocess
import sys

ALLOWED = {"toroid/graph/types.h", "toroid/graph/target.h", "toroid/loop/library.h"}
CAPI_ALLOWED = {"toroid/c_api.h", "toroid/driver/compile.h", "toroid/driver/package.h", "toroid/driver/user_kernels.h", "toroid/graph/inputs.h",
                "toroid/support/error.h"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    failed = 0
    for f in a.files:
        cmd = [a.cxx, "-std=c++20", "-fsyntax-only", "-H", "-I", os.path.join(a.root, "include"),
               "-I", os.path.join(a.root, os.path.dirname(f))] + [x for d in a.include if d for x in ("-I", d)]
        p = subprocess.run(cmd + [os.path.join(a.root, f)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"FAIL {f}: does not compile\n{p.stderr[-2000:]}")
            failed += 1
            continue
        headers = {m.group(1) for m in re.finditer(r"(toroid/(?:loop|graph|interp|sched)/[\w/]+\.h)", p.stderr)}
        bad = sorted(headers - ALLOWED)
        print(("FAIL " if bad else "ok   ") + f + (": reaches " + ", ".join(bad) if bad else ""))
        failed += bool(bad)
    runtime = os.path.join(a.root, "src", "runtime")
    for d, _, names in os.walk(runtime):
        for n in names:
            path = os.path.join(d, n)
            for i, line in enumerate(open(path, encoding="utf-8"), 1):
                if re.search(r'"aten\.', line):
                    print(f"FAIL {os.path.relpath(path, a.root)}:{i}: compares an op name: {line.strip()}")
                    failed += 1
    # The C ABI talks to the driver only: it includes no header below it and reaches no executor.
    capi = os.path.join(a.root, "src", "capi", "capi.cpp")
    for i, line in enumerate(open(capi, encoding="utf-8"), 1):
        m = re.match(r'#include "(toroid/[\w/]+\.h)"', line)
        if (m and m.group(1) not in CAPI_ALLOWED) or re.search(r"executor|\.wrapper\b|interp::|loop::", line):
            print(f"FAIL src/capi/capi.cpp:{i}: reaches below the driver: {line.strip()}")
            failed += 1
    print(f"{len(a.files)} sources checked, {failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
