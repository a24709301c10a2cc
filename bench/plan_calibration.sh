#!/usr/bin/env bash
# Does the alpha-beta cost model describe braid? Runs braid-bench's allreduce on 2 and 4 ranks
# (64 KiB .. 256 MiB by factors of 4 by default), fits the model to each run with
# `braid-plan calibrate` (alpha and beta per size range, least squares on relative error), and
# prints per size the measured and predicted times with the relative error, then the same for
# one model fitted to both world sizes together (the formula's n-dependence put to the test).
# Goal (issue 8): every size of 64 KiB .. 256 MiB within 25%. The fit is in-sample: it says how
# well a handful of numbers (alpha, beta per segment) describe braid, not a held-out forecast.
# Timings belong here and in docs/, never in a pass/fail test; run it on a quiet machine.
#
# Usage: bench/plan_calibration.sh [-b 64K] [-e 256M] [-f 4]
# Environment: BUILD_DIR (default build), WORLD_SIZES ("2 4"), REPEATS (3: per size the median
#   of the runs is fitted), SEGMENTS (3: at most this many size ranges), KEEP_DIR (keep the
#   braid-bench JSON and the fitted model there instead of a temporary directory),
#   RUN_TIMEOUT (seconds per braid-bench run; 1800).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
min=64K max=256M factor=4
world_sizes=${WORLD_SIZES:-2 4}
repeats=${REPEATS:-3}
segments=${SEGMENTS:-3}
run_timeout=${RUN_TIMEOUT:-1800}
while [ $# -gt 0 ]; do
  case "$1" in
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [-b MIN] [-e MAX] [-f FACTOR]" >&2; exit 2 ;;
  esac
done
for tool in braid-run braid-bench braid-plan; do
  [ -x "$bin/$tool" ] || { echo "$0: $bin/$tool not built (BUILD_DIR=${BUILD_DIR:-build})" >&2; exit 1; }
done
command -v python3 > /dev/null || { echo "$0: python3 is needed to take medians" >&2; exit 1; }
if [ -n "${KEEP_DIR:-}" ]; then
  tmp=$KEEP_DIR
  mkdir -p "$tmp"
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi

# Per size, the median time of several braid-bench --json files, written as one such file.
median_json() {
  python3 - "$@" <<'PY'
import json, statistics, sys
out, inputs = sys.argv[1], sys.argv[2:]
docs = [json.load(open(p)) for p in inputs]
times = {}
for doc in docs:
    for row in doc["rows"]:
        times.setdefault(row["size"], []).append(row["time(us)"])
merged = docs[0]
for row in merged["rows"]:
    row["time(us)"] = statistics.median(times[row["size"]])
merged["meta"]["median_of_runs"] = len(docs)
json.dump(merged, open(out, "w"))
PY
}

# The verdict from braid-plan calibrate --json: the largest error and the sizes past 25%.
verdict() {
  python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for table in doc["tables"]:
    rows = table["rows"]
    worst = max(abs(r["relative_error"]) for r in rows)
    over = [f'{int(r["size"])}B@{r["ranks"]}' for r in rows if abs(r["relative_error"]) > 0.25]
    status = "within 25%" if not over else "over 25% at " + ", ".join(over)
    print(f'# {table["heading"]}: max |error| {100 * worst:.1f}% over {len(rows)} sizes: {status}')
PY
}

files=()
for n in $world_sizes; do
  runs=()
  for r in $(seq 1 "$repeats"); do
    out="$tmp/allreduce-n$n-run$r.json"
    echo "# braid-run -n $n braid-bench allreduce -b $min -e $max -f $factor --json $out" >&2
    timeout "$run_timeout" "$bin/braid-run" -n "$n" "$bin/braid-bench" allreduce -b "$min" -e "$max" -f "$factor" \
      --json "$out" > "$tmp/allreduce-n$n-run$r.txt"
    runs+=("$out")
  done
  median_json "$tmp/allreduce-n$n.json" "${runs[@]}"
  files+=("$tmp/allreduce-n$n.json")
done

echo "## one model per world size"
"$bin/braid-plan" calibrate --per-file --segments "$segments" "${files[@]}" -o "$tmp/fit-per-n.json"
"$bin/braid-plan" calibrate --per-file --segments "$segments" "${files[@]}" --json > "$tmp/fit-per-n.report.json"
verdict "$tmp/fit-per-n.report.json"
if [ "${#files[@]}" -gt 1 ]; then
  echo
  echo "## one model for all world sizes together"
  "$bin/braid-plan" calibrate --segments "$segments" "${files[@]}" -o "$tmp/fit-joint.json"
  "$bin/braid-plan" calibrate --segments "$segments" "${files[@]}" --json > "$tmp/fit-joint.report.json"
  verdict "$tmp/fit-joint.report.json"
fi
