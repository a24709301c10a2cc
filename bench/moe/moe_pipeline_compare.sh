#!/usr/bin/env bash
# Pipelined vs unpipelined MoE dispatch (docs/moe.md, docs/performance.md "MoE dispatch"):
# braid-moe-bench under braid-run for 2 and 4 ranks, ROUNDS rounds each, with MLP experts
# (compute on the rank's own cores) and with offloaded experts (they sleep as long, leaving the
# cores free, as an accelerator would), the load average before each round (the machine is
# shared: compare rounds, take medians).
#   ROUNDS=3 bash bench/moe/moe_pipeline_compare.sh [build dir]
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-3}
common=${MOE_ARGS:---tokens 2048 --hidden 512 --iters 7 --chunks 1,2,4,8}
lscpu | grep 'Model name' || true
date -u
for mode in "--ffn 16" "--offload-ns-per-row 10000"; do
  for ranks in 2 4; do
    for ((r = 1; r <= rounds; ++r)); do
      echo "== ${ranks} ranks, ${mode}, round ${r}, $(uptime | sed 's/.*load/load/')"
      "${build}/bin/braid-run" -n "${ranks}" "${build}/bin/braid-moe-bench" ${common} ${mode} | sed 's/^\[0\] //'
    done
  done
done
date -u
