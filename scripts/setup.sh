#!/usr/bin/env bash
# Installs every Debian package braid needs to build, test and benchmark.
# Idempotent: packages already present are skipped, and `apt-get update` runs at most once
# per invocation (and only when something is missing).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libisal-dev
  openmpi-bin libopenmpi-dev      # the peer measured in bench/ (OpenMPI 4.1)
  libgloo-dev                     # the Gloo peer in bench/gloo/
  gnuplot-nox                     # braid-bench --plot
  iproute2 procps                 # ip netns / pgrep in tests
  clang libclang-rt-14-dev llvm-14  # tests/fuzz: clang++, libFuzzer + ASan/UBSan runtimes, llvm-symbolizer
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: done"
