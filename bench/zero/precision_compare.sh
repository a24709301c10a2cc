#!/usr/bin/env bash
# braid-train --precision fp32 / bf16 / fp16 against each other (docs/zero.md "Mixed
# precision"): same model, data, seed and batch, alternating rounds; per configuration the
# median samples/s, bytes on the wire per step (rank 0) and the final training loss.
# Usage: bench/zero/precision_compare.sh [ROUNDS=3] [BUILD=build] [RANKS=2]
set -euo pipefail
rounds=${1:-3} build=${2:-build} ranks=${3:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lscpu | grep "Model name"
grep -o -w -E "amx_bf16|avx512_bf16" /proc/cpuinfo | sort -u | tr '\n' ' '; echo "(bf16 instructions; none listed: bf16 is emulated)"
run() {  # round tag zero precision args...
  local r=$1 tag=$2 zero=$3 precision=$4; shift 4
  "$build/bin/braid-run" -n "$ranks" "$build/bin/braid-train" "$@" --zero "$zero" --precision "$precision" --quiet \
    --seed 5 --json "$out/$tag.z$zero.$precision.$r.json" > /dev/null
}
mlp=(--model mlp --epochs 1 --batch 128 --train-samples 12288 --test-samples 256)
gpt=(--model gpt-small --steps 8 --batch 8 --train-samples 256 --test-samples 8 --optimizer adam)
for r in $(seq "$rounds"); do
  for zero in 0 2; do
    for precision in fp32 bf16 fp16; do
      run "$r" mlp "$zero" "$precision" "${mlp[@]}"
      run "$r" gpt-small "$zero" "$precision" "${gpt[@]}"
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print(f"{'model':10} {'zero':>4} {'precision':>9} {'samples/s':>10} {'vs fp32':>7} {'wire MB/step':>12} {'vs fp32':>7} {'final loss':>10}")
for tag in ("mlp", "gpt-small"):
    for z in (0, 2):
        base = None
        for p in ("fp32", "bf16", "fp16"):
            ds = [json.load(open(f"{out}/{tag}.z{z}.{p}.{r}.json")) for r in range(1, rounds + 1)]
            sps = statistics.median(d["epochs"][-1]["samples_per_second"] for d in ds)
            e = ds[0]["epochs"][-1]
            wire = e["wire_bytes"] / e["steps"]
            if p == "fp32": base = (sps, wire)
            print(f"{tag:10} {z:>4} {p:>9} {sps:10.1f} {sps / base[0]:7.3f} {wire / 1e6:12.3f} {wire / base[1]:7.3f} "
                  f"{ds[0]['step_losses'][-1]:10.4f}")
PY
