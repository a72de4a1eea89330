#!/usr/bin/env python3
"""Many processes compiling the same graph into one kernel cache at once, round after round:
every process must run the graph and match the reference (no "cannot load the freshly compiled"
error, no other process's half-written entry), and each round leaves exactly one entry.

    python3 tests/cache_race.py --toroidc build/tools/toroidc/toroidc [--procs 12] [--rounds 20]

Prints "N passed, N failed" (one per process run) and exits non-zero on any failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile

GRAPH = """graph @race functional {
  %x = input : f32[64, 32]
  %y = aten.mul.Tensor(%x, %x) : f32[64, 32]
  %z = aten.add.Tensor(%y, %SEED%.0) : f32[64, 32]
  output %z
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--toroidc", required=True)
    ap.add_argument("--procs", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as root:
        for r in range(args.rounds):
            cache = os.path.join(root, "cache%d" % r)
            graph = os.path.join(root, "race%d.tir" % r)
            with open(graph, "w") as f:
                f.write(GRAPH.replace("%SEED%", str(r)))  # a new key each round: every process misses
            env = dict(os.environ, TOROID_CACHE_DIR=cache)
            procs = [subprocess.Popen([args.toroidc, "run", graph, "--random-inputs", "--check"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                     for _ in range(args.procs)]
            for p in procs:
                out = p.communicate()[0]
                if p.returncode == 0 and "check: match" in out:
                    passed += 1
                else:
                    failed += 1
                    print("round %d: exit %d:\n%s" % (r, p.returncode, out[-2000:]))
            entries = [e for e in os.listdir(cache) if e.startswith("so-")]
            leftovers = [e for e in os.listdir(cache) if e.startswith(("tmp-", "trash-"))]
            if len(entries) != 1 or leftovers:
                failed += 1
                print("round %d: cache holds %s" % (r, sorted(os.listdir(cache))))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
