#!/usr/bin/env bash
# ZeRO++ across a slow link: two emulated hosts (network namespaces joined by a veth pair shaped
# with tc's token bucket to RATE, default 1gbit, each direction; the set-up of bench/slow_link.sh
# under its own names, so both can run), RANKS_PER_HOST ranks each (default 1: every byte of
# ZeRO's collectives crosses the link), braid-train --zero 1 with --zero-pp none, qwz, qgz,
# qwz,qgz: samples/s, communication share, wire bytes per step. Needs root (ip netns, tc).
# Usage: bench/zero/zeropp_slow_link.sh [RATE=1gbit] [ROUNDS=1] [BUILD=build]
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${1:-1gbit} rounds=${2:-1} bin=${3:-build}/bin
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "zeropp_slow_link: skipped (needs root, ip and tc to build network namespaces)"
  exit 0
fi
prefix=braidzpp
export NETNS_PREFIX=$prefix RANKS_PER_HOST=${RANKS_PER_HOST:-1}
addr0=10.78.0.1 addr1=10.78.0.2
work=""
source bench/shaped_link.sh
cleanup() { shaped_link_down $prefix; [ -z "$work" ] || rm -rf "$work"; }
cleanup  # a namespace left by an interrupted run
work=$(mktemp -d)
trap cleanup EXIT
shaped_link_up $prefix $addr0 $addr1 "$rate"
lscpu | grep "Model name"
world=$((2 * RANKS_PER_HOST))
echo "zeropp_slow_link: $(date -u +%F), 2 hosts x $RANKS_PER_HOST ranks, link $rate (tbf), MLP, 1 epoch of 12,800 images"
for r in $(seq "$rounds"); do
  for pp in none qwz qgz qwz,qgz; do
    extra=(); [[ $pp != none ]] && extra=(--zero-pp "$pp")
    timeout 900 "$bin/braid-run" -n "$world" --master-addr $addr0 --master-port 29631 bench/netns_rank.sh \
      "$bin/braid-train" --model mlp --epochs 1 --train-samples 12800 --test-samples 256 --batch 128 --zero 1 \
      --quiet --seed 5 --json "$work/$pp.$r.json" "${extra[@]}" > "$work/$pp.$r.log" 2>&1 ||
      { echo "  $pp failed:" >&2; tail -5 "$work/$pp.$r.log" >&2; }
  done
done
/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
print(f"{'zero-pp':>8} {'samples/s':>10} {'vs ZeRO':>8} {'comm %':>7} {'wire MB/step':>12}")
base = None
for pp in ("none", "qwz", "qgz", "qwz,qgz"):
    ds = [json.load(open(f"{work}/{pp}.{r}.json")) for r in range(1, rounds + 1)]
    sps = statistics.median(d["epochs"][-1]["samples_per_second"] for d in ds)
    e = ds[0]["epochs"][-1]
    if base is None: base = sps
    print(f"{pp:>8} {sps:10.1f} {sps / base:8.2f} {100 * e['communication_share']:7.1f} {e['wire_bytes'] / e['steps'] / 1e6:12.3f}")
PY
