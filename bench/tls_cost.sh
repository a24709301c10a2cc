#!/usr/bin/env bash
# What BRAID_TLS=on costs on TCP (docs/transports.md#tls): braid-bench over TCP on one host
# (BRAID_TRANSPORT=tcp, so every link is a TCP connection), TLS off and on alternating REPEATS
# times (default 3), medians per size, and the ratio on/off of the one-way time (sendrecv, 2
# ranks) and of the ring allreduce's time (RANKS ranks, default 4).
# Usage: bench/tls_cost.sh [-b 8] [-e 16M] [-f 8]
# Environment: BUILD_DIR (build), REPEATS, RANKS
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
min=8 max=16M factor=8 repeats=${REPEATS:-3} ranks=${RANKS:-4}
while [ $# -gt 0 ]; do
  case "$1" in
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [-b MIN] [-e MAX] [-f FACTOR]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# tls_cost: $(date -u +%F), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq "$repeats"); do
  for tls in off on; do
    BRAID_TRANSPORT=tcp BRAID_TLS=$tls "$bin/braid-run" --no-prefix -n 2 "$bin/braid-bench" sendrecv \
      -b "$min" -e "$max" -f "$factor" >"$tmp/sendrecv.$tls.$r"
    # ring: the shared-memory direct allreduce would bypass the transport on one host
    BRAID_TRANSPORT=tcp BRAID_TLS=$tls BRAID_ALGO_ALLREDUCE=ring "$bin/braid-run" --no-prefix -n "$ranks" "$bin/braid-bench" allreduce \
      -b "$min" -e "$max" -f "$factor" >"$tmp/allreduce.$tls.$r"
  done
done
for op in sendrecv allreduce; do
  echo "# $op over TCP ($([ $op = sendrecv ] && echo 2 || echo "$ranks") ranks): median time (us) of $repeats runs each"
  printf "# %12s %12s %12s %10s\n" size "tls off" "tls on" on/off
  awk -v op="$op" '
    function median(list,   n, a, i, j, t) {
      n = split(list, a, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return a[int((n + 1) / 2)]
    }
    FNR == 1 { tls = (FILENAME ~ /\.on\./) ? "on" : "off" }
    /^ *[0-9]/ {
      time = (op == "sendrecv") ? $3 : $5  # sendrecv: size iters time; allreduce: size count type redop time
      t[tls, $1] = t[tls, $1] " " time; sizes[$1] = 1
    }
    END {
      for (s in sizes) {
        a = median(t["off", s]); b = median(t["on", s])
        printf "  %12s %12.2f %12.2f %10.2f\n", s, a, b, (a > 0 ? b / a : 0)
      }
    }' "$tmp"/$op.* | sort -n
done
