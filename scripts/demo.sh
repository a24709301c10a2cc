#!/usr/bin/env bash
# The main job: set up, build, then train the Fashion-MNIST CNN with braid-train on 4 ranks
# (data parallel, gradient buckets overlapped with backward) twice — uncompressed and with int8
# gradient compression — and print the two runs side by side (throughput, test accuracy,
# communication share, bytes on the wire). A short run: a subset of the data, 2 epochs, a few
# minutes on 2 cores. Pass DEMO_FULL=1 for the whole dataset.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh

[ -x build/bin/braid-train ] || { echo "demo: braid-train was not built (LibTorch missing?)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
subset=(--train-samples 6144 --test-samples 2000)
[ -z "${DEMO_FULL:-}" ] || subset=()
for codec in none int8; do
  echo
  echo "== braid-run -n 4 braid-train --model cnn --epochs 2 --batch 128 --overlap on --compress $codec ${subset[*]}"
  ./build/bin/braid-run -n 4 ./build/bin/braid-train --model cnn --epochs 2 --batch 128 --overlap on \
    --compress "$codec" --compress-min-elements 16384 "${subset[@]}" --json "$out/cnn-$codec.json"
done
echo
echo "== braid-train compare: the last epoch of each run, side by side"
./build/bin/braid-train compare "$out/cnn-none.json" "$out/cnn-int8.json"
