#!/usr/bin/env bash
# ZeRO++ (--zero-pp qwz, qgz; docs/zero.md "ZeRO++") against plain ZeRO and DDP, same model, data,
# seed and batch. Two parts:
#   accuracy: the MLP for 2 epochs of Fashion-MNIST (test accuracy) and the GPT for 200 steps
#             (validation loss), on RANKS ranks: DDP, ZeRO-1, ZeRO-1 + qwz,qgz, + qwz,qgz-ef;
#   speed:    samples/s (median of ROUNDS alternating rounds) and bytes on the wire per step
#             (rank 0; gradient and parameter parts apart), MLP on 2 and 4 ranks, over shared
#             memory (BRAID_TRANSPORT=auto) and over TCP on loopback (tcp).
# Usage: bench/zero/zeropp_compare.sh accuracy|speed [ROUNDS=3] [BUILD=build] [RANKS=2]
# Environment: CONFIGS (accuracy: a space-separated subset of ddp zero1 qwz,qgz qwz,qgz-ef).
set -euo pipefail
mode=$1 rounds=${2:-3} build=${3:-build} ranks=${4:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lscpu | grep "Model name"
date -u
run() {  # tag ranks args...
  local tag=$1 n=$2; shift 2
  BRAID_TRANSPORT=${transport:-auto} "$build/bin/braid-run" -n "$n" "$build/bin/braid-train" "$@" --quiet --seed 5 \
    --json "$out/$tag.json" > /dev/null
}
configs=("ddp:--zero 0" "zero1:--zero 1" "qwz,qgz:--zero 1 --zero-pp qwz,qgz" "qwz,qgz-ef:--zero 1 --zero-pp qwz,qgz-ef")
if [[ $mode == accuracy ]]; then
  for c in "${configs[@]}"; do
    [[ -n ${CONFIGS:-} && " $CONFIGS " != *" ${c%%:*} "* ]] && continue
    # shellcheck disable=SC2086
    run "mlp.${c%%:*}" "$ranks" --model mlp --epochs 2 --batch 128 ${c#*:}
    # shellcheck disable=SC2086
    run "gpt.${c%%:*}" "$ranks" --model gpt --steps 200 --batch 32 --optimizer adam --test-samples 1024 ${c#*:}
  done
  /usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print(f"{'config':12} {'MLP test acc %':>14} {'vs ZeRO-1':>10} {'GPT val loss':>12} {'vs ZeRO-1':>10}")
base = {m: json.load(open(f"{out}/{m}.zero1.json"))["epochs"][-1] for m in ("mlp", "gpt")}
import os
for c in ("ddp", "zero1", "qwz,qgz", "qwz,qgz-ef"):
    if not os.path.exists(f"{out}/mlp.{c}.json"): continue
    mlp = json.load(open(f"{out}/mlp.{c}.json"))["epochs"][-1]
    gpt = json.load(open(f"{out}/gpt.{c}.json"))["epochs"][-1]
    print(f"{c:12} {100 * mlp['test_accuracy']:14.2f} {100 * (mlp['test_accuracy'] - base['mlp']['test_accuracy']):+9.2f}p "
          f"{gpt['test_loss']:12.4f} {100 * (gpt['test_loss'] / base['gpt']['test_loss'] - 1):+9.2f}%")
PY
  exit 0
fi
mlp=(--model mlp --epochs 1 --batch 128 --train-samples 12288 --test-samples 256 --zero 1)
for r in $(seq "$rounds"); do  # alternating: every configuration once per round
  for transport in auto tcp; do
    for n in 2 4; do
      for pp in none qwz qgz qwz,qgz; do
        extra=(); [[ $pp != none ]] && extra=(--zero-pp "$pp")
        run "$transport.mlp$n.$pp.$r" "$n" "${mlp[@]}" "${extra[@]}"
      done
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print(f"{'run':10} {'zero-pp':>8} {'samples/s':>10} {'vs ZeRO':>8} {'grad MB/step':>12} {'param MB/step':>13} {'total vs ZeRO':>13}")
for t, n in ((t, n) for t in ("auto", "tcp") for n in (2, 4)):
    base = None
    for pp in ("none", "qwz", "qgz", "qwz,qgz"):
        ds = [json.load(open(f"{out}/{t}.mlp{n}.{pp}.{r}.json")) for r in range(1, rounds + 1)]
        sps = statistics.median(d["epochs"][-1]["samples_per_second"] for d in ds)
        e = ds[0]["epochs"][-1]
        w = e["zero_wire"]
        grad, param = w["gradients"] / e["steps"], w["parameters"] / e["steps"]
        if base is None: base = (sps, grad + param)
        print(f"{t + ' mlp' + str(n):10} {pp:>8} {sps:10.1f} {sps / base[0]:8.3f} {grad / 1e6:12.3f} {param / 1e6:13.3f} "
              f"{(grad + param) / base[1]:13.3f}")
PY
