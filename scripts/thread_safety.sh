#!/usr/bin/env bash
# Builds every braid library with clang's thread-safety analysis as errors
# (-Wthread-safety -Werror=thread-safety; base/thread_annotations.h, docs/architecture.md).
#
#   scripts/thread_safety.sh [BUILD_DIR]
#
# BUILD_DIR  the clang tree (default build-tsa); configured on the first run (tests, benchmarks
#            and LibTorch off), incremental afterwards. Only the libraries are built (the
#            `braid_libraries` target): the analysis is about their code, and tests would
#            double the time. CI runs it from scripts/test.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-tsa}

die() {
  echo "thread_safety: ERROR: $*" >&2
  exit 1
}

command -v clang++ >/dev/null || die "clang++ not found: install the Debian package 'clang' (scripts/setup.sh does)"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

started=$SECONDS
if [[ ! -f $build/build.ninja ]]; then
  mkdir -p "$build"
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Release -DBRAID_THREAD_SAFETY_ANALYSIS=ON "${launcher[@]}" \
    -DBRAID_BUILD_TESTS=OFF -DBRAID_BUILD_BENCH=OFF -DBRAID_WITH_TORCH=OFF >"$build/configure.log" ||
    { cat "$build/configure.log" >&2; die "configuring the clang tree failed"; }
fi
cmake --build "$build" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" --target braid_libraries ||
  die "the clang build failed: a thread-safety error above names the member and the mutex it needs"
echo "thread_safety: every library builds cleanly under -Werror=thread-safety ($((SECONDS - started)) s)"
