#!/usr/bin/env bash
# braid-train --elastic with one rank SIGKILLed from outside at a random moment against the same
# run undisturbed (issue 21 item 5's "Done means"): the final test accuracy of both and their
# difference in points, the steps lost, and the recovery time measured from the kill (this
# script's clock) to the first step the survivors completed after it (the trainer's recovery
# line carries that step's wall-clock time). Prints one table; logs stay in KEEP_DIR when set.
# --rejoin: braid-run --max-restarts 1 starts the victim's program again, which rejoins at a step
# boundary (braid-train --rejoin-wait 20); adds the newcomer's seconds from its process's start
# to its first completed step, and the final world (docs/reliability.md#rejoin).
#
# Usage: bench/elastic_accuracy.sh [--ranks 4] [--victim 2] [--model mlp] [--epochs 2]
#        [--train-samples 20000] [--batch 120] [--seed 1] [--rejoin]
# Environment: BUILD_DIR (default build), KEEP_DIR, RUN_TIMEOUT (seconds per run, default 3600),
#   REUSE=1 (with KEEP_DIR: keep an undisturbed run already there, with the same flags).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
ranks=4 victim=2 model=mlp epochs=2 train_samples=20000 batch=120 seed=1 rejoin=0
run_timeout=${RUN_TIMEOUT:-3600}
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --victim) victim=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --train-samples) train_samples=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --rejoin) rejoin=1; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin/braid-train" ] || { echo "no $bin/braid-train: build with LibTorch first" >&2; exit 1; }
work=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${KEEP_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
train=("$bin/braid-train" --elastic --model "$model" --epochs "$epochs" --batch "$batch" --seed "$seed"
       --train-samples "$train_samples" --threads 1 --quiet)
echo "elastic_accuracy: $(date -u '+%F %H:%M') UTC, $(nproc) cores, $(lscpu | grep 'Model name' | cut -d: -f2 | xargs)"
echo "elastic_accuracy: $ranks ranks, $model, $epochs epoch(s) of $train_samples samples, global batch $batch, seed $seed"

figure() {  # FILE EXPRESSION over the --json report `d`
  /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

if [ "${REUSE:-0}" = 1 ] && [ -f "$work/undisturbed.seconds" ]; then
  undisturbed_s=$(cat "$work/undisturbed.seconds")
else
  start=$(date +%s.%N)
  timeout "$run_timeout" "$bin/braid-run" -n "$ranks" --elastic "${train[@]}" --json "$work/undisturbed.json" \
    > "$work/undisturbed.log" 2>&1 || { cat "$work/undisturbed.log" >&2; exit 1; }
  undisturbed_s=$(echo "$(date +%s.%N) - $start" | bc)
  echo "$undisturbed_s" > "$work/undisturbed.seconds"
fi

children_of() {  # PID: the pids whose parent it is
  for stat in /proc/[0-9]*/stat; do
    [ "$(awk '{print $4}' "$stat" 2>/dev/null)" = "$1" ] && { p=${stat#/proc/}; echo "${p%/stat}"; }
  done
  return 0
}

# The kill lands between 20% and 70% of the undisturbed run's length after training starts.
delay=$(/usr/bin/python3 -c "import random; random.seed($seed); print(round($undisturbed_s * random.uniform(0.2, 0.7), 2))")
launch=(--elastic) extra=()
[ "$rejoin" = 1 ] && { launch+=(--max-restarts 1); extra=(--rejoin-wait 20); }
timeout "$run_timeout" "$bin/braid-run" -n "$ranks" "${launch[@]}" "${train[@]}" "${extra[@]}" \
  --json "$work/killed.json" > "$work/killed.log" 2>&1 &
guard=$!
until grep -q 'steps per epoch' "$work/killed.log"; do sleep 0.2; done
sleep "$delay"
# The victim: the child of this run's braid-run (the child of `timeout`) whose BRAID_RANK is $victim.
launcher=$(children_of "$guard" | head -1)
for pid in $(children_of "$launcher"); do
  tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "BRAID_RANK=$victim" && target=$pid
done
[ -n "${target:-}" ] || { echo "rank $victim of braid-run $launcher not found" >&2; exit 1; }
killed_at=$(date +%s.%N)
kill -KILL "$target"
wait "$guard" || { cat "$work/killed.log" >&2; exit 1; }

recovered_at=$(sed -n 's/.*recovered in .* (at unix time \([0-9.]*\)).*/\1/p' "$work/killed.log" | head -1)
[ -n "$recovered_at" ] || { echo "no recovery line in the killed run's log" >&2; cat "$work/killed.log" >&2; exit 1; }
acc_u=$(figure "$work/undisturbed.json" 'd["epochs"][-1]["test_accuracy"] * 100')
acc_k=$(figure "$work/killed.json" 'd["epochs"][-1]["test_accuracy"] * 100')
printf '%-34s %s\n' "undisturbed: test accuracy %" "$(printf '%.2f' "$acc_u") ($ranks ranks, $(printf '%.0f' "$undisturbed_s") s)"
printf '%-34s %s\n' "killed: test accuracy %" "$(printf '%.2f' "$acc_k") (finished on $(figure "$work/killed.json" 'd["world"]') ranks)"
printf '%-34s %+.2f\n' "difference, points" "$(echo "$acc_k - $acc_u" | bc)"
printf '%-34s %s\n' "killed at (s after training began)" "$delay"
printf '%-34s %s\n' "event" "$(figure "$work/killed.json" 'd["elastic_events"][0]')"
printf '%-34s %s\n' "kill -> first step after, s" "$(printf '%.2f' "$(echo "$recovered_at - $killed_at" | bc)")"
if [ "$rejoin" = 1 ]; then
  first=$(sed -n 's/.*member [0-9]*: first step (step \([0-9]*\)) completed \([0-9.]*\) s after its process started.*/\2 (step \1)/p' "$work/killed.log" | head -1)
  [ -n "$first" ] || { echo "no newcomer's first-step line in the log" >&2; cat "$work/killed.log" >&2; exit 1; }
  printf '%-34s %s\n' "rejoin event" "$(figure "$work/killed.json" 'd["elastic_events"][-1]')"
  printf '%-34s %s\n' "newcomer start -> first step, s" "$first"
fi
