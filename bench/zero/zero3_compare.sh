#!/usr/bin/env bash
# ZeRO stage 3 (braid-train --zero 3, torch/fully_sharded.h) against braid's DDP (--zero 0), same
# model, data, seed and batch, in alternating rounds: samples/s (median of ROUNDS), bytes on the
# wire per step (rank 0: forward allgathers + backward allgathers + reduce-scatters, against
# DDP's allreduce), model-state bytes per rank and the gather counters. 2 and 4 ranks, the MLP
# and gpt-small. Usage: bench/zero/zero3_compare.sh [ROUNDS=3] [BUILD=build] [CAP=2]
set -euo pipefail
rounds=${1:-3} build=${2:-build} cap=${3:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lscpu | grep "Model name"
run() {  # round tag ranks zero args...
  local r=$1 tag=$2 ranks=$3 zero=$4; shift 4
  "$build/bin/braid-run" -n "$ranks" "$build/bin/braid-train" "$@" --zero "$zero" --max-gathered-units "$cap" \
    --quiet --seed 5 --json "$out/$tag.z$zero.$r.json" > /dev/null
}
mlp=(--model mlp --epochs 1 --batch 128 --train-samples 12288 --test-samples 256)
gpt=(--model gpt-small --steps 8 --batch 8 --train-samples 256 --test-samples 8 --optimizer adam)
for r in $(seq "$rounds"); do  # alternating: DDP then stage 3 back to back, every configuration once per round
  for zero in 0 3; do run "$r" mlp2 2 "$zero" "${mlp[@]}"; done
  for zero in 0 3; do run "$r" mlp4 4 "$zero" "${mlp[@]}"; done
  for zero in 0 3; do run "$r" gpt2 2 "$zero" "${gpt[@]}"; done
  for zero in 0 3; do run "$r" gpt4 4 "$zero" "${gpt[@]}"; done
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def runs(tag, z): return [json.load(open(f"{out}/{tag}.z{z}.{r}.json")) for r in range(1, rounds + 1)]
print(f"{'run':6} {'zero':>4} {'samples/s':>10} {'vs DDP':>7} {'wire MB/step':>12} {'vs DDP':>7} "
      f"{'model states MB':>15} {'max gathered':>12} {'peak gathered MB':>16}  per round")
for tag in ("mlp2", "mlp4", "gpt2", "gpt4"):
    base = None
    for z in (0, 3):
        ds = runs(tag, z)
        each = [d["epochs"][-1]["samples_per_second"] for d in ds]
        sps = statistics.median(each)
        e = ds[0]["epochs"][-1]
        wire = e["wire_bytes"] / e["steps"]
        state = ds[0]["model_state_bytes"]
        g = ds[0].get("gathers", {})
        if z == 0: base = (sps, wire)
        print(f"{tag:6} {z:>4} {sps:10.1f} {sps / base[0]:7.3f} {wire / 1e6:12.3f} {wire / base[1]:7.3f} "
              f"{state / 1e6:15.2f} {g.get('max_gathered', '-'):>12} {g.get('peak_gathered_bytes', 0) / 1e6:16.2f}  "
              + " ".join(f"{x:.1f}" for x in each))
PY
