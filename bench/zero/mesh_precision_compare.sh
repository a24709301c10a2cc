#!/usr/bin/env bash
# braid-train --precision fp32 / bf16 / fp16 on the process mesh (docs/zero.md "Mixed precision",
# "On the mesh"): gpt-small on tp 2 and on pp 2 (2 ranks each), same data, seed and batch,
# alternating rounds; per layout and precision the median samples/s, the bytes per step on the
# tp and pp axes (mean over ranks) and the final training loss.
# Usage: bench/zero/mesh_precision_compare.sh [ROUNDS=3] [BUILD=build]
set -euo pipefail
rounds=${1:-3} build=${2:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lscpu | grep "Model name"
grep -o -w -E "amx_bf16|avx512_bf16" /proc/cpuinfo | sort -u | tr '\n' ' '; echo "(bf16 instructions; none listed: bf16 is emulated)"
gpt=(--model gpt-small --steps 6 --batch 8 --train-samples 256 --test-samples 8 --optimizer adam --seed 5 --quiet)
declare -A layout=([tp2]="--tp 2 --microbatches 1" [pp2]="--pp 2 --microbatches 4")
for r in $(seq "$rounds"); do
  for tag in tp2 pp2; do
    for precision in fp32 bf16 fp16; do
      # shellcheck disable=SC2086
      "$build/bin/braid-run" -n 2 "$build/bin/braid-train" "${gpt[@]}" ${layout[$tag]} --precision "$precision" \
        --json "$out/$tag.$precision.$r.json" > /dev/null
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print(f"{'layout':6} {'precision':>9} {'samples/s':>10} {'vs fp32':>7} {'tp MB/step':>10} {'pp MB/step':>10} {'final loss':>10}")
for tag in ("tp2", "pp2"):
    base = None
    for p in ("fp32", "bf16", "fp16"):
        ds = [json.load(open(f"{out}/{tag}.{p}.{r}.json")) for r in range(1, rounds + 1)]
        sps = statistics.median(d["epochs"][-1]["samples_per_second"] for d in ds)
        axes = ds[0]["epochs"][-1]["axis_bytes_per_step"]
        if p == "fp32": base = sps
        print(f"{tag:6} {p:>9} {sps:10.2f} {sps / base:7.3f} {axes['tp'] / 1e6:10.3f} {axes['pp'] / 1e6:10.3f} "
              f"{ds[0]['step_losses'][-1]:10.4f}")
PY
