"""Reads toroidc --json output on stdin; exits 1 unless peak_bytes <= reference_peak_bytes."""
import json
import sys

stats = json.loads(sys.stdin.read().strip().splitlines()[-1])
ok = stats["peak_bytes"] <= stats["reference_peak_bytes"]
print("%s: peak %d, reference %d: %s" % (stats["graph"], stats["peak_bytes"], stats["reference_peak_bytes"],
                                         "ok" if ok else "OVER"))
sys.exit(0 if ok else 1)
