#!/usr/bin/env bash
# The fast and slow modes of a cache line's round trip between two CPUs (issue 25 item 4):
# RUNS launches of braid-cache-line-pingpong for SECONDS each in windows of WINDOW_MS; per
# launch, how many windows were fast (< THRESHOLD_NS, default 200) and slow, each mode's median
# round trip, and how often the mode flipped inside the launch (flips inside one process mean
# the host, not the launch, decides it).
#   bench/placement/cache_line_modes.sh      (RUNS=3 SECONDS=10 WINDOW_MS=100 CPUS=0,1)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BUILD_DIR:-build}/bin
echo "# $(date -u '+%F %H:%M') $(lscpu | grep 'Model name' | sed 's/  */ /g'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "${RUNS:-3}"); do
  "$bin/braid-cache-line-pingpong" --cpus "${CPUS:-0,1}" --seconds "${SECONDS_PER_RUN:-10}" --window-ms "${WINDOW_MS:-100}" |
    grep -v '^#' | awk -v t="${THRESHOLD_NS:-200}" -v run="$r" '
      { fast = $3 < t; n++; if (n > 1 && fast != prev) flips++; prev = fast
        if (fast) f[nf++] = $3; else s[ns++] = $3 }
      function median(a, k,   i, j, x) {  # insertion sort, then the middle
        for (i = 1; i < k; i++) { x = a[i]; for (j = i - 1; j >= 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return k ? a[int((k - 1) / 2)] : "-" }
      END { printf "run %d: %d windows, fast %d (median %s ns), slow %d (median %s ns), %d flips\n",
                   run, n, nf, median(f, nf), ns, median(s, ns), flips + 0 }'
done
