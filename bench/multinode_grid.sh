#!/usr/bin/env bash
# The whole collectives grid (allreduce, allgather, reduce_scatter, broadcast, reduce, gather,
# scatter: every algorithm x dtype x op x count, bit for bit against the reference) and the
# alltoall grid on 2 emulated hosts x RANKS_PER_HOST ranks, one multi-node braid-run per host
# (docs/multinode.md): too long for CTest's budget, which runs the allreduce grid
# (tests/mp/multinode_test.cc). Hosts: network namespaces joined by a veth pair shaped to RATE
# (default 10gbit). Needs root (ip netns, tc); prints "skipped" and exits 0 without.
#
# Usage: bench/multinode_grid.sh [--rate 10gbit]
# Environment: BUILD_DIR (build), RANKS_PER_HOST (2), RUN_TIMEOUT (900).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
rate=10gbit
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "multinode_grid: skipped (needs root, ip and tc to build network namespaces)"
  exit 0
fi
prefix=braidmng per_host=${RANKS_PER_HOST:-2} port=29650
source bench/shaped_link.sh
trap 'shaped_link_down $prefix' EXIT
shaped_link_down $prefix
shaped_link_up $prefix 10.77.0.1 10.77.0.2 "$rate"
export BRAID_JOB_TOKEN=${BRAID_JOB_TOKEN:-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')}

# run_grid SCENARIO...: both braid-runs, their exit codes and the PASS lines' count.
run_grid() {
  local h pids=() status=0 start=$SECONDS
  for h in 1 0; do
    timeout "${RUN_TIMEOUT:-900}" ip netns exec $prefix$h "$build"/bin/braid-run --nnodes 2 --node-rank $h \
      --master-addr 10.77.0.1 --master-port $port --nproc-per-node "$per_host" --env BRAID_HOST_ID=host$h \
      "$build"/tests/braid-test-rank "$@" > "/tmp/$prefix.$h.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
  local passed
  passed=$(cat /tmp/$prefix.0.log /tmp/$prefix.1.log | grep -c "PASS $1 rank" || true)
  echo "$*: exit $status, $passed of $((2 * per_host)) ranks passed, $((SECONDS - start)) s"
  [ "$status" -eq 0 ] && [ "$passed" -eq $((2 * per_host)) ] || { cat /tmp/$prefix.*.log; return 1; }
}
run_grid collectives
run_grid alltoall
