#!/usr/bin/env bash
# braid-train --model moe-gpt: step time and rank 0's all-to-all share of it, for EP sizes on 2
# and 4 ranks, unpipelined and pipelined (--moe-chunks 2, 4) (docs/performance.md, "moe-gpt").
# The median over the steps after the first two. With chunks > 1 the "all-to-all" time is the
# pipelined forward layer (exchange and experts together) plus the backward's exchanges.
#   bash bench/moe/moe_gpt_step.sh [build-dir]
set -euo pipefail
build=${1:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
uptime
for cfg in "2 1 1" "2 2 1" "2 2 2" "2 2 4" "4 2 1" "4 4 1" "4 4 2" "4 4 4"; do
  set -- $cfg
  OMP_NUM_THREADS=1 "$build/bin/braid-run" -n "$1" "$build/bin/braid-train" --model moe-gpt --experts 8 --top-k 2 \
    --capacity-factor 1.25 --ep "$2" --moe-chunks "$3" --steps 20 --batch 16 --train-samples 2000 --test-samples 200 --optimizer adam \
    --quiet --json "$out/run.json" > /dev/null
  python3 - "$out/run.json" "$1" "$2" "$3" <<'PY'
import json, statistics, sys
m = json.load(open(sys.argv[1]))["moe"]
step, a2a = m["step_seconds"][2:], m["alltoall_seconds_per_step"][2:]
print(f"ranks {sys.argv[2]} ep {sys.argv[3]} chunks {sys.argv[4]}: median step {1e3 * statistics.median(step):.1f} ms, median all-to-all "
      f"{1e3 * statistics.median(a2a):.1f} ms ({100 * sum(a2a) / sum(step):.1f}% of step time), "
      f"tokens dropped {sum(m['dropped_tokens_per_step']) / len(m['dropped_tokens_per_step']):.1f} per step of {m['tokens_per_step']}")
PY
done
uptime
