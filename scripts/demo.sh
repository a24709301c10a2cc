#!/usr/bin/env bash
# The main job: set up, build, and run a 4-rank allreduce benchmark on this host with every
# result checked (#wrong must be 0), the point-to-point ping-pong between two ranks, the
# compressed allreduce of every codec (bytes on the wire, error), and GradSync's overlap of
# gradient communication with a synthetic backward.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh

echo
echo "== braid-run -n 4 braid-bench allreduce -b 8 -e 64M -f 4 -c 1"
./build/bin/braid-run -n 4 ./build/bin/braid-bench allreduce -b 8 -e 64M -f 4 -c 1
echo
echo "== braid-run -n 2 braid-bench sendrecv -b 8 -e 64M -f 4"
./build/bin/braid-run -n 2 ./build/bin/braid-bench sendrecv -b 8 -e 64M -f 4
echo
echo "== braid-run -n 4 braid-bench allreduce --compress none,fp16,bf16,int8,sign,topk:0.01,randomk:0.01,powersgd:4 -b 16M -e 16M"
./build/bin/braid-run -n 4 ./build/bin/braid-bench allreduce --compress none,fp16,bf16,int8,sign,topk:0.01,randomk:0.01,powersgd:4 \
  -b 16M -e 16M --repeats 3
echo
echo "== braid-run -n 2 braid-bench overlap --buckets 4,auto --steps 5"
./build/bin/braid-run -n 2 ./build/bin/braid-bench overlap --buckets 4,auto --steps 5
