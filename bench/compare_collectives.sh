#!/usr/bin/env bash
# braid's collectives against OpenMPI 4.1's (vader BTL) and, for allreduce, Gloo's (TCP on
# 127.0.0.1), in one session, on the same sizes and world sizes (DESIGN.md, "How performance is
# judged"). For every world size (default 2 and 4) and operation it runs braid-bench, the MPI
# peer (braid-mpi-collectives) and, for allreduce, the Gloo peer (braid-gloo-allreduce)
# REPEATS times (default 3), alternating them, and prints one table per (operation, world size):
# per size the median busbw of each, the ratios braid/MPI and braid/Gloo (above 1: braid is
# faster), braid's busbw as a share of the single-thread memcpy bandwidth braid-bench measures
# in the same run (its header), and the #wrong summed over every run of every tool.
# Operations braid-bench does not offer yet (not a subcommand of braid-bench, see offers()) are
# skipped with a note, as are peers that were not built.
#
# Usage: bench/compare_collectives.sh [-b 1K] [-e 64M] [-f 8] [OP ...]
#   OP: allreduce allgather reduce_scatter alltoall broadcast alltoallv (default: the first five;
#   alltoallv runs braid-bench's MoE-shaped counts and MPI_Alltoallv at the same counts)
# Environment: BUILD_DIR (default build), REPEATS (3), WORLD_SIZES ("2 4"),
#   GLOO_ALGO (ring | halving_doubling; default ring), RUN_TIMEOUT (seconds per run; 900),
#   KEEP_DIR (keep the raw outputs there instead of a temporary directory),
#   REGISTERED=1 (also run braid-bench --registered, buffers from alloc_registered, in the
#   same alternation: columns braid-reg and reg/mpi; docs/registered-memory.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
min=1K max=64M factor=8
repeats=${REPEATS:-3}
world_sizes=${WORLD_SIZES:-2 4}
gloo_algo=${GLOO_ALGO:-ring}
run_timeout=${RUN_TIMEOUT:-900}
registered=${REGISTERED:-0}
ops=()
while [ $# -gt 0 ]; do
  case "$1" in
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "usage: $0 [-b MIN] [-e MAX] [-f FACTOR] [OP ...]" >&2; exit 2 ;;
    *) ops+=("$1"); shift ;;
  esac
done
[ ${#ops[@]} -gt 0 ] || ops=(allreduce allgather reduce_scatter alltoall broadcast)
for op in "${ops[@]}"; do
  case "$op" in
    allreduce|allgather|reduce_scatter|alltoall|broadcast|alltoallv) ;;
    *) echo "$0: unknown operation $op (allreduce allgather reduce_scatter alltoall broadcast alltoallv)" >&2; exit 2 ;;
  esac
done
for tool in braid-run braid-bench; do
  [ -x "$bin/$tool" ] || { echo "$0: $bin/$tool not built (BUILD_DIR=${BUILD_DIR:-build})" >&2; exit 1; }
done
have_mpi=0 have_gloo=0
if [ -x "$bin/braid-mpi-collectives" ] && command -v mpirun > /dev/null; then
  have_mpi=1
else
  echo "# note: $bin/braid-mpi-collectives not built (is OpenMPI installed?): no MPI column" >&2
fi
if [ -x "$bin/braid-gloo-allreduce" ]; then
  have_gloo=1
else
  echo "# note: $bin/braid-gloo-allreduce not built (is libgloo-dev installed?): no Gloo column" >&2
fi

if [ -n "${KEEP_DIR:-}" ]; then
  tmp=$KEEP_DIR
  mkdir -p "$tmp"
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi
sweep=(-b "$min" -e "$max" -f "$factor")

# offers OP: whether braid-bench has the subcommand OP. `braid-bench OP --help` alone cannot tell:
# CLI11 answers --help with the top-level help, and exit 0, for a subcommand it does not know;
# so OP must also be listed under "Subcommands:" in `braid-bench --help`.
offers() {
  "$bin/braid-bench" "$1" --help > /dev/null 2>&1 &&
    "$bin/braid-bench" --help 2> /dev/null |
      awk -v op="$1" '/^Subcommands:/ { s = 1; next } s { sub(/,$/, "", $1) } s && $1 == op { found = 1 } END { exit !found }'
}

# run OUTFILE CMD...: runs one benchmark; a failure is reported and leaves its rows out.
run() {
  local out=$1 rc=0
  shift
  local err
  err=$(dirname "$out")/stderr/$(basename "$out")
  mkdir -p "$(dirname "$err")"
  timeout "$run_timeout" "$@" > "$out" 2> "$err" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "# warning: exit $rc from: $* (stderr: $(head -c 300 "$err" | tr '\n' ' '))" >&2
  fi
}

# Rows of braid-bench and of both peers: "size count type redop time(us) algbw busbw #wrong";
# lines starting with '#' are comments; braid-bench's header names the memcpy bandwidths (one
# thread alone, and per rank with every rank copying at once). The
# medians are taken of time(us) (one decimal even for tiny sizes, where the printed GB/s round
# to 0.00); busbw is recomputed from the median time with nccl-tests' factor, so a ratio of
# busbws is the inverse ratio of times.
table() {  # table OP N FILES...
  local op=$1 n=$2
  shift 2
  awk -v op="$op" -v n="$n" -v repeats="$repeats" -v have_mpi="$have_mpi" -v have_reg="$registered" \
      -v have_gloo="$([ "$op" = allreduce ] && echo "$have_gloo" || echo 0)" -v gloo_algo="$gloo_algo" '
    function median(list,   k, a, i, j, t) {
      k = split(list, a, " ")
      if (k == 0) return ""
      for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return a[int((k + 1) / 2)]
    }
    function busbw(size, t) { return (t == "" || t + 0 <= 0) ? "" : size / t / 1000 * factor }
    function cell(v, width) { return (v == "") ? sprintf("%" width "s", "-") : sprintf("%" width ".2f", v) }
    function ratio(a, b, width) { return (a == "" || b == "" || b + 0 == 0) ? sprintf("%" width "s", "-") : sprintf("%" width ".2f", a / b) }
    BEGIN {
      factor = (op == "allreduce") ? 2 * (n - 1) / n : (op == "broadcast") ? 1 : (n - 1) / n
    }
    FNR == 1 { kind = FILENAME; sub(/.*\//, "", kind); sub(/\..*/, "", kind) }
    kind == "braid" && /memcpy \(one thread/ {
      if (match($0, /: [0-9.]+ GB/)) mc = mc " " substr($0, RSTART + 2, RLENGTH - 5)
    }
    kind == "braid" && /memcpy \(every rank at once/ {
      if (match($0, /: [0-9.]+ GB/)) ma = ma " " substr($0, RSTART + 2, RLENGTH - 5)
    }
    /^ *[0-9]/ && NF >= 8 { t[kind, $1] = t[kind, $1] " " $5; wrong[$1] += $8; sizes[$1] = 1 }
    END {
      m = median(mc); a = median(ma)
      printf "# %s, %d ranks: busbw (GB/s) from the median time of %d runs each", op, n, repeats
      if (m != "") printf "; memcpy (one thread, braid-bench header) %.2f GB/s", m
      if (a != "") printf ", every rank at once %.2f GB/s per rank", a
      printf "\n"
      printf "# %12s %10s %10s %10s %10s %10s %9s %7s\n", "size", "braid", "openmpi", "gloo-" (gloo_algo == "ring" ? "ring" : "hd"), \
             "braid/mpi", "braid/gloo", "%memcpy", "#wrong"
      if (have_reg) printf "# %12s %10s %10s %10s\n", "size", "braid-reg", "reg/mpi", "reg/braid"
      for (s in sizes) {
        b = busbw(s, median(t["braid", s])); p = busbw(s, median(t["mpi", s])); g = busbw(s, median(t["gloo", s]))
        pct = (b == "" || m == "" || m + 0 == 0) ? sprintf("%9s", "-") : sprintf("%9.1f", 100 * b / m)
        printf "  %12d %s %s %s %s %s %s %7d\n", s, cell(b, 10), have_mpi ? cell(p, 10) : sprintf("%10s", "-"), \
               have_gloo ? cell(g, 10) : sprintf("%10s", "-"), ratio(b, p, 10), ratio(b, g, 10), pct, wrong[s]
        if (have_reg) {
          rg = busbw(s, median(t["braidreg", s]))
          printf "  %12d %s %s %s reg\n", s, cell(rg, 10), ratio(rg, p, 10), ratio(rg, b, 10)
        }
      }
    }' "$@" | sort -n -k1,1 -s
}

for n in $world_sizes; do
  for op in "${ops[@]}"; do
    if ! offers "$op"; then
      echo "# $op, $n ranks: skipped: braid-bench has no '$op' subcommand yet"
      echo
      continue
    fi
    dir=$tmp/$op.$n
    rm -rf "$dir"
    mkdir -p "$dir"
    for r in $(seq "$repeats"); do
      run "$dir/braid.$r" "$bin/braid-run" --no-prefix -n "$n" "$bin/braid-bench" "$op" "${sweep[@]}"
      if [ "$registered" = 1 ]; then
        run "$dir/braidreg.$r" "$bin/braid-run" --no-prefix -n "$n" "$bin/braid-bench" "$op" --registered "${sweep[@]}"
      fi
      if [ "$have_mpi" = 1 ]; then
        run "$dir/mpi.$r" mpirun --allow-run-as-root --oversubscribe -np "$n" --mca btl self,vader \
            "$bin/braid-mpi-collectives" "$op" "${sweep[@]}"
      fi
      if [ "$op" = allreduce ] && [ "$have_gloo" = 1 ]; then
        run "$dir/gloo.$r" "$bin/braid-run" --no-prefix -n "$n" "$bin/braid-gloo-allreduce" "$gloo_algo" "${sweep[@]}"
      fi
    done
    table "$op" "$n" "$dir"/*.*
    echo
  done
done
