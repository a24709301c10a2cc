#!/usr/bin/env bash
# The compute ceiling of data parallelism on this machine: how fast N one-thread processes train
# when they never communicate (N independent single processes of the per-rank batch, run at the
# same time), beside one process of the global batch and braid-train on N ranks. No DDP or braid
# run can beat the independent processes' sum; compare_ddp.sh's ratios are to be read against it.
#
# Usage: bench/compute_ceiling.sh [--model mlp] [--ranks 2] [--batch 128] [--train-samples 12800]
# Environment: BUILD_DIR (default build), KEEP_DIR (keep the JSON files there).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
model=mlp ranks=2 batch=128 train_samples=12800
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --train-samples) train_samples=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin/braid-train" ] || { echo "no $bin/braid-train: build with LibTorch first (scripts/build.sh)" >&2; exit 1; }
[ $((batch % ranks)) -eq 0 ] || { echo "--batch $batch is not divisible by --ranks $ranks" >&2; exit 2; }
work=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${KEEP_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
common=(--model "$model" --epochs 1 --lr 0.02 --threads 1 --train-samples "$train_samples" --quiet)
per_rank=$((batch / ranks))
sps() { python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["epochs"][-1]["samples_per_second"]))' "$1"; }

echo "compute_ceiling: $(date -u +%F), $model, $ranks x 1 thread, global batch $batch, $train_samples samples" >&2
"$bin/braid-train" "${common[@]}" --batch "$batch" --json "$work/single.json" > /dev/null
"$bin/braid-train" "${common[@]}" --batch "$per_rank" --json "$work/single-per-rank.json" > /dev/null
pids=()
for ((r = 0; r < ranks; r++)); do
  "$bin/braid-train" "${common[@]}" --batch "$per_rank" --json "$work/independent$r.json" > /dev/null &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
"$bin/braid-run" -n "$ranks" "$bin/braid-train" "${common[@]}" --batch "$batch" --json "$work/braid.json" > /dev/null

single=$(sps "$work/single.json")
sum=0
for ((r = 0; r < ranks; r++)); do sum=$((sum + $(sps "$work/independent$r.json"))); done
braid=$(sps "$work/braid.json")
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
printf '%-52s %10s %9s\n' run samples/s /single
printf '%-52s %10s %9s\n' "one process, batch $batch" "$single" 1.00
printf '%-52s %10s %9s\n' "one process, batch $per_rank" "$(sps "$work/single-per-rank.json")" \
  "$(ratio "$(sps "$work/single-per-rank.json")" "$single")"
printf '%-52s %10s %9s\n' "$ranks independent processes of batch $per_rank (sum)" "$sum" "$(ratio "$sum" "$single")"
printf '%-52s %10s %9s\n' "braid-train, $ranks ranks, global batch $batch" "$braid" "$(ratio "$braid" "$single")"
