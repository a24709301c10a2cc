#!/usr/bin/env bash
# The KV stream's bandwidth as a share of braid's own point-to-point at the same bytes, 2 ranks
# over shm and TCP, REPEATS runs each (default 5), and the transfer part of time to first token
# with layer-wise overlap against transfer after prefill. Prints each run's rows, then the median
# of the runs' ratios per transport. Extra arguments go to braid-kv-bench (--tokens, --layers, ...).
#   bench/serving/kv_transfer.sh [--tokens 1024] [--compute-ms 2]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BUILD_DIR:-build}/bin
repeats=${REPEATS:-5}
echo "# $(date -u +%F) $(lscpu | grep 'Model name' | sed 's/  */ /g'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for transport in auto tcp; do
  ratios=""
  for r in $(seq "$repeats"); do
    out=$(BRAID_TRANSPORT=$transport "$bin/braid-run" --no-prefix -n 2 "$bin/braid-kv-bench" "$@")
    echo "$out" | sed "s/^/[$transport run $r] /"
    ratios="$ratios $(echo "$out" | awk '/^kv-stream/ { print $6 }')"
  done
  echo "$ratios" | tr ' ' '\n' | grep . | sort -n | awk -v t="$transport" '
    { v[NR] = $1 } END { printf "# %s: kv-stream / sendrecv, median of %d runs: %s (min %s, max %s)\n", t, NR, v[int((NR + 1) / 2)], v[1], v[NR] }'
done
