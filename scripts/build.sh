#!/usr/bin/env bash
# Configures and builds braid in ./build (Release unless BUILD_TYPE is set; BRAID_SANITIZE=address
# for an ASan build in ./build-asan). Incremental: re-running only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

build_type=${BUILD_TYPE:-Release}
build_dir=${BUILD_DIR:-build}
extra=()
if [ -n "${BRAID_SANITIZE:-}" ]; then
  build_type=Debug
  build_dir=${BUILD_DIR:-build-${BRAID_SANITIZE}}
  extra+=("-DBRAID_SANITIZE=${BRAID_SANITIZE}")
fi

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "${extra[@]}"
cmake --build "$build_dir"
