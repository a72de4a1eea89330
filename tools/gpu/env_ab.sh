#!/usr/bin/env bash
# bench/gpu_bench.py under several environment settings, to decide a code-generation or launch
# knob: each workload runs in a process of its own (Inductor compiles a function two workloads
# share once for dynamic shapes, which skews the second), the settings alternate per workload,
# and each setting keeps a kernel cache of its own. Run on the GPU machine from the repository
# root with .cudacarry carried; a setting is "-" (nothing added) or VAR=VALUE[,VAR=VALUE...].
#   WORKLOADS="layer_norm softmax layer_norm_768" tools/gpu/env_ab.sh - TOROID_CUDA_ROW_SLOTS=8
# INDUCTOR=1 times Inductor too; ROUNDS=N (default 1) repeats the alternation. JSON per setting,
# workload and round in $OUT (default /tmp/env-ab); the table rows, each with its unrounded time
# and bandwidth, go to standard output.
set -uo pipefail
out=${OUT:-/tmp/env-ab}; mkdir -p "$out"
mkdir -p /tmp/l && tar xJf .cudacarry/libs.tar.xz -C /tmp/l
export LD_LIBRARY_PATH=$PWD/.cudacarry:/tmp/l TOROID_LIBRARY=$PWD/.cudacarry/libtoroid.so PYTHONPATH=$PWD/python
inductor=(--no-inductor); [ "${INDUCTOR:-0}" = 0 ] || inductor=()
for round in $(seq "${ROUNDS:-1}"); do
  for w in ${WORKLOADS:-layer_norm softmax rmsnorm_residual}; do
    for setting in "$@"; do
      env=(); [ "$setting" = - ] || IFS=, read -r -a env <<< "$setting"
      name=$(printf '%s' "$setting" | tr -c 'A-Za-z0-9_' _)
      printf '%-40s ' "$setting"
      env "${env[@]}" TOROID_CACHE_DIR="/tmp/tc-ab-$name" python3 bench/gpu_bench.py "${inductor[@]}" --reps 50 \
        --lib .cudacarry/libtoroid.so --toroidc .cudacarry/toroidc --only "$w" --json "$out/$name-$w-$round.json" 2>&1 |
        grep -E '^\| [a-z_0-9]+ \| [0-9.]+ ' || echo "| $w | failed (see a run by hand) |"
      # Unrounded figures (only a few of $OUT's files come back from a device call).
      python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["results"][0]
print(" " * 41 + "toroid %.2f us, %.2f%% of the copy BW" % (r["toroid_ms"] * 1e3, r["toroid_bw_pct"]))' \
        "$out/$name-$w-$round.json" 2>/dev/null
    done
  done
done
