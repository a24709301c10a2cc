#!/usr/bin/env bash
# Small-message allreduce latency (issue 24 item 1, issue 25 item 3): braid's choice and each
# of its one-host algorithms (one_shot, two_shot, shm_direct) against Open MPI's MPI_Allreduce
# (vader BTL), in one session, REPEATS alternating runs of each, 8 B - 1 MiB (f32 sum). Prints
# per (world size, size) the median time in µs of each and braid/MPI (the tuner's choice over
# Open MPI's time: below 1, braid is faster). The machine's load changes from run to run:
# compare only figures of the same run.
#
# Usage: bench/small_allreduce.sh [-b 8] [-e 1M] [-f 4]
# Environment: BUILD_DIR (build), REPEATS (5), WORLD_SIZES ("2 4"), ALGOS ("one_shot two_shot
#   shm_direct"), ITERS (timed iterations per size and batch; default braid-bench's).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
min=8 max=1M factor=4
while [ $# -gt 0 ]; do
  case "$1" in
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [-b MIN] [-e MAX] [-f FACTOR]" >&2; exit 2 ;;
  esac
done
repeats=${REPEATS:-5}
algos=(${ALGOS:-one_shot two_shot shm_direct})
sweep=(-b "$min" -e "$max" -f "$factor")
[ -n "${ITERS:-}" ] && sweep+=(-n "$ITERS")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# rows: "size time" of a braid-bench or braid-mpi-collectives output (comments dropped).
rows() { grep -v '^#' "$1" | awk 'NF >= 8 && $1 ~ /^[0-9]+$/ {print $1, $5}'; }
echo "# $(lscpu | grep 'Model name' | sed 's/  */ /g'); $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
for n in ${WORLD_SIZES:-2 4}; do
  for r in $(seq "$repeats"); do
    "$bin/braid-run" --no-prefix -n "$n" "$bin/braid-bench" allreduce "${sweep[@]}" > "$dir/braid.$n.$r" 2>&1 || true
    for a in "${algos[@]}"; do
      "$bin/braid-run" --no-prefix -n "$n" "$bin/braid-bench" allreduce "${sweep[@]}" --algo "$a" > "$dir/$a.$n.$r" 2>&1 || true
    done
    mpirun --allow-run-as-root --oversubscribe -np "$n" --mca btl self,vader "$bin/braid-mpi-collectives" allreduce \
      "${sweep[@]}" > "$dir/mpi.$n.$r" 2>&1 || true
  done
  echo "# $n ranks, median of $repeats alternating runs, time per call in µs"
  printf "%10s %10s" size braid; for a in "${algos[@]}"; do printf " %10s" "$a"; done; printf " %10s %10s\n" mpi braid/mpi
  for tool in braid "${algos[@]}" mpi; do
    for r in $(seq "$repeats"); do rows "$dir/$tool.$n.$r"; done | awk -v t="$tool" '{print t, $1, $2}'
  done | awk -v algos="braid ${algos[*]} mpi" '
    { v[$1 " " $2] = v[$1 " " $2] " " $3; sizes[$2] = 1 }
    function median(s,   a, k, i, j, x) {
      k = split(s, a, " "); if (k == 0) return -1
      for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
      return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
      m = split(algos, names, " ")
      n = 0; for (s in sizes) list[++n] = s + 0
      for (i = 2; i <= n; i++) { x = list[i]; for (j = i - 1; j >= 1 && list[j] > x; j--) list[j + 1] = list[j]; list[j + 1] = x }
      for (i = 1; i <= n; i++) {
        printf "%10d", list[i]
        for (k = 1; k <= m; k++) { med[k] = median(v[names[k] " " list[i]]); printf " %10.2f", med[k] }
        printf " %10.2f\n", (med[m] > 0 ? med[1] / med[m] : 0)
      }
    }'
done
