#!/usr/bin/env bash
# braid under a real Slurm (the private one-node cluster scripts/slurm.sh starts; CTest's
# slurm fixture starts it before and stops it after): srun starts the ranks and braid forms the
# job from Slurm's variables alone.
#   1. srun -n 4 braid-bench allreduce: every size exact (#wrong 0) on 4 ranks;
#   2. srun -n 2 braid-train: the same final parameters (crc32c) as braid-run -n 2 of the same
#      run, so the ranks, their order and the data sharding are the same;
#   3. sbatch --wait of docs/examples/slurm-braid-train.sbatch trains and finishes;
#   4. a rank killed (BRAID_FAULT) makes srun fail and the survivor name the lost peer.
# Usage: tests/slurm/slurm_test.sh BUILD_DIR SLURM_DIR. Exits 77 (skipped) when the fixture
# skipped (no root).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd) slurm_dir=$2
bin=$build/bin
[[ -f $slurm_dir/slurm.conf ]] || { echo "slurm_test: skipped: no private Slurm in $slurm_dir (needs root)"; exit 77; }
export SLURM_CONF=$slurm_dir/slurm.conf BRAID_TIMEOUT=60
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failures=0
fail() { echo "slurm_test: FAIL: $*"; failures=$((failures + 1)); }
step() { echo "slurm_test: $*"; }

step "srun -n 4 braid-bench allreduce"
if timeout 120 srun -n 4 "$bin/braid-bench" allreduce -b 8 -e 256K -f 8 >"$out/bench" 2>&1; then
  rows=$(grep -cE '^ +[0-9]' "$out/bench")
  wrong=$(awk '/^ +[0-9]/ && $NF != 0' "$out/bench" | wc -l)
  grep -q "4 ranks" "$out/bench" || fail "braid-bench did not run 4 ranks: $(head -3 "$out/bench")"
  [[ $rows -ge 5 && $wrong -eq 0 ]] || fail "$rows sizes, $wrong with wrong elements"
else
  fail "srun braid-bench exited non-zero"; cat "$out/bench"
fi

if [[ -x $bin/braid-train ]]; then
  train=(--model mlp --steps 4 --batch 64 --train-samples 512 --test-samples 64 --threads 1)
  step "srun -n 2 braid-train against braid-run -n 2"
  timeout 180 srun -n 2 "$bin/braid-train" "${train[@]}" >"$out/srun-train" 2>&1 || fail "srun braid-train failed"
  timeout 180 "$bin/braid-run" -n 2 "$bin/braid-train" "${train[@]}" >"$out/run-train" 2>&1 || fail "braid-run braid-train failed"
  a=$(grep -o 'crc32c [0-9a-f]*' "$out/srun-train") b=$(grep -o 'crc32c [0-9a-f]*' "$out/run-train")
  [[ -n $a && $a == "$b" ]] || { fail "srun's parameters ($a) differ from braid-run's ($b)"; cat "$out/srun-train"; }

  step "sbatch --wait docs/examples/slurm-braid-train.sbatch"
  (cd "$out" && BRAID_BIN=$bin timeout 300 sbatch --wait --ntasks-per-node=2 --output="$out/sbatch.out" \
    "$root/docs/examples/slurm-braid-train.sbatch" "${train[@]}" >"$out/sbatch.submit" 2>&1) ||
    { fail "sbatch job failed"; cat "$out/sbatch.submit" "$out/sbatch.out" 2>/dev/null; }
  grep -q "final parameters identical on every rank" "$out/sbatch.out" 2>/dev/null ||
    { fail "the sbatch job did not finish training"; cat "$out/sbatch.out" 2>/dev/null; }
fi

step "a rank killed under srun"
BRAID_FAULT=rank=1,op=allreduce,nth=20,kind=kill timeout 120 srun -n 3 "$bin/braid-bench" allreduce -b 8 -e 64K -f 8 \
  >"$out/killed" 2>&1 && fail "srun succeeded although rank 1 was killed"
grep -q "PeerLost" "$out/killed" || { fail "no survivor named the lost peer"; cat "$out/killed"; }
grep -qE "rank 1|peer 1" "$out/killed" || { fail "the lost rank is not named"; cat "$out/killed"; }

[[ $failures -eq 0 ]] && step "all passed"
exit $((failures > 0))
