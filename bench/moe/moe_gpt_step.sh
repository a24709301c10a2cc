#!/usr/bin/env bash
# braid-train --model moe-gpt: step time and rank 0's all-to-all share of it, unpipelined
# (--moe-chunks 1) against pipelined (--moe-chunks 2, 4: forward and backward chunked), on 2 and
# 4 ranks at ep = world (docs/performance.md, "moe-gpt"). The machine is shared, so:
#  - ROUNDS rounds (default 5); in each round every configuration of one world size runs once,
#    in an order that alternates between rounds (forward, then reversed), so a load change
#    falls on every configuration alike;
#  - each run's figure is its median over the steps after the first two; the table gives the
#    median over the rounds and the spread (min-max over the rounds);
#  - the share of the all-to-all hidden is computed per round from the adjacent unpipelined and
#    pipelined runs: (step_unpipelined - step_pipelined) / all-to-all_unpipelined, then the
#    median and the range over the rounds (negative: the pipelined step was slower).
# With chunks > 1 the "all-to-all" time is the whole pipelined layer, exchange and experts
# together. BRAID_TRAIN=path measures another braid-train binary (e.g. an older pipelined path).
#   ROUNDS=5 [RANKS="2 4"] [STEPS=12] bash bench/moe/moe_gpt_step.sh [build-dir]
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-5}
steps=${STEPS:-12}
train=${BRAID_TRAIN:-$build/bin/braid-train}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lscpu | grep 'Model name' || true
date -u
for ranks in ${RANKS:-2 4}; do
  configs=(1 2 4)
  for ((r = 1; r <= rounds; ++r)); do
    order=("${configs[@]}")
    if ((r % 2 == 0)); then order=(4 2 1); fi
    echo "== ${ranks} ranks, round ${r}, $(uptime | sed 's/.*load/load/')" >&2
    for chunks in "${order[@]}"; do
      OMP_NUM_THREADS=1 "$build/bin/braid-run" -n "$ranks" "$train" --model moe-gpt --experts 8 --top-k 2 \
        --capacity-factor 1.25 --ep "$ranks" --moe-chunks "$chunks" --steps "$steps" --batch 16 --train-samples 2000 \
        --test-samples 200 --optimizer adam --quiet --json "$out/r${ranks}-c${chunks}-${r}.json" > /dev/null
    done
  done
done
python3 - "$out" "$rounds" ${RANKS:-2 4} <<'PY'
import json, statistics, sys
out, rounds, worlds = sys.argv[1], int(sys.argv[2]), [int(w) for w in sys.argv[3:]]
def run(ranks, chunks, r):
    m = json.load(open(f"{out}/r{ranks}-c{chunks}-{r}.json"))["moe"]
    return statistics.median(m["step_seconds"][2:]) * 1e3, statistics.median(m["alltoall_seconds_per_step"][2:]) * 1e3
print("| ranks | ep | --moe-chunks | step (ms), median of rounds | spread (min-max) | all-to-all (ms) | share of step | hidden vs chunks 1 (median, range) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for ranks in worlds:
    base = [run(ranks, 1, r) for r in range(1, rounds + 1)]
    for chunks in (1, 2, 4):
        got = [run(ranks, chunks, r) for r in range(1, rounds + 1)]
        step = [g[0] for g in got]; a2a = [g[1] for g in got]
        hidden = "-"
        if chunks > 1:
            h = [(b[0] - g[0]) / b[1] for b, g in zip(base, got)]
            hidden = f"{100 * statistics.median(h):.0f}% ({100 * min(h):.0f}% .. {100 * max(h):.0f}%)"
        print(f"| {ranks} | {ranks} | {chunks} | {statistics.median(step):.0f} | {min(step):.0f}-{max(step):.0f} | "
              f"{statistics.median(a2a):.0f} | {100 * statistics.median(a2a) / statistics.median(step):.0f}% | {hidden} |")
PY
date -u
