#!/usr/bin/env bash
# gpt-small (~25 M parameters) on this machine's 2 cores, four ways, in alternating rounds:
#   tp2   braid-run -n 2, --tp 2            (tensor parallel: each rank half of every matmul)
#   dp2   braid-run -n 2                    (data parallel: each rank half the batch)
#   t2    one process, --threads 2          (LibTorch/OpenBLAS intra-op threads)
#   t1    one process, --threads 1
# Prints the median tokens/s of each, the ratios the issue asks for, and the TP collectives'
# share of the step. Usage: bench/tp/gpt_small_tp.sh [ROUNDS=3] [STEPS=6] [BUILD=build]
set -euo pipefail
rounds=${1:-3} steps=${2:-6} build=${3:-build}
out=$(mktemp -d)
common=(--model gpt-small --steps "$steps" --batch 8 --train-samples 256 --test-samples 8 --quiet --seed 3)
run() {  # name ranks args...
  local name=$1 ranks=$2; shift 2
  "$build/bin/braid-run" -n "$ranks" "$build/bin/braid-train" "${common[@]}" "$@" --json "$out/$name.$r.json" >/dev/null
}
lscpu | grep "Model name"
for r in $(seq "$rounds"); do
  run tp2 2 --tp 2 --microbatches 1
  run dp2 2
  run t2 1 --threads 2
  run t1 1
  echo "round $r done" >&2
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def runs(name):
    return [json.load(open(f"{out}/{name}.{r}.json")) for r in range(1, rounds + 1)]
def median(name, key):
    return statistics.median(d["epochs"][-1][key] for d in runs(name))
tok = {n: median(n, "tokens_per_second") for n in ("tp2", "dp2", "t2", "t1")}
for n, v in tok.items():
    print(f"{n:4} {v:9.0f} tokens/s (median of {rounds})")
print(f"tp2 / t1 = {tok['tp2'] / tok['t1']:.2f}   tp2 / dp2 = {tok['tp2'] / tok['dp2']:.2f}   "
      f"tp2 / t2 = {tok['tp2'] / tok['t2']:.2f}   dp2 / t1 = {tok['dp2'] / tok['t1']:.2f}")
print(f"tp2: tp collectives {100 * median('tp2', 'tp_share'):.1f}% of step time, "
      f"{median('tp2', 'axis_bytes_per_step')['tp'] / 1e6 if False else runs('tp2')[0]['epochs'][-1]['axis_bytes_per_step']['tp'] / 1e6:.1f} MB per step on tp")
PY
