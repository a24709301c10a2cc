#!/usr/bin/env bash
# braid-train --zero 3 on the mesh, dp 2 x pp 2 (1f1b), gpt-small: a unit per pipeline chunk
# (--zero-unit-layers 0) against a unit per transformer block (--zero-unit-layers 1) with the
# next block prefetched (--max-gathered-units 2) and without (1) (docs/zero.md "Stage 3 on the
# mesh"). Same data, seed and batch, alternating rounds; per variant rank 0's peak gathered bytes
# (deterministic: the tracker's counter), its allgathers, the median step time and the final loss
# (bit for bit the same in all three: the same arithmetic). The load average is printed before
# and after: the machine is shared.
# Usage: bench/zero/mesh_units_compare.sh [ROUNDS=3] [BUILD=build] [STEPS=4]
set -euo pipefail
rounds=${1:-3} build=${2:-build} steps=${3:-4}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lscpu | grep "Model name"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
gpt=(--model gpt-small --steps "$steps" --batch 8 --microbatches 4 --train-samples 256 --test-samples 8 --optimizer adam
     --seed 5 --quiet --pp 2 --schedule 1f1b --zero 3)
variants=("chunk:--zero-unit-layers 0" "block-prefetch:--zero-unit-layers 1 --max-gathered-units 2"
          "block-no-prefetch:--zero-unit-layers 1 --max-gathered-units 1")
for r in $(seq "$rounds"); do
  for v in "${variants[@]}"; do
    name=${v%%:*} flags=${v#*:}
    # shellcheck disable=SC2086
    "$build/bin/braid-run" -n 4 "$build/bin/braid-train" "${gpt[@]}" $flags --json "$out/$name.$r.json" > /dev/null
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
names = ("chunk", "block-prefetch", "block-no-prefetch")
ds = {n: [json.load(open(f"{out}/{n}.{r}.json")) for r in range(1, rounds + 1)] for n in names}
def step_ms(d):
    e = d["epochs"][-1]
    return 1000 * e["step_seconds"] / max(e.get("steps", 1), 1)
base_peak = ds["chunk"][0]["gathers"]["peak_gathered_bytes"]
base_ms = statistics.median(step_ms(d) for d in ds["chunk"])
print(f"{'units':>18} {'units/stage0':>12} {'cap':>3} {'peak gathered B':>15} {'vs chunk':>8} {'allgathers':>10} "
      f"{'step ms (median)':>16} {'vs chunk':>8} {'final loss':>12}")
for n in names:
    d = ds[n][0]; g = d["gathers"]
    ms = statistics.median(step_ms(x) for x in ds[n])
    print(f"{n:>18} {g['units']:>12} {g['max_gathered_units']:>3} {g['peak_gathered_bytes']:>15,} "
          f"{g['peak_gathered_bytes'] / base_peak:8.3f} {g['allgathers']:>10} {ms:16.1f} {ms / base_ms:8.3f} "
          f"{d['step_losses'][-1]:12.8f}")
PY
