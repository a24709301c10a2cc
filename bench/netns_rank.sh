#!/usr/bin/env bash
# A rank wrapper for bench/slow_link.sh: runs "$@" inside the network namespace of the emulated
# host this rank belongs to (ranks 0..RANKS_PER_HOST-1 on host 0, and so on), with BRAID_HOST_ID
# set accordingly. braid-run starts it as the rank program; `exec` keeps the pid braid-run watches.
set -euo pipefail
rank=${BRAID_RANK:?netns_rank.sh runs under braid-run}
per_host=${RANKS_PER_HOST:-2}
host=$((rank / per_host))
export BRAID_HOST_ID=host$host
exec ip netns exec "${NETNS_PREFIX:-braidslow}$host" "$@"
