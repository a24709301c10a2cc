#!/usr/bin/env bash
# braid's shm ping-pong against OpenMPI 4.1's (vader BTL) in one session, on the same sizes.
# Runs each REPEATS times (default 3) alternating the two, and prints per size the median
# one-way time of each, braid's bandwidth as a share of memcpy, and the ratio MPI/braid
# (above 1: braid is faster). Usage: bench/compare_sendrecv.sh [-b 8] [-e 256M] [-f 4]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
min=8 max=256M factor=4 repeats=${REPEATS:-3}
while [ $# -gt 0 ]; do
  case "$1" in
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    *) echo "usage: $0 [-b MIN] [-e MAX] [-f FACTOR]" >&2; exit 2 ;;
  esac
done
[ -x "$bin/braid-mpi-pingpong" ] || { echo "$bin/braid-mpi-pingpong not built (is OpenMPI installed?)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$repeats"); do
  "$bin/braid-run" --no-prefix -n 2 "$bin/braid-bench" sendrecv -b "$min" -e "$max" -f "$factor" > "$tmp/braid.$r"
  mpirun --allow-run-as-root -np 2 --mca btl self,vader "$bin/braid-mpi-pingpong" -b "$min" -e "$max" -f "$factor" > "$tmp/mpi.$r"
done

# Rows: "size iters time ..." in both outputs; '#' lines are comments.
awk -v repeats="$repeats" '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((n + 1) / 2)]
  }
  FNR == 1 { kind = (FILENAME ~ /braid\./) ? "braid" : "mpi" }
  /memcpy \(one thread/ { match($0, /: [0-9.]+ GB/); mc = mc " " substr($0, RSTART + 2, RLENGTH - 5) }
  /^ *[0-9]/ { t[kind, $1] = t[kind, $1] " " $3; sizes[$1] = 1 }
  END {
    printf "# memcpy (one thread, median of runs): %.2f GB/s; %d runs each, medians\n", median(mc), repeats
    printf "# %12s %14s %14s %12s %10s %12s\n", "size", "braid(us)", "openmpi(us)", "braid GB/s", "%memcpy", "mpi/braid"
    for (s in sizes) {
      b = median(t["braid", s]); m = median(t["mpi", s])
      bw = (b > 0) ? s / b / 1000 : 0
      printf "  %12d %14.2f %14.2f %12.2f %10.1f %12.2f\n", s, b, m, bw, 100 * bw / median(mc), (b > 0) ? m / b : 0
    }
  }' "$tmp"/braid.* "$tmp"/mpi.* | sort -n -k1,1 -s
