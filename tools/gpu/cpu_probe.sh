#!/usr/bin/env bash
# Generated CPU kernels alone on this host, against the same workloads compiled by Inductor:
# for each tools/gpu/cpu_probe/*.tir, toroid's kernel (toroidc --emit=cpp, built with the flags
# the runtime uses) timed by probe.cpp at 1 thread and at all of them, the vector instructions of
# its hot loops, and Inductor's compiled module (its `call`, allocation included) for the same
# function from cpu_probe/inductor.py.
#   tools/gpu/cpu_probe.sh CARRY_DIR [NAME...]       (CARRY_DIR as tools/gpu/make_carry.sh packs it)
# VARIANTS="A=1 A=64" times toroid's kernel once per setting (the environment toroidc generates it
# under: a codegen knob such as TOROID_CPU_REDUCTION_LANES), Inductor's once.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
carry=$1; shift
dir=$root/tools/gpu/cpu_probe
work=$(mktemp -d)
build=$("$carry/toroidc" cache flags)  # the runtime's compiler and flags on this host
g++ -O2 -o "$work/probe" "$dir/probe.cpp" -ldl
names=("$@"); [ ${#names[@]} -gt 0 ] || names=($(cd "$dir" && ls *.tir | sed 's/\.tir$//'))
threads=$(nproc)
variants=(${VARIANTS:-default})
echo "| kernel | setting | toroid us, 1 thread | toroid us, $threads threads | Inductor us, $threads threads | zmm / ymm / xmm ops | vaddss |"
echo "|---|---|---|---|---|---|---|"
for n in "${names[@]}"; do
  ind=$(python3 "$dir/inductor.py" "$n" "$threads" 2>/dev/null || echo "-")
  for v in "${variants[@]}"; do
    setting=(); [ "$v" = default ] || setting=("$v")
    env "${setting[@]}" "$carry/toroidc" run "$dir/$n.tir" --emit=cpp > "$work/$n.cpp"
    $build -o "$work/$n.so" "$work/$n.cpp"
    nbufs=$(grep -o 'bufs\[[0-9]*\]' "$work/$n.cpp" | sort -u | wc -l)
    bytes=$((64 << 20))
    one=$(OMP_NUM_THREADS=1 "$work/probe" "$work/$n.so" "$nbufs" "$bytes" 50)
    all=$(OMP_NUM_THREADS=$threads "$work/probe" "$work/$n.so" "$nbufs" "$bytes" 500)
    asm=$(objdump -d --no-show-raw-insn "$work/$n.so" | awk '/<_ZL.*kernel0_rows.*>:/,/^$/')
    z=$(grep -c '%zmm' <<<"$asm" || true); y=$(grep -c '%ymm' <<<"$asm" || true); x=$(grep -c '%xmm' <<<"$asm" || true)
    s=$(grep -c 'vaddss' <<<"$asm" || true)
    echo "| $n | $v | $one | $all | $ind | $z / $y / $x | $s |"
  done
done
rm -rf "$work"
