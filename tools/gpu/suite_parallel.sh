#!/usr/bin/env bash
# The whole model suite (tools/gpu/model_suite.py) at one commit in one device call: one shard
# per GPU of a multi-GPU machine, run side by side (each process sees one GPU), then the rows
# merged and summarized against issue 17's and 18's Done-when (tools/gpu/suite_summary.py).
#   run(kind="nvidia-h100-x8", carry=[".cudacarry"], command="tools/gpu/suite_parallel.sh [ARGS...]")
#   run(carry=[".cudacarry"], command="SHARDS_PER_GPU=3 tools/gpu/suite_parallel.sh [ARGS...]")  (one GPU)
# ARGS go to every model_suite.py (e.g. --reps 5, --modes inference). Rows go to
# $OUT/models-cuda.jsonl; each shard's log to $OUT/suite-K.log. Shards share the host's CPUs,
# so compile times are longer than on an idle host (both backends alike).
# A suite longer than one call (600 s): pass --time-budget 480 --resume, copy the returned
# models-K.jsonl files into .suite/ in the tree (carried to the next call; keep it out of git),
# and call again with the same machine kind: each shard skips the rows it already has.
set -uo pipefail
out=${OUT:-/tmp/suite}; mkdir -p "$out"
mkdir -p /tmp/toroid-libs && tar xJf .cudacarry/libs.tar.xz -C /tmp/toroid-libs
export LD_LIBRARY_PATH=$PWD/.cudacarry:/tmp/toroid-libs:${LD_LIBRARY_PATH:-}
export TOROID_LIBRARY=$PWD/.cudacarry/libtoroid.so PYTHONPATH=$PWD/python
gpus=$(nvidia-smi -L | wc -l)
# SHARDS_PER_GPU=K (default 1) runs K shards on each GPU: they compile side by side, each on
# cores of its own (taskset; Inductor's compile threads to match), and take turns for the timed
# calls (--time-lock, one lock file a GPU). Compile times then come from fewer cores, alike for
# both backends; rows record shared_gpu.
per_gpu=${SHARDS_PER_GPU:-1}
shards=$((gpus * per_gpu)); cores=$(nproc); per_shard=$((cores / shards)); ((per_shard > 0)) || per_shard=1
echo "$gpus GPUs, $shards shards, commit ${TOROID_COMMIT:-$(cat .cudacarry/COMMIT)}"  # model_suite reads .cudacarry/COMMIT itself
for ((k = 0; k < shards; k++)); do
  [ -f ".suite/models-$k.jsonl" ] && cp ".suite/models-$k.jsonl" "$out/models-$k.jsonl"
  gpu=$((k % gpus)); envs=(CUDA_VISIBLE_DEVICES=$gpu TOROID_CACHE_DIR=/tmp/toroid-cache-$k); pin=(); lock=()
  if ((per_gpu > 1)); then
    first=$((k * per_shard % cores))
    envs+=(TORCHINDUCTOR_COMPILE_THREADS=$per_shard); pin=(taskset -c "$first-$((first + per_shard - 1))")
    lock=(--time-lock "/tmp/suite-gpu-$gpu.lock")
  fi
  env "${envs[@]}" "${pin[@]}" python3 tools/gpu/model_suite.py --shard "$k/$shards" --out "$out/models-$k.jsonl" \
    "${lock[@]}" "$@" > "$out/suite-$k.log" 2>&1 &
done
wait
cat "$out"/models-[0-9]*.jsonl > "$out/models-cuda.jsonl" 2>/dev/null
python3 tools/gpu/suite_summary.py "$out/models-cuda.jsonl"
