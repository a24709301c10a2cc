#!/usr/bin/env bash
# Installs every Debian package braid needs to build, test and benchmark.
# Idempotent: packages already present are skipped, and `apt-get update` runs at most once
# per invocation (and only when something is missing).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libisal-dev
  libssl-dev                      # libcrypto: HMAC-SHA256 of the job-token handshake
  openmpi-bin libopenmpi-dev      # the peer measured in bench/ (OpenMPI 4.1)
  libgloo-dev                     # the Gloo peer in bench/gloo/
  gnuplot-nox                     # braid-bench --plot
  iproute2 procps                 # ip netns / pgrep in tests
  clang libclang-rt-14-dev llvm-14  # tests/fuzz: clang++, libFuzzer + ASan/UBSan runtimes, llvm-symbolizer
  libtorch-dev zlib1g-dev         # braid::torch and braid-train (LibTorch 1.13, CPU)
  libopenblas-dev                 # the BLAS LibTorch must use (see select_openblas below)
  dataset-fashion-mnist fortunes  # braid-train's data: Fashion-MNIST IDX files, the fortunes corpus
  python3-torch                   # the PyTorch DDP peer in bench/compare_ddp.sh
  pybind11-dev python3-dev        # the torch.distributed backend "braid" (src/braid/python, docs/python.md)
  slurmctld slurmd slurm-client munge  # tests/slurm: a private one-node Slurm (scripts/slurm.sh)
)

# Debian's LibTorch calls the generic libblas.so.3 / liblapack.so.3, which the alternatives
# system may point at the reference BLAS: ~20x slower matmuls than OpenBLAS on braid-train's
# models. Point both at OpenBLAS (pthread build) explicitly, whatever was there before.
select_openblas() {
  local arch lib
  arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
  for lib in libblas.so.3 liblapack.so.3; do
    local target=/usr/lib/$arch/openblas-pthread/$lib
    if [ -e "$target" ] && [ "$(readlink -f "/usr/lib/$arch/$lib")" != "$(readlink -f "$target")" ]; then
      $SUDO update-alternatives --set "$lib-$arch" "$target"
    fi
  done
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  select_openblas
  exit 0
fi

echo "setup: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
select_openblas
echo "setup: done"
