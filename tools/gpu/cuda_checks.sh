#!/usr/bin/env bash
# The GPU checks of issue 5, run on the GPU machine from the repository root with the binaries
# built on the CPU machine in $1 (default .cudacarry: toroidc, unit_gpu, libtoroid.so, unit_capi and
# libs.tar.xz with the host libraries they link). Writes logs to $OUT when it is set.
#   tools/gpu/cuda_checks.sh [DIR] [examples|peaks|random|unit|sanitizer|torch|user_kernels|all]...
# torch: torch.compile(backend="toroid") against eager and Inductor (issue 6), needs torch 2.x.
# user_kernels: Triton and CUDA C++ kernels in compiled functions (issue 16), needs Triton.
set -uo pipefail
B=${1:-.cudacarry}; shift || true
what=${*:-all}
out=${OUT:-/tmp/cuda-checks}; mkdir -p "$out"
mkdir -p /tmp/toroid-libs && tar xJf "$B/libs.tar.xz" -C /tmp/toroid-libs
export LD_LIBRARY_PATH=/tmp/toroid-libs:${LD_LIBRARY_PATH:-}
export TOROID_CACHE_DIR=${TOROID_CACHE_DIR:-/tmp/toroid-cache}
nvidia-smi -L
examples=(mlp:1 softmax:2 layer_norm:3 rmsnorm:4 cross_entropy:5 attention:6 attention_cpu:6 cnn:7 adam:8 constants:0
          inplace_epilogue:9 cond:11 cond_device:12 item_scale:13 item_size:14 nonzero_gather:15 while_loop:16
          sgd_lr:17)
# Graphs of the lit tests that exercise code shapes the examples do not (split reductions, the
# cuBLASLt epilogues).
extra=(tests/lit/compile/split-reductions.tir:1 tests/lit/compile/Inputs/mm-epilogues.tir:2
       tests/lit/compile/addmm-activation.tir:4 tests/lit/compile/Inputs/conv-cuda.tir:3
       tests/lit/compile/empty-tensors.tir:2 tests/lit/compile/scalar-constant.tir:3 tests/lit/compile/bool-mask.tir:5
       tests/lit/compile/device-kernels.tir:3 tests/lit/compile/index-add.tir:2
       tests/lit/compile/unbacked-pool.tir:6 tests/lit/compile/sort-scatter-reduce.tir:4
       tests/lit/compile/combo-kernels.tir:3 tests/lit/compile/Inputs/combo-unbacked.tir:4 tests/lit/compile/max-pool.tir:5
       tests/lit/compile/Inputs/max-pool-backward.tir:6 tests/lit/compile/Inputs/avg-pool-backward.tir:7
       tests/lit/compile/Inputs/adaptive-pool.tir:8 tests/lit/compile/row-slots.tir:3
       tests/lit/cuda/channels-last-flat.tir:4 tests/lit/compile/update-in-place.tir:5
       tests/lit/compile/donated-inputs.tir:3 tests/lit/compile/Inputs/conv-backward.tir:3
       tests/lit/compile/Inputs/attention-fused.tir:4 tests/lit/cuda/short-row-reductions.tir:4 tests/lit/cuda/short-rows.tir:2
       tests/lit/cuda/welford-infinities.tir:1)
graphs=()
for e in "${examples[@]}"; do graphs+=("examples/${e%%:*}.tir:${e##*:}"); done
graphs+=("${extra[@]}")
has() { [[ " $what " == *" $1 "* || " $what " == *" all "* ]]; }
if has unit; then
  echo "== unit_gpu"; "$B/unit_gpu" 2>&1 | tee "$out/unit_gpu.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|FAILED" 
  if [ -x "$B/unit_capi" ]; then  # the C ABI's tests, its CUDA run into caller memory among them
    echo "== unit_capi"; LD_LIBRARY_PATH="$B:$LD_LIBRARY_PATH" "$B/unit_capi" 2>&1 | tee "$out/unit_capi.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|FAILED"
  fi
fi
if has examples; then
  echo "== examples on the GPU, against the reference"
  for e in "${graphs[@]}"; do
    f=${e%%:*}; s=${e##*:}
    printf '%-40s ' "$f"; "$B/toroidc" run "$f" --device cuda --random-inputs --seed "$s" --check 2>&1 | tail -1
  done 2>&1 | tee "$out/examples.log"
fi
if has examples; then
  # A block per row is the default launch; a capped grid makes each block loop over rows, so a
  # block reduction's shared partials alternate halves from row to row (t_half).
  echo "== rows looped by a capped grid (TOROID_CUDA_ROW_BLOCKS_PER_SM=1, s0 = 1000 rows)"
  d=$(mktemp -d)
  for e in examples/softmax.tir:2 examples/rmsnorm.tir:4 examples/cross_entropy.tir:5 tests/lit/cuda/row-invariant-loads.tir:3; do
    f=${e%%:*}; s=${e##*:}; g="$d/$(basename "$f")"
    sed -E 's/sym s0 : hint=[0-9]+/sym s0 : hint=1000/' "$f" > "$g"
    printf '%-40s ' "$f"; TOROID_CUDA_ROW_BLOCKS_PER_SM=1 "$B/toroidc" run "$g" --device cuda --random-inputs --seed "$s" --check 2>&1 | tail -1
  done 2>&1 | tee "$out/row-loops.log"
  rm -rf "$d"
fi
if has examples; then
  echo "== TF32 allowed (--allow-tf32=conv,matmul): f32 convolutions and matmuls match at bf16's tolerance"
  for e in examples/cnn.tir:7 examples/mlp.tir:1 tests/lit/compile/Inputs/conv-cuda.tir:3 \
           tests/lit/compile/Inputs/conv-backward.tir:3 tests/lit/compile/Inputs/mm-epilogues.tir:2; do
    f=${e%%:*}; s=${e##*:}
    printf '%-40s ' "$f"; "$B/toroidc" run "$f" --device cuda --allow-tf32=conv,matmul --random-inputs --seed "$s" --check 2>&1 | tail -1
  done 2>&1 | tee "$out/tf32.log"
fi
if has examples; then
  echo "== deterministic device kernels (--deterministic): match the reference, and two runs agree bit for bit"
  for e in tests/lit/compile/device-kernels.tir:3 tests/lit/compile/sort-scatter-reduce.tir:4 tests/lit/compile/index-add.tir:2; do
    f=${e%%:*}; s=${e##*:}; d=$(mktemp -d)
    printf '%-40s ' "$f"
    "$B/toroidc" run "$f" --device cuda --deterministic --random-inputs --seed "$s" --check --output-dir "$d/a" | tail -1
    "$B/toroidc" run "$f" --device cuda --deterministic --random-inputs --seed "$s" --output-dir "$d/b" > /dev/null
    diff -r -q "$d/a" "$d/b" > /dev/null && echo "  two runs: identical" || echo "  two runs: DIFFER"
    rm -rf "$d"
  done 2>&1 | tee "$out/deterministic.log"
fi
if has peaks; then
  echo "== memory: measured peak <= planned <= the reference interpreter's, lifecycle replayed"
  for e in "${graphs[@]}"; do
    f=${e%%:*}; s=${e##*:}
    TOROID_VERIFY_LIFECYCLE=1 "$B/toroidc" run "$f" --device cuda --random-inputs --seed "$s" --check --json 2>&1 |
      python3 tests/lit/compile/Inputs/peak_within_plan.py $([[ $f == *while_loop* || $f == *bool-mask* ]] && echo --plan-only)
  done 2>&1 | tee "$out/peaks.log"
fi
if has random; then
  echo "== random graphs on the GPU"
  python3 tests/random_graphs.py --seed 1 --count 200 --jobs 8 --device cuda --toroidc "$B/toroidc" 2>&1 | tee "$out/random.log" | tail -40
fi
if has sanitizer; then
  echo "== compute-sanitizer memcheck on the examples"
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for e in "${graphs[@]}"; do
    f=${e%%:*}; s=${e##*:}; log="$out/memcheck-$(basename "$f" .tir).log"
    printf '%-40s ' "$f"
    "$cs" --tool memcheck --error-exitcode 9 "$B/toroidc" run "$f" --device cuda --random-inputs --seed "$s" --check \
      > "$log" 2>&1
    echo "exit $? $(grep -E 'ERROR SUMMARY' "$log")"
  done 2>&1 | tee "$out/memcheck.log"
fi
if has torch; then
  echo "== torch.compile(backend=\"toroid\") against eager and Inductor"
  TOROID_LIBRARY="$B/libtoroid.so" python3 tools/gpu/torch_compile_check.py 2>&1 | tee "$out/torch_compile.log" | tail -60
  echo "== dynamic shapes, guard recompiles and torch.export"
  TOROID_LIBRARY="$B/libtoroid.so" python3 tools/gpu/torch_frontend_check.py 2>&1 | tee "$out/torch_frontend.log" | tail -40
  echo "== data-dependent programs: item(), nonzero, masks, cond, while_loop, a changing lr"
  TOROID_LIBRARY="$B/libtoroid.so" python3 tools/gpu/data_dependent_check.py 2>&1 | tee "$out/data_dependent.log" |
    grep -E "PASS|FAIL|falls back"
fi
if has user_kernels || has torch; then
  echo "== user kernels: Triton (jit, autotune, triton_op) and toroid.cuda_kernel in compiled functions"
  TOROID_LIBRARY="$B/libtoroid.so" PYTHONPATH=python:${PYTHONPATH:-} python3 tools/gpu/user_kernels_check.py 2>&1 |
    tee "$out/user_kernels.log" | tail -40
fi
