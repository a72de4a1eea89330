#!/usr/bin/env bash
# The main job: build toroid, compile an example graph to native CPU kernels, run it on seeded
# random inputs and check it against the reference interpreter.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$root/build"
example=${1:-$root/examples/rmsnorm.tir}
echo "== toroidc run $example --random-inputs --check --json"
"$root/build/tools/toroidc/toroidc" run "$example" --random-inputs --check --json
