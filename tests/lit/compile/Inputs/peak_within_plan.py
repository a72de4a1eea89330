"""Reads toroidc --json output on stdin; exits 1 unless the run's measured peak_bytes is at most
planned_peak_bytes, and that at most reference_peak_bytes (every value the reference
interpreter computes, all kept to the end). With --plan-only the second bound is not checked:
the reference counts the root graph's values only, and a while_loop holds two sets of its
carried values (and its body's temporaries) that the root graph does not show; a decomposition
may add intermediates (x[mask]'s nonzero positions) that the reference's graph does not have."""
import json
import sys

stats = json.loads(sys.stdin.read().strip().splitlines()[-1])
ok = stats["peak_bytes"] <= stats["planned_peak_bytes"]
if "--plan-only" not in sys.argv[1:]:
    ok = ok and stats["planned_peak_bytes"] <= stats["reference_peak_bytes"]
print("%s: peak %d, planned %d, reference %d: %s" % (stats["graph"], stats["peak_bytes"], stats["planned_peak_bytes"],
                                                    stats["reference_peak_bytes"], "ok" if ok else "OVER"))
sys.exit(0 if ok else 1)
