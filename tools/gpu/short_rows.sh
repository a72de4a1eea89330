#!/usr/bin/env bash
# Builds tools/gpu/short_rows.cu four times (hand-written variants only; with toroid's generated
# softmax_197 kernel; with its layer_norm_768 kernel; with the micro suite's layer_norm over 4096)
# into DIR, for the GPU machine. The generated sources stay in DIR: edit a copy and build it with
# the same -DGENERATED_... to time a change to the code generation before making it.
#   tools/gpu/short_rows.sh TOROIDC DIR
#   (then, there: DIR/short_rows, DIR/short_rows_softmax, DIR/short_rows_ln, DIR/short_rows_ln4096)
set -euo pipefail
toroidc=$1; mkdir -p "$2"; dir=$(cd "$2" && pwd); here=$(cd "$(dirname "$0")" && pwd)
graph() {  # NAME DTYPE ROWS COLS BODY
  printf 'graph @%s functional {\n  sym s0 : hint=%s, range=[1, inf]\n  %%x = input : %s[s0, %s]\n%s\n}\n' "$1" "$3" "$2" "$4" "$5"
}
graph softmax f32 151296 197 '  %y = aten._softmax.default(%x, -1, false) : f32[s0, 197]
  output %y' | "$toroidc" run - --device=cuda --emit=cuda > "$dir/softmax_197.cu"
graph layer_norm bf16 131072 768 '  %w = input : bf16[768]
  %b = input : bf16[768]
  %y = aten.layer_norm.default(%x, [768], %w, %b, 1e-05, true) : bf16[s0, 768]
  output %y' | "$toroidc" run - --device=cuda --emit=cuda > "$dir/layer_norm_768.cu"
graph layer_norm bf16 16384 4096 '  %w = input : bf16[4096]
  %b = input : bf16[4096]
  %y = aten.layer_norm.default(%x, [4096], %w, %b, 1e-05, true) : bf16[s0, 4096]
  output %y' | "$toroidc" run - --device=cuda --emit=cuda > "$dir/layer_norm_4096.cu"
nvcc=(nvcc -O3 -arch=sm_90 -std=c++17)
"${nvcc[@]}" -o "$dir/short_rows" "$here/short_rows.cu"
"${nvcc[@]}" -DGENERATED_SOFTMAX_197="\"$dir/softmax_197.cu\"" -o "$dir/short_rows_softmax" "$here/short_rows.cu"
"${nvcc[@]}" -DGENERATED_LAYER_NORM_768="\"$dir/layer_norm_768.cu\"" -o "$dir/short_rows_ln" "$here/short_rows.cu"
"${nvcc[@]}" -DGENERATED_LAYER_NORM_4096="\"$dir/layer_norm_4096.cu\"" -o "$dir/short_rows_ln4096" "$here/short_rows.cu"
