#!/usr/bin/env bash
# Instructions per small allreduce (issue 25 item 3), counted by valgrind's callgrind on every
# rank: repeatable where timings on a loaded machine are not. Runs braid-bench allreduce at one
# size twice under callgrind, with ITERS and 2 x ITERS timed calls, collecting only inside
# braid::allreduce, and divides the difference by the extra calls (the set-up, the warm-up and
# braid-bench's bookkeeping reductions cancel out). Prints per rank the instructions per call
# in all, inside ShmWorkspace::wait_for_peers (polling for the peers: depends on how late they
# are, so it varies from run to run), and the rest (the path itself: checks, tuner, signature,
# copy, reduction, publish; the same in every run).
#
# Usage: bench/small_allreduce_instructions.sh [-n RANKS] [-s BYTES] [-- braid-bench options]
# Environment: BUILD_DIR (build), ITERS (2000).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
ranks=2 bytes=8
while [ $# -gt 0 ]; do
  case "$1" in
    -n) ranks=$2; shift 2 ;;
    -s) bytes=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [-n RANKS] [-s BYTES] [-- braid-bench options]" >&2; exit 2 ;;
  esac
done
command -v valgrind > /dev/null || { echo "valgrind is not installed" >&2; exit 1; }
iters=${ITERS:-2000}
dir=$(mktemp -d)
[ -n "${KEEP_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT
# One callgrind run of N timed calls per batch (1 batch, no warm-up beyond braid-bench's one).
profile() {
  local n=$1; shift
  "$bin/braid-run" --no-prefix -n "$ranks" valgrind --tool=callgrind --callgrind-out-file="$dir/out.$n.%q{BRAID_RANK}" \
    --toggle-collect='braid::allreduce(*' "$bin/braid-bench" allreduce -b "$bytes" -e "$bytes" -n "$n" -w 1 \
    --repeats 1 -c 0 "$@" > "$dir/log.$n" 2>&1 || { cat "$dir/log.$n" >&2; exit 1; }
}
# Inclusive instructions of the first function matching $2 in callgrind output $1 (0 if none).
inclusive() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2> /dev/null |
    awk -v f="$2" '!found && index($0, f) { gsub(",", "", $1); print $1; found = 1 } END { if (!found) print 0 }'
}
profile "$iters" "$@"
profile $((2 * iters)) "$@"
echo "# instructions per ${bytes}-byte allreduce, ${ranks} ranks, callgrind, (2 x ${iters} - ${iters}) calls; $(date -u +%FT%TZ)"
printf "%6s %12s %14s %12s\n" rank total wait_for_peers path
for ((r = 0; r < ranks; r++)); do
  a=$dir/out.$iters.$r b=$dir/out.$((2 * iters)).$r
  total=$(( $(inclusive "$b" 'braid::allreduce(') - $(inclusive "$a" 'braid::allreduce(') ))
  wait=$(( $(inclusive "$b" 'ShmWorkspace::wait_for_peers') - $(inclusive "$a" 'ShmWorkspace::wait_for_peers') ))
  awk -v r="$r" -v t="$total" -v w="$wait" -v n="$iters" 'BEGIN { printf "%6d %12.0f %14.0f %12.0f\n", r, t / n, w / n, (t - w) / n }'
done
