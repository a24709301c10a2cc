#!/usr/bin/env bash
# braid's DDP comm hooks against PyTorch's own across a slow link: bench/python/
# hooks_vs_torch_hooks.py on two emulated hosts (network namespaces joined by a veth pair shaped
# with tc's token bucket to RATE, default 1gbit, each direction; bench/shaped_link.sh),
# RANKS_PER_HOST ranks on each (default 1: every byte between ranks crosses the link). In the
# same processes: DDP on "braid" with braid.hooks, DDP on gloo with torch's ddp_comm_hooks.
# Needs root (ip netns, tc); prints "skipped" and exits 0 without.
#
# Usage: bench/python/hooks_slow_link.sh [--rate 1gbit] [bench script arguments: --model wide
#        --rounds 5 --steps 10 --pairs plain,int8-fp16,powersgd,powersgd-1bucket --powersgd-rank 4 --json F]
# Environment: BUILD_DIR (build), RANKS_PER_HOST (1), RUN_TIMEOUT (1800 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
rate=1gbit
if [ "${1:-}" = "--rate" ]; then rate=$2; shift 2; fi
case "${1:-}" in -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "hooks_slow_link: skipped (needs root, ip and tc to build network namespaces)"
  exit 0
fi
[ -f "$build/python/braid/torch.py" ] || { echo "no $build/python/braid: ninja -C $build braid_python" >&2; exit 1; }

# Its own namespaces, subnet and ports: bench/slow_link.sh (braidslow, 10.77.0.0/24) may run meanwhile.
prefix=braidhk
export NETNS_PREFIX=$prefix RANKS_PER_HOST=${RANKS_PER_HOST:-1}
addr0=10.79.0.1 addr1=10.79.0.2
source bench/shaped_link.sh
cleanup() { shaped_link_down $prefix; }
cleanup
trap cleanup EXIT
shaped_link_up $prefix $addr0 $addr1 "$rate"
world=$((2 * RANKS_PER_HOST))
echo "hooks_slow_link: $(date -u '+%F %H:%M'), 2 hosts x $RANKS_PER_HOST ranks, link $rate (tbf), $(lscpu | sed -n 's/^Model name: *//p')"
# gloo picks its interface by name: this rank's end of the veth pair (netns_rank.sh sets BRAID_HOST_ID=hostH).
PYTHONPATH=$PWD/$build/python timeout "${RUN_TIMEOUT:-1800}" "$build/bin/braid-run" -n "$world" \
  --master-addr $addr0 --master-port 29631 bench/netns_rank.sh \
  bash -c 'export GLOO_SOCKET_IFNAME='$prefix'v${BRAID_HOST_ID#host}; exec "$@"' rank \
  /usr/bin/python3 bench/python/hooks_vs_torch_hooks.py "$@"
