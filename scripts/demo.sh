#!/usr/bin/env bash
# The main job: set up, build, and run a 4-rank allreduce benchmark on this host with every
# result checked (#wrong must be 0), then the point-to-point ping-pong between two ranks.
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
