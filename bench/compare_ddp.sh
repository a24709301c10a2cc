#!/usr/bin/env bash
# braid-train against PyTorch 1.13 DDP (gloo backend; plain, fp16 hook, PowerSGD hook) on the
# same model, data, global batch, optimizer (SGD, momentum 0.9, lr 0.02) and threads per rank,
# in one session, plus a single process of one thread for reference. Prints per model a table:
# samples/s, the ratio to DDP (plain) and to the single process, the final test accuracy and
# its difference to braid's uncompressed run; raw JSON stays in KEEP_DIR when set.
#
# Usage: bench/compare_ddp.sh [--models "mlp cnn"] [--epochs 2] [--train-samples 0] [--ranks 2]
#        [--codecs "none fp16 bf16 int8 sign topk:0.01 powersgd:2"] [--hooks "none fp16 powersgd:2"]
# Environment: BUILD_DIR (default build), KEEP_DIR, BATCH (global, default 128 = 64 per rank
#   at 2 ranks), RUN_TIMEOUT (seconds per run, default 3600).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
models="mlp cnn" epochs=2 train_samples=0 ranks=2
codecs="none fp16 bf16 int8 sign topk:0.01 powersgd:2"
hooks="none fp16 powersgd:2"
batch=${BATCH:-128}
run_timeout=${RUN_TIMEOUT:-3600}
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --train-samples) train_samples=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --codecs) codecs=$2; shift 2 ;;
    --hooks) hooks=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin/braid-train" ] || { echo "no $bin/braid-train: build with LibTorch first (scripts/build.sh)" >&2; exit 1; }
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null ||
  { echo "PyTorch DDP peer needs python3-torch and python3-numpy (scripts/setup.sh)" >&2; exit 1; }
work=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${KEEP_DIR:-}" ] || trap 'rm -rf "$work"' EXIT

common=(--epochs "$epochs" --batch "$batch" --lr 0.02 --threads 1 --train-samples "$train_samples")
echo "compare_ddp: $(date -u +%F) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "compare_ddp: ${ranks} ranks x 1 thread, global batch $batch, $epochs epoch(s), train samples ${train_samples/#0/all}"

braid_run() {  # NAME RANKS MODEL ARGS...
  local name=$1 n=$2 model=$3; shift 3
  echo "  running $name ..." >&2
  timeout "$run_timeout" "$bin/braid-run" -n "$n" "$bin/braid-train" --model "$model" "${common[@]}" --quiet \
    --json "$work/$name.json" "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; return 1; }
}
ddp_run() {  # NAME MODEL HOOK
  echo "  running $1 ..." >&2
  timeout "$run_timeout" /usr/bin/python3 bench/ddp/pytorch_ddp.py --model "$2" --world "$ranks" --hook "$3" \
    --epochs "$epochs" --batch "$batch" --lr 0.02 --threads 1 --train-samples "$train_samples" \
    --json "$work/$1.json" > "$work/$1.log" 2>&1 ||
    { echo "  $1 failed (the peer's own error; last lines of its log follow)" >&2; tail -3 "$work/$1.log" >&2; }
}
figure() {  # FILE KEY: from braid-train's last epoch or the DDP peer's top level
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
src = d["epochs"][-1] if "epochs" in d and isinstance(d["epochs"], list) else d
print(src[sys.argv[2]])
PY
}

for model in $models; do
  braid_run "$model-single" 1 "$model" --compress none
  for hook in $hooks; do ddp_run "$model-ddp-${hook//:/}" "$model" "$hook"; done
  for codec in $codecs; do braid_run "$model-braid-${codec//:/}" "$ranks" "$model" --compress "$codec"; done

  single=$(figure "$work/$model-single.json" samples_per_second)
  ddp=$(figure "$work/$model-ddp-none.json" samples_per_second)
  base_acc=$(figure "$work/$model-braid-none.json" test_accuracy)
  echo
  printf '%-26s %12s %8s %9s %10s %10s\n' "$model run" "samples/s" "/DDP" "/single" "test acc" "vs none"
  rows=("$model-single" )
  for hook in $hooks; do rows+=("$model-ddp-${hook//:/}"); done
  for codec in $codecs; do rows+=("$model-braid-${codec//:/}"); done
  for row in "${rows[@]}"; do
    if [ ! -s "$work/$row.json" ]; then printf '%-26s %12s\n' "$row" "failed"; continue; fi
    sps=$(figure "$work/$row.json" samples_per_second)
    acc=$(figure "$work/$row.json" test_accuracy)
    awk -v n="$row" -v s="$sps" -v d="$ddp" -v o="$single" -v a="$acc" -v b="$base_acc" \
      'BEGIN { printf "%-26s %12.0f %8.2f %9.2f %9.2f%% %+9.2f\n", n, s, s / d, s / o, 100 * a, 100 * (a - b) }'
  done
done
