#!/usr/bin/env python3
"""The model suite's rows (JSON lines of tools/gpu/model_suite.py) against issue 17's and 18's
Done-when: rows slower than eager, fallbacks, and the geomean of Inductor ms / toroid ms (above 1:
toroid faster) over CNNs and over every row, per dtype and mode.

    python3 tools/gpu/suite_summary.py FILE.jsonl [--commit C]

With --commit only that commit's rows count. Each (model, dtype, mode)'s last row counts, so a row
re-run alone (one shard, the GPU to itself) and appended after a sharded suite supersedes it; rows
slower than eager say whether they shared the GPU, where the timing noise is larger.
"""
import argparse
import json
import math

# The convolutional classifiers of the suite (torchvision and timm names).
CNNS = {"resnet18", "resnet50", "mobilenet_v3_small", "efficientnet_b0", "densenet121", "convnext_tiny",
        "regnet_y_400mf", "shufflenet_v2_x1_0", "squeezenet1_1", "mnasnet1_0", "timm_ghostnet"}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--commit", default=None)
    a = ap.parse_args()
    rows = {}
    for line in open(a.file):
        r = json.loads(line)
        if a.commit and not str(r.get("commit", "")).startswith(a.commit):
            continue
        rows[(r["model"], r["dtype"], r["mode"])] = r
    commits = sorted({str(r.get("commit"))[:7] for r in rows.values()})
    print("%d rows, commits %s" % (len(rows), ", ".join(commits)))
    groups = {}
    slower, fallbacks, failed = [], [], []
    for (model, dtype, mode), r in sorted(rows.items()):
        if r.get("status") != "pass":
            failed.append("%s %s %s: %s %s" % (model, dtype, mode, r.get("status"), (r.get("error") or "")[:100]))
            continue
        t, i, e = r.get("toroid_ms"), r.get("inductor_ms"), r.get("eager_ms")
        if t and e and t > e:
            shared = " (shared GPU)" if r.get("shared_gpu") else ""
            slower.append("%s %s %s: toroid %.2f ms, eager %.2f%s" % (model, dtype, mode, t, e, shared))
        if r.get("fallback_ops"):
            fallbacks.append("%s %s %s: %s" % (model, dtype, mode, ", ".join(r["fallback_ops"])))
        if t and i:
            for g in ("all", "cnn" if model in CNNS else "other"):
                groups.setdefault((g, dtype, mode), []).append(i / t)
    print("\n| group | dtype | mode | rows | geomean Inductor/toroid | slowest |")
    print("|---|---|---|---|---|---|")
    for key in sorted(groups):
        xs = groups[key]
        print("| %s | %s | %s | %d | %.2f | %.2f |" % (key + (len(xs), geomean(xs), min(xs))))
    for title, items in (("not passing", failed), ("slower than eager", slower), ("with fallbacks", fallbacks)):
        print("\n%d rows %s%s" % (len(items), title, ":" if items else ""))
        for s in items:
            print("  " + s)


if __name__ == "__main__":
    main()
