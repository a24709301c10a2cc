#!/usr/bin/env bash
# ZeRO stage 1 against its PyTorch peer: braid-train --zero 1 against PyTorch 1.13's
# ZeroRedundancyOptimizer(SGD) + DistributedDataParallel over gloo (bench/ddp/pytorch_ddp.py
# --zero), with both DDPs for context; the MLP on Fashion-MNIST, same ranks, global batch,
# samples, epochs, SGD (momentum 0.9) and one thread per rank; alternating rounds, medians of
# samples/s. Usage: bench/zero/zero_vs_pytorch.sh [ROUNDS=3] [RANKS=2] [BUILD=build]
set -euo pipefail
rounds=${1:-3} ranks=${2:-2} build=${3:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lscpu | grep "Model name"
common=(--model mlp --epochs 1 --batch 128 --train-samples 12288 --test-samples 1000)
for r in $(seq "$rounds"); do
  for zero in 0 1; do
    "$build/bin/braid-run" -n "$ranks" "$build/bin/braid-train" "${common[@]}" --zero "$zero" --quiet \
      --json "$out/braid.z$zero.$r.json" > /dev/null
  done
  /usr/bin/python3 bench/ddp/pytorch_ddp.py "${common[@]}" --world "$ranks" --json "$out/torch.z0.$r.json"
  /usr/bin/python3 bench/ddp/pytorch_ddp.py "${common[@]}" --world "$ranks" --zero --json "$out/torch.z1.$r.json"
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def sps(name):
    values = []
    for r in range(1, rounds + 1):
        d = json.load(open(f"{out}/{name}.{r}.json"))
        values.append(d["epochs"][-1]["samples_per_second"] if isinstance(d.get("epochs"), list) else d["samples_per_second"])
    return statistics.median(values)
b0, b1, t0, t1 = sps("braid.z0"), sps("braid.z1"), sps("torch.z0"), sps("torch.z1")
print(f"braid DDP {b0:8.0f}  braid ZeRO-1 {b1:8.0f}  pytorch DDP {t0:8.0f}  pytorch ZeroRedundancyOptimizer {t1:8.0f} samples/s")
print(f"braid ZeRO-1 / pytorch ZeRO = {b1 / t1:.2f}   braid DDP / pytorch DDP = {b0 / t0:.2f}")
PY
