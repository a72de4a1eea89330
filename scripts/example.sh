#!/usr/bin/env bash
# The main job: build toroid and run an example graph through toroid-opt's passes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$root/build"
example=${1:-$root/examples/mlp.tir}
echo "== toroid-opt $example --passes=cse,dce --verify-each"
"$root/build/tools/toroid-opt/toroid-opt" "$example" --passes=cse,dce --verify-each
