#!/usr/bin/env bash
# ZeRO stages 1 and 2 against braid's DDP (stage 0), same model, data, seed and batch, in
# alternating rounds: samples/s (median), bytes on the wire per step (rank 0: the gradient
# reduce-scatters plus the parameter allgathers, against DDP's allreduce) and model-state bytes
# per rank; medians of ROUNDS alternating rounds. Usage: bench/zero/zero_compare.sh [ROUNDS=3] [BUILD=build]
# Not measured here yet: PyTorch's ZeroRedundancyOptimizer (issue 19 asks for it as the peer).
set -euo pipefail
rounds=${1:-3} build=${2:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lscpu | grep "Model name"
run() {  # round tag ranks zero args...
  local r=$1 tag=$2 ranks=$3 zero=$4; shift 4
  "$build/bin/braid-run" -n "$ranks" "$build/bin/braid-train" "$@" --zero "$zero" --quiet --seed 5 \
    --json "$out/$tag.z$zero.$r.json" > /dev/null
}
mlp=(--model mlp --epochs 1 --batch 128 --train-samples 12288 --test-samples 256)
gpt=(--model gpt-small --steps 8 --batch 8 --train-samples 256 --test-samples 8 --optimizer adam)
for r in $(seq "$rounds"); do  # alternating: every configuration once per round
  for zero in 0 1 2; do
    run "$r" mlp2 2 "$zero" "${mlp[@]}"; run "$r" mlp4 4 "$zero" "${mlp[@]}"; run "$r" gpt2 2 "$zero" "${gpt[@]}"
  done
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def runs(tag, z): return [json.load(open(f"{out}/{tag}.z{z}.{r}.json")) for r in range(1, rounds + 1)]
print(f"{'run':6} {'zero':>4} {'samples/s':>10} {'vs DDP':>7} {'wire MB/step':>12} {'vs DDP':>7} {'model states MB':>15}")
for tag in ("mlp2", "mlp4", "gpt2"):
    base = None
    for z in (0, 1, 2):
        ds = runs(tag, z)
        sps = statistics.median(d["epochs"][-1]["samples_per_second"] for d in ds)
        e = ds[0]["epochs"][-1]
        wire = e["wire_bytes"] / e["steps"]
        state = ds[0]["model_state_bytes"]
        if z == 0: base = (sps, wire)
        print(f"{tag:6} {z:>4} {sps:10.1f} {sps / base[0]:7.3f} {wire / 1e6:12.3f} {wire / base[1]:7.3f} {state / 1e6:15.2f}")
PY
