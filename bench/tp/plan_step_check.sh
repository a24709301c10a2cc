#!/usr/bin/env bash
# Does braid-plan's step model predict braid-train's mesh runs on this machine? gpt-small
# (25.4 M parameters, fp32), global batch 8, measured under TP=2, PP=2 and TP=2 x PP=2, and
# predicted by `braid-plan step` calibrated on this machine only:
#   link     braid-bench allreduce on 2 ranks (1 MiB .. 32 MiB, the sizes of the TP activations,
#            PP boundaries and DP buckets here), fitted with `braid-plan calibrate --segments 1`
#            -> --intra-alpha, --intra-bandwidth;
#   compute  one process, one thread, the same model and batch: its step time gives the FLOP/s
#            one core reaches on this model (--device-flops, --efficiency 1). A rank is a
#            "device"; with more ranks than cores each gets cores/ranks of one.
# Prints per layout the measured step (rank 0's mean over the run),
# the predicted step and the relative error. Goal (issue 18): within 15%.
# Usage: bench/tp/plan_step_check.sh [STEPS=12] [BUILD=build]
set -euo pipefail
steps=${1:-12} build=${2:-build}
bin=$build/bin
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cores=$(nproc)
lscpu | grep "Model name"
"$bin/braid-run" -n 2 "$bin/braid-bench" allreduce -b 1M -e 32M -f 2 --json "$out/allreduce.json" > /dev/null
"$bin/braid-plan" calibrate --segments 1 -o "$out/fit.json" "$out/allreduce.json" > /dev/null
read -r alpha bandwidth < <(/usr/bin/python3 -c "
import json; f = json.load(open('$out/fit.json'))
seg = f['fits'][0]['segments'][0]
print(max(seg['alpha'], 1e-6), 1 / seg['beta'])  # the planner wants alpha > 0: 1 us when the fit says 0
")
echo "link: alpha $alpha s, bandwidth $bandwidth B/s (braid-bench allreduce, 2 ranks, 1-32 MiB)"

common=(--model gpt-small --batch 8 --train-samples 256 --test-samples 8 --quiet --seed 3 --steps "$steps")
train() {  # name ranks flags...
  local name=$1 ranks=$2; shift 2
  "$bin/braid-run" -n "$ranks" "$bin/braid-train" "${common[@]}" "$@" --json "$out/$name.json" > /dev/null
}
train one 1
train tp2 2 --tp 2 --microbatches 1
train pp2 2 --pp 2 --microbatches 4 --schedule 1f1b
train tp2pp2 4 --tp 2 --pp 2 --microbatches 4 --schedule 1f1b

/usr/bin/python3 - "$out" "$bin" "$alpha" "$bandwidth" "$cores" <<'PY'
import json, subprocess, sys
out, bin, alpha, bandwidth, cores = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
params, layers, hidden, heads, seq = 25.4e6, 8, 512, 8, 128
def run(name): return json.load(open(f"{out}/{name}.json"))
def measured_step(name):
    d = run(name); e = d["epochs"][-1]
    return e["step_seconds"] / e["steps"]
flops_per_sequence = 6 * params * seq + 12 * layers * hidden * seq * seq   # plan/model_spec.h
one_core = flops_per_sequence * 8 / measured_step("one")
print(f"compute: {one_core / 1e9:.1f} GFLOP/s on one core ({flops_per_sequence / 1e9:.2f} GFLOP per sequence)")
def predict(tp, pp, m, b, ranks):
    device = one_core * min(1.0, cores / ranks)
    args = [f"{bin}/braid-plan", "--json", "step", "--model", "custom", "--params", str(params), "--layers", str(layers),
            "--hidden", str(hidden), "--heads", str(heads), "--kv-heads", str(heads), "--ffn-hidden", str(4 * hidden),
            "--vocab", "114", "--seq", str(seq), "--nodes", "1", "--devices-per-node", str(ranks),
            "--device-flops", str(device), "--efficiency", "1", "--intra-alpha", f"{alpha}s",
            "--intra-bandwidth", f"{bandwidth}B/s", "--dp", "1", "--tp", str(tp), "--pp", str(pp),
            "-m", str(m), "--micro-batch", str(b), "--dtype", "fp32", "--activation-dtype", "fp32",
            "--schedule", "1f1b"]
    doc = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    for section in doc["sections"]:
        for r in section["results"]:
            if r["name"] == "step_seconds": return r["value"]
    raise SystemExit("no step_seconds in braid-plan step --json")
print(f"{'layout':10} {'measured s':>10} {'predicted s':>11} {'error':>7}")
for name, tp, pp, m, b, ranks in [("tp2", 2, 1, 1, 8, 2), ("pp2", 1, 2, 4, 2, 2), ("tp2pp2", 2, 2, 4, 2, 4)]:
    got, want = measured_step(name), predict(tp, pp, m, b, ranks)
    print(f"{name:10} {got:10.3f} {want:11.3f} {100 * (want - got) / got:+6.1f}%")
PY
