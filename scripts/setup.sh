#!/usr/bin/env bash
# Installs the Debian packages toroid builds and tests with, plus any named as arguments
# (scripts/test.sh adds python3-torch). Idempotent: installs only what is missing, and runs
# apt-get update only when something is.
set -euo pipefail

packages=(cmake ninja-build pkg-config libcli11-dev g++ clang-14 lld llvm-14-tools libclang-rt-14-dev libgtest-dev python3 python3-venv libopenblas-dev libdnnl-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
