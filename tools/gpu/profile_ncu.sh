#!/usr/bin/env bash
# Nsight Compute on toroid's kernels in the GPU benchmark: duration, DRAM throughput (% of peak)
# and SM throughput per kernel. Run on the GPU machine from the repo root.
#   tools/gpu/profile_ncu.sh LIBDIR WORKLOAD...
set -uo pipefail
B=$1; shift
mkdir -p /tmp/l && tar xJf "$B/libs.tar.xz" -C /tmp/l
export LD_LIBRARY_PATH=/tmp/l PYTHONUNBUFFERED=1
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for w in "$@"; do
  echo "== $w"
  "$ncu" --kernel-name regex:'^tk_[a-z]+_[0-9a-f]+_i(32|64)$' --launch-skip 3 --launch-count 4 \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum \
    --csv python3 bench/gpu_bench.py --lib "$B/libtoroid.so" --reps 3 --no-inductor --only "$w" 2>&1 \
    | grep -E '^"[0-9]' | awk -F'","' '{print $5" | "$(NF-2)" | "$(NF-1)" | "$NF}' | sed 's/"$//' | sort -u | head -40
done
