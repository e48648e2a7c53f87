#!/usr/bin/env bash
# scripts/install-deps.sh — installs, through apt, what building tessera needs
# beyond the CUDA toolkit (expected at /usr/local/cuda). Safe to run again.
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libsqlite3-dev libcurl4-openssl-dev nlohmann-json3-dev libfmt-dev
      libcli11-dev libgtest-dev libcpp-httplib-dev libmuparser-dev libxxhash-dev zlib1g-dev
      chromium slurm-wlm munge  # the report-rendering and Slurm tests
      clang-format              # the formatting check of .ci/run (scripts/check-format.sh)
      python3 python3-venv)     # the exported Python packages' tests (tests/export)
missing=()
for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -eq 0 ]; then echo "install-deps: everything is installed"; exit 0; fi
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [ ! -x /usr/local/cuda/bin/nvcc ] && [ -z "${CUDA_HOME:-}" ]; then
  echo "install-deps: warning: no CUDA toolkit at /usr/local/cuda (set CUDA_HOME if it is elsewhere)" >&2
fi
