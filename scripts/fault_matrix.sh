#!/usr/bin/env bash
# Runs the whole fault matrix (docs/reliability.md#the-fault-matrix): every collective x
# algorithm family x injected fault x shm/tcp cell that exists, 4 ranks each, one after the
# other. CTest runs a deterministic subset of it (fault_matrix_test); this runs all of it and
# prints the matrix and the counts (cells, passed, time to error median / max).
#
#   scripts/fault_matrix.sh [BUILD_DIR]
#
# BUILD_DIR  a configured tree (default build); fault_matrix_test, braid-test-rank and
#            braid-run are built in it first (-j 2). About 3.5 minutes on 2 cores.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
ninja -C "$build" -j 2 fault_matrix_test braid-test-rank braid-run
BRAID_FAULT_MATRIX=full "$build/tests/mp/fault_matrix_test" --gtest_filter='FaultMatrixTest.EveryCell*'
