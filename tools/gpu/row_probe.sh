#!/usr/bin/env bash
# Nsight Compute on the row-reduction workloads of bench/gpu_bench.py, toroid's kernel beside
# Inductor's: time, DRAM throughput, registers, achieved occupancy, local-memory traffic (spills)
# and the main warp stall reasons, one line per kernel. Run on the GPU machine from the repo root.
#   tools/gpu/row_probe.sh LIBDIR [WORKLOAD...]     (default: softmax layer_norm rmsnorm_residual)
# Extra environment (TOROID_CUDA_ROW_GROUPS=..., ...) passes through to the benchmark.
set -uo pipefail
B=$1; shift
[ $# -gt 0 ] || set -- softmax layer_norm rmsnorm_residual
mkdir -p /tmp/l && tar xJf "$B/libs.tar.xz" -C /tmp/l
export LD_LIBRARY_PATH=/tmp/l PYTHONUNBUFFERED=1
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread
metrics=$metrics,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active
metrics=$metrics,launch__occupancy_limit_registers,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,smsp__inst_executed.sum
stalls=long_scoreboard,barrier,lg_throttle,short_scoreboard,wait,math_pipe_throttle,not_selected,no_instruction
for s in ${stalls//,/ }; do metrics=$metrics,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio; done
tmp=$(mktemp -d)
for w in "$@"; do
  echo "== $w"
  "$ncu" --kernel-name regex:'^(tk_[a-z]+_[0-9a-f]+_i(32|64)|triton_.*)$' --launch-skip 2 --launch-count 40 \
    --metrics "$metrics" --csv --page raw python3 bench/gpu_bench.py --lib "$B/libtoroid.so" --reps 3 --only "$w" \
    > "$tmp/$w.csv" 2> "$tmp/$w.err" || tail -5 "$tmp/$w.err"
  python3 - "$tmp/$w.csv" "$metrics" <<'EOF'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if head is None:
    sys.exit("no ncu table")
names = rows[head]
seen = set()
for r in rows[head + 2:]:
    d = dict(zip(names, r))
    k = d["Kernel Name"]
    if k in seen:
        continue
    seen.add(k)
    short = lambda m: m.replace("smsp__average_warps_issue_stalled_", "stall:").replace("_per_issue_active.ratio", "")
    wanted = [m for m in names if m in sys.argv[2].split(",")]
    print(k[:40], " ".join(f"{short(m)}={d[m]}" for m in wanted))
EOF
done
rm -rf "$tmp"
