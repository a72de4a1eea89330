#!/usr/bin/env bash
# Short-row kernel shapes on the GPU machine: bench/gpu_bench.py's row workloads for each setting
# THREADS:SLOTS:ROWS ($TOROID_CUDA_ROW_MIN_THREADS, $TOROID_CUDA_ROW_SLOTS,
# $TOROID_CUDA_ROWS_PER_BLOCK; "-" leaves one unset), each with a cache of its own.
#   WORKLOADS="window_softmax softmax" tools/gpu/row_shape_sweep.sh 32:-:8 16:4:8 8:8:16 ...
# INDUCTOR=1 times Inductor too. Run from the repository root with .cudacarry carried; JSON per
# setting in $OUT.
set -uo pipefail
out=${OUT:-/tmp/row-shapes}; mkdir -p "$out"
mkdir -p /tmp/l && tar xJf .cudacarry/libs.tar.xz -C /tmp/l
export LD_LIBRARY_PATH=$PWD/.cudacarry:/tmp/l TOROID_LIBRARY=$PWD/.cudacarry/libtoroid.so PYTHONPATH=$PWD/python
only=(); for w in ${WORKLOADS:-window_softmax}; do only+=(--only "$w"); done
for setting in "$@"; do
  IFS=: read -r t s r <<< "$setting"
  env=(); for kv in "TOROID_CUDA_ROW_MIN_THREADS=$t" "TOROID_CUDA_ROW_SLOTS=$s" "TOROID_CUDA_ROWS_PER_BLOCK=$r"; do
    [ "${kv#*=}" = - ] || env+=("$kv"); done
  echo "== $setting"
  name=${setting//[:-]/_}; n=0; while [ -e "$out/$name-$n.json" ]; do n=$((n + 1)); done
  inductor=(--no-inductor); [ "${INDUCTOR:-0}" = 0 ] || inductor=()
  env "${env[@]}" TOROID_CACHE_DIR="/tmp/tc-$name" python3 bench/gpu_bench.py "${inductor[@]}" --reps 50 \
    --lib .cudacarry/libtoroid.so --toroidc .cudacarry/toroidc "${only[@]}" --json "$out/$name-$n.json" 2>&1 |
    grep -E '^\| [a-z_0-9]+ \| [0-9.]+ '
done
