#!/usr/bin/env bash
# The soak of issue 21 (docs/reliability.md): RANKS ranks (default 4) of braid-soak for SECONDS
# (default 1800) of mixed collectives with random sizes, dtypes and algorithms, every result
# checked; resident memory and open descriptors per rank every REPORT seconds (default 30).
# Writes OUT_DIR (default soak-out/): soak.log, soak.csv and, with gnuplot, soak-rss.png (the
# memory curve per rank). Exits with braid-soak's status: 1 if any element was wrong.
#
# Usage: bench/soak/soak.sh [extra braid-soak flags, e.g. --max-bytes 1M --transport tcp]
# Environment: BUILD_DIR (build), RANKS, SECONDS_TO_RUN, REPORT, OUT_DIR, BRAID_RUN_FLAGS
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BUILD_DIR:-build}/bin
ranks=${RANKS:-4} seconds=${SECONDS_TO_RUN:-1800} report=${REPORT:-30} out=${OUT_DIR:-soak-out}
case "${1:-}" in -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ -x "$bin/braid-soak" ] || { echo "soak: $bin/braid-soak not built (ninja -C ${BUILD_DIR:-build} braid-soak)" >&2; exit 2; }
mkdir -p "$out"
rm -f "$out/soak.csv"
{
  echo "soak: $(date -u +%FT%TZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $ranks ranks, $seconds s"
  echo "soak: $bin/braid-run -n $ranks ${BRAID_RUN_FLAGS:-} $bin/braid-soak --seconds $seconds --report-every $report $*"
} | tee "$out/soak.log"
status=0
# shellcheck disable=SC2086
"$bin/braid-run" -n "$ranks" ${BRAID_RUN_FLAGS:-} "$bin/braid-soak" --seconds "$seconds" --report-every "$report" \
  --csv "$out/soak.csv" "$@" 2>&1 | tee -a "$out/soak.log" || status=$?
if command -v gnuplot >/dev/null && [ -s "$out/soak.csv" ]; then
  gnuplot <<PLOT
set datafile separator ","
set terminal pngcairo size 900,500
set output "$out/soak-rss.png"
set title "braid-soak: resident memory per rank ($ranks ranks)"
set xlabel "seconds"
set ylabel "MiB"
set key outside
plot for [r=0:$((ranks - 1))] "$out/soak.csv" using 1:(column(5 + r) / 1024) with lines title sprintf("rank %d", r)
PLOT
  echo "soak: memory curve in $out/soak-rss.png"
fi
exit "$status"
