#!/usr/bin/env python3
"""Checks that every .tir file in the repository round-trips through toroid-opt unchanged.

For each .tir file (except those whose name contains 'invalid', which are meant to fail):
  1. `toroid-opt FILE` succeeds and prints exactly the file's graph text, i.e. the file minus its
     whole-line comments ('#' lines) and blank lines;
  2. `toroid-opt -` on that output prints it again unchanged.
Usage: tir_roundtrip.py TOROID_OPT SOURCE_ROOT
"""
import os
import subprocess
import sys


def graph_text(path):
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip() for l in f]
    return "\n".join(l for l in lines if l.strip() and not l.lstrip().startswith("#")) + "\n"


def find_tir_files(root):
    skip = {".git", "__pycache__"}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("build"))
        if os.path.relpath(dirpath, root) == "tests":
            dirnames[:] = [d for d in dirnames if d != "golden"]  # ~1700 generated graphs; interp_golden_test checks their form
        for name in sorted(filenames):
            if name.endswith(".tir"):
                yield os.path.join(dirpath, name)


def main():
    opt, root = sys.argv[1], sys.argv[2]
    passed = failed = skipped = 0
    for path in find_tir_files(root):
        rel = os.path.relpath(path, root)
        if "invalid" in os.path.basename(path):
            skipped += 1
            continue
        first = subprocess.run([opt, path], capture_output=True, text=True)
        problem = None
        if first.returncode != 0:
            problem = "toroid-opt failed:\n" + first.stderr
        elif first.stdout != graph_text(path):
            problem = "printed form differs from the file (is the file in canonical form?):\n" + first.stdout
        else:
            second = subprocess.run([opt, "-"], input=first.stdout, capture_output=True, text=True)
            if second.returncode != 0 or second.stdout != first.stdout:
                problem = "printing is not a fixed point:\n" + second.stderr + second.stdout
        if problem:
            failed += 1
            print(f"FAIL: {rel}: {problem}")
        else:
            passed += 1
    print(f"tir round trip: {passed} passed, {failed} failed, {skipped} skipped")
    if passed == 0:
        print("error: no .tir file found", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
