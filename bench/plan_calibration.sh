#!/usr/bin/env bash
# Does the alpha-beta cost model describe braid, and does it predict it? Runs braid-bench's
# allreduce on 2 and 4 ranks (64 KiB .. 256 MiB by factors of 2 by default: 13 sizes, so that
# the segment boundaries can sit where the time curve bends), fits the model to each world size
# with `braid-plan calibrate` (alpha and beta per size range, least squares on relative error),
# and prints per size the measured and predicted times with the relative error, then the same
# for one model fitted to both world sizes together (the formula's n-dependence put to the test).
# Two verdicts per world size:
#   in-sample: how well the fitted numbers describe the runs they were fitted on;
#   held-out:  after the fitting runs, HOLDOUT further runs are measured and the fitted model
#              predicts their median (`braid-plan calibrate --model`): data it never saw.
# Goal (issue 8): every size of 64 KiB .. 256 MiB within 25%.
# Timings belong here and in docs/, never in a pass/fail test; run it on a quiet machine.
#
# Usage: bench/plan_calibration.sh [-b 64K] [-e 256M] [-f 2]
# Environment: BUILD_DIR (default build), WORLD_SIZES ("2 4"), REPEATS (3: per size the median
#   of these runs is fitted), HOLDOUT (2: per size the median of these later runs is predicted;
#   0 skips the held-out check), SEGMENTS (3: at most this many size ranges), KEEP_DIR (keep the
#   braid-bench JSON, the fitted model and the reports there instead of a temporary directory),
#   RUN_TIMEOUT (seconds per braid-bench run; 1800).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
min=64K max=256M factor=2
world_sizes=${WORLD_SIZES:-2 4}
repeats=${REPEATS:-3}
holdout=${HOLDOUT:-2}
segments=${SEGMENTS:-3}
run_timeout=${RUN_TIMEOUT:-1800}
while [ $# -gt 0 ]; do
  case "$1" in
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "usage: $0 [-b MIN] [-e MAX] [-f FACTOR] (--help for the environment)" >&2; exit 2 ;;
  esac
done
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { echo "$0: REPEATS=$repeats must be a whole number >= 1" >&2; exit 2; }
[[ $holdout =~ ^[0-9]+$ ]] || { echo "$0: HOLDOUT=$holdout must be a whole number >= 0" >&2; exit 2; }
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

# The verdict from a braid-plan calibrate --json report (a fit, or a model evaluated with
# --model: the same shape): per table the largest error and the sizes past 25%.
verdict() {
  python3 - "$1" "$2" <<'PY'
import json, sys
kind, doc = sys.argv[1], json.load(open(sys.argv[2]))
for table in doc["tables"]:
    rows = table["rows"]
    worst = max(abs(r["relative_error"]) for r in rows)
    over = [f'{int(r["size"])}B@{r["ranks"]}' for r in rows if abs(r["relative_error"]) > 0.25]
    status = "within 25%" if not over else "over 25% at " + ", ".join(over)
    print(f'# {kind}: {table["heading"]}: max |error| {100 * worst:.1f}% over {len(rows)} sizes: {status}')
PY
}

# REPEATS (or HOLDOUT) braid-bench runs on $1 ranks, their median per size written to $3.
measure() {
  local n=$1 count=$2 merged=$3 kind=$4 runs=() r out
  for r in $(seq 1 "$count"); do
    out="$tmp/allreduce-n$n-$kind$r.json"
    echo "# braid-run -n $n braid-bench allreduce -b $min -e $max -f $factor --json $out" >&2
    timeout "$run_timeout" "$bin/braid-run" -n "$n" "$bin/braid-bench" allreduce -b "$min" -e "$max" -f "$factor" \
      --json "$out" > "${out%.json}.txt"
    runs+=("$out")
  done
  median_json "$merged" "${runs[@]}"
}

files=() held_out=()
for n in $world_sizes; do
  measure "$n" "$repeats" "$tmp/allreduce-n$n.json" run
  files+=("$tmp/allreduce-n$n.json")
  if [ "$holdout" -gt 0 ]; then
    measure "$n" "$holdout" "$tmp/holdout-n$n.json" holdout
    held_out+=("$tmp/holdout-n$n.json")
  fi
done

echo "## one model per world size, in-sample (median of $repeats runs, fitted on them)"
"$bin/braid-plan" calibrate --per-file --segments "$segments" "${files[@]}" -o "$tmp/fit-per-n.json"
"$bin/braid-plan" calibrate --per-file --segments "$segments" "${files[@]}" --json > "$tmp/fit-per-n.report.json"
if [ "${#held_out[@]}" -gt 0 ]; then
  echo
  echo "## the same models, held-out (median of $holdout later runs, predicted by the fit above)"
  "$bin/braid-plan" calibrate --model "$tmp/fit-per-n.json" "${held_out[@]}"
  "$bin/braid-plan" calibrate --model "$tmp/fit-per-n.json" "${held_out[@]}" --json > "$tmp/holdout-per-n.report.json"
fi
if [ "${#files[@]}" -gt 1 ]; then
  echo
  echo "## one model for all world sizes together, in-sample"
  "$bin/braid-plan" calibrate --segments "$segments" "${files[@]}" -o "$tmp/fit-joint.json"
  "$bin/braid-plan" calibrate --segments "$segments" "${files[@]}" --json > "$tmp/fit-joint.report.json"
fi
echo
verdict "in-sample" "$tmp/fit-per-n.report.json"
[ "${#held_out[@]}" -eq 0 ] || verdict "held-out" "$tmp/holdout-per-n.report.json"
[ "${#files[@]}" -le 1 ] || verdict "in-sample, one model for all world sizes" "$tmp/fit-joint.report.json"
