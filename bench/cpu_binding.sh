#!/usr/bin/env bash
# The slow/fast mode of a small VM and CPU binding (issue 25 item 4): REPEATS alternating runs of
# braid-bench allreduce (f32 sum) on N ranks of one host under `braid-run --bind-to none` and
# `--bind-to core`, 8 B - 64 MiB (x8: latency, cache-resident and memory-bound sizes).
# For every run it records each size's time and busbw, and what the scheduler did to each rank:
# its CPU migrations and involuntary context switches (se.nr_migrations, nr_involuntary_switches
# from /proc/PID/sched, sampled until the rank exits: this machine has no performance counters).
# Prints per (binding, size) the median and the spread (min / max of the runs: a bimodal
# distribution shows as a wide spread), then the scheduler figures per binding.
#
# Usage: bench/cpu_binding.sh
# Environment: BUILD_DIR (build), REPEATS (7), RANKS (2), KEEP_DIR (keep the raw outputs there).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cd "${BUILD_DIR:-build}/bin" && pwd)
repeats=${REPEATS:-7}
ranks=${RANKS:-2}
case "${1:-}" in -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
if [ -n "${KEEP_DIR:-}" ]; then dir=$KEEP_DIR; mkdir -p "$dir"; else dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT; fi

# One rank: braid-bench in the background, its scheduler counters sampled until it exits.
rank_script='
"$0" allreduce "$@" > "$OUT.$BRAID_RANK" 2>&1 & p=$!
while kill -0 $p 2>/dev/null; do
  awk "/nr_migrations|nr_involuntary_switches/ {print \$1, \$3}" /proc/$p/sched > "$OUT.sched.$BRAID_RANK.tmp" 2>/dev/null &&
    mv "$OUT.sched.$BRAID_RANK.tmp" "$OUT.sched.$BRAID_RANK"
  sleep 0.02
done
wait $p'

echo "# $(lscpu | grep 'Model name' | sed 's/  */ /g'); $(nproc) cores; $ranks ranks; load: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
for r in $(seq "$repeats"); do
  for bind in none core; do
    OUT="$dir/$bind.$r" "$bin/braid-run" --no-prefix --bind-to "$bind" -n "$ranks" \
      sh -c "$rank_script" "$bin/braid-bench" -b 8 -e 64M -f 8 > /dev/null 2>&1 ||
      echo "# run $r --bind-to $bind failed (see $dir/$bind.$r.*)" >&2
  done
done

# Medians and spreads per (binding, size) from rank 0's outputs, scheduler figures from every rank's.
/usr/bin/python3 - "$dir" "$repeats" <<'PY'
import glob, statistics, sys
d, repeats = sys.argv[1], int(sys.argv[2])
print(f"{'bind':6} {'size':>10} {'time(us)':>10} {'min-max':>18} {'busbw':>8} {'min-max':>14}")
for bind in ("none", "core"):
    rows = {}
    for r in range(1, repeats + 1):
        try:
            lines = open(f"{d}/{bind}.{r}.0").read().splitlines()
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) >= 8 and f[0].isdigit():
                rows.setdefault(int(f[0]), []).append((float(f[4]), float(f[6])))
    for size in sorted(rows):
        t = sorted(x[0] for x in rows[size]); b = sorted(x[1] for x in rows[size])
        print(f"{bind:6} {size:>10} {statistics.median(t):>10.2f} {t[0]:>8.2f}-{t[-1]:<9.2f} "
              f"{statistics.median(b):>8.2f} {b[0]:>6.2f}-{b[-1]:<7.2f}")
print("# scheduler per rank and run (median, max over ranks and runs)")
for bind in ("none", "core"):
    mig, inv = [], []
    for path in glob.glob(f"{d}/{bind}.*.sched.*"):
        for line in open(path):
            key, value = line.split()
            (mig if "migrations" in key else inv).append(int(value))
    if mig:
        print(f"{bind:6} CPU migrations {statistics.median(mig):.0f} (max {max(mig)}), "
              f"involuntary switches {statistics.median(inv):.0f} (max {max(inv)})")
PY
