#!/usr/bin/env bash
# The shared-memory collectives with ranks outnumbering the CPUs, quiet and beside busy
# programs: braid's default shared-memory slice against given ones (docs/performance.md,
# "Staged rounds beside other programs, ranks outnumbering CPUs"). For each phase (quiet, then
# BUSY busy loops started beside) and each of REPEATS rounds, every slice in turn runs
# `braid-bench OP -b MIN -e MAX -f FACTOR` for every OP; prints ms per call by size.
#
# Usage: bench/placement/staged_beside_busy.sh
# Environment: BUILD_DIR (build), RANKS (4), OPS ("allreduce allgather reduce_scatter broadcast
#   alltoallv"), SLICES ("default 131072": default is braid's choice, a number is
#   BRAID_SHM_SLICE_BYTES), SIZES ("-b 1M -e 64M -f 8"), BUSY (2), REPEATS (2).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BUILD_DIR:-build}/bin
ranks=${RANKS:-4}
ops=${OPS:-allreduce allgather reduce_scatter broadcast alltoallv}
slices=${SLICES:-default 131072}
sizes=${SIZES:--b 1M -e 64M -f 8}
busy=${BUSY:-2}
repeats=${REPEATS:-2}
[ -x "$bin/braid-bench" ] || { echo "build first: $bin/braid-bench not found" >&2; exit 1; }

busy_pids=()
stop_busy() { [ ${#busy_pids[@]} -eq 0 ] || kill "${busy_pids[@]}" 2>/dev/null || true; busy_pids=(); }
trap stop_busy EXIT

# run SLICE OP: one line "size:ms ..." from rank 0's table.
run() {
  local slice=$1 op=$2
  local env=()
  [ "$slice" = default ] || env=("BRAID_SHM_SLICE_BYTES=$slice")
  # shellcheck disable=SC2086
  env "${env[@]}" timeout 300 "$bin/braid-run" -n "$ranks" "$bin/braid-bench" "$op" $sizes --repeats 3 2>&1 |
    awk '/^\[0\] +[0-9]/ {printf "%s:%.2f ", $2, $6 / 1000} END {print ""}'
}

echo "# $(lscpu | grep 'Model name' | sed 's/  */ /g'), $(nproc) CPUs, $ranks ranks, $(date -u +%FT%H:%MZ); ms per call"
for phase in quiet busy; do
  if [ "$phase" = busy ]; then
    for ((i = 0; i < busy; i++)); do (exec yes >/dev/null) & busy_pids+=($!); done
    sleep 1
  fi
  for ((rep = 1; rep <= repeats; rep++)); do
    for slice in $slices; do
      for op in $ops; do
        printf '%-5s round %d  slice %-8s %-15s %s\n' "$phase" "$rep" "$slice" "$op" "$(run "$slice" "$op")"
      done
    done
  done
  stop_busy
done
