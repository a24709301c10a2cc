#!/usr/bin/env bash
# braid-train --precision bf16 --zero 1|2|3 with the parameters stored in bf16 (--param-storage
# compute, the default) against fp32 storage of the same values (--param-storage fp32)
# (docs/zero.md "Mixed precision"): gpt-small, same data, seed and batch, alternating rounds;
# per ranks, stage and storage the model-state bytes of rank 0 (deterministic: from the real
# allocations), stage 3's peak gathered bytes, the median samples/s and the final loss.
# Usage: bench/zero/param_storage_compare.sh [ROUNDS=3] [BUILD=build] [RANKS="2 4"]
set -euo pipefail
rounds=${1:-3} build=${2:-build} ranks=${3:-"2 4"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lscpu | grep "Model name"
gpt=(--model gpt-small --steps 6 --batch 8 --train-samples 256 --test-samples 8 --optimizer adam --seed 5 --quiet
     --precision bf16)
for r in $(seq "$rounds"); do
  for n in $ranks; do
    for zero in 1 2 3; do
      for storage in compute fp32; do
        "$build/bin/braid-run" -n "$n" "$build/bin/braid-train" "${gpt[@]}" --zero "$zero" --param-storage "$storage" \
          --json "$out/$n.z$zero.$storage.$r.json" > /dev/null
      done
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" "$ranks" <<'PY'
import json, statistics, sys
out, rounds, ranks = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
print(f"{'ranks':>5} {'zero':>4} {'storage':>7} {'model states B':>15} {'vs fp32':>7} {'params B':>11} "
      f"{'peak gathered B':>15} {'samples/s':>9} {'vs fp32':>7} {'final loss':>10}")
for n in ranks:
    for zero in (1, 2, 3):
        ds = {s: [json.load(open(f"{out}/{n}.z{zero}.{s}.{r}.json")) for r in range(1, rounds + 1)] for s in ("compute", "fp32")}
        base = ds["fp32"][0]["model_state_bytes"]
        base_sps = statistics.median(d["epochs"][-1]["samples_per_second"] for d in ds["fp32"])
        for s in ("fp32", "compute"):
            d = ds[s][0]
            sps = statistics.median(x["epochs"][-1]["samples_per_second"] for x in ds[s])
            peak = d.get("gathers", {}).get("peak_gathered_bytes", 0)
            print(f"{n:>5} {zero:>4} {d['parameter_dtype']:>7} {d['model_state_bytes']:>15,} {d['model_state_bytes'] / base:7.3f} "
                  f"{d['model_state']['parameters']:>11,} {peak:>15,} {sps:9.2f} {sps / base_sps:7.3f} {d['step_losses'][-1]:10.4f}")
PY
