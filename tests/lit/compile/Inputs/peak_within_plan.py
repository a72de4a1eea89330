"""Reads toroidc --json output on stdin; exits 1 unless the run's measured peak_bytes is at most
planned_peak_bytes, and that at most reference_peak_bytes (every value the reference
interpreter computes, all kept to the end)."""
import json
import sys

stats = json.loads(sys.stdin.read().strip().splitlines()[-1])
ok = stats["peak_bytes"] <= stats["planned_peak_bytes"] <= stats["reference_peak_bytes"]
print("%s: peak %d, planned %d, reference %d: %s" % (stats["graph"], stats["peak_bytes"], stats["planned_peak_bytes"],
                                                    stats["reference_peak_bytes"], "ok" if ok else "OVER"))
sys.exit(0 if ok else 1)
