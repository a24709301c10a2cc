#!/usr/bin/env bash
# braid-train across a slow link: two emulated hosts (network namespaces joined by a veth pair
# shaped with tc's token bucket to RATE, default 1gbit, in each direction), RANKS_PER_HOST ranks
# each (default 2: shared memory inside a host, TCP across), the shape of seeds/002's table:
# fp32 without overlap, fp16 with and without overlap, int8, sign, topk — throughput,
# communication share and test accuracy — and PyTorch DDP (gloo) plain, fp16 hook and PowerSGD
# hook over the same link. Needs root (ip netns, tc); prints "skipped" and exits 0 without.
#
# Usage: bench/slow_link.sh [--model mlp] [--epochs 1] [--train-samples 12800] [--rate 1gbit]
# Environment: BUILD_DIR (build), KEEP_DIR (keep JSON/logs), RUN_TIMEOUT (1800).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/bin
model=mlp epochs=1 train_samples=12800 rate=1gbit
run_timeout=${RUN_TIMEOUT:-1800}
ddp_timeout=${DDP_TIMEOUT:-600}  # a crashed gloo rank leaves the others waiting: bound them
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --train-samples) train_samples=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "slow_link: skipped (needs root, ip and tc to build network namespaces)"
  exit 0
fi
[ -x "$bin/braid-train" ] || { echo "no $bin/braid-train: build with LibTorch first" >&2; exit 1; }

prefix=braidslow
export NETNS_PREFIX=$prefix RANKS_PER_HOST=${RANKS_PER_HOST:-2}
addr0=10.77.0.1 addr1=10.77.0.2
source bench/shaped_link.sh
cleanup() { shaped_link_down ${prefix}; }
cleanup
trap 'cleanup; [ -n "${KEEP_DIR:-}" ] || rm -rf "$work"' EXIT
shaped_link_up ${prefix} $addr0 $addr1 "$rate"
work=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$work"
world=$((2 * RANKS_PER_HOST))
echo "slow_link: $(date -u +%F), 2 hosts x $RANKS_PER_HOST ranks, link $rate (tbf), $model, $epochs epoch(s) of $train_samples samples"

braid() {  # NAME ARGS...
  local name=$1; shift
  echo "  running braid-train $name ..." >&2
  timeout "$run_timeout" "$bin/braid-run" -n "$world" --master-addr $addr0 --master-port 29611 bench/netns_rank.sh \
    "$bin/braid-train" --model "$model" --epochs "$epochs" --train-samples "$train_samples" --batch 128 --quiet \
    --json "$work/$name.json" "$@" > "$work/$name.log" 2>&1 || { echo "  $name failed:" >&2; tail -5 "$work/$name.log" >&2; }
}
ddp() {  # NAME HOOK
  echo "  running PyTorch DDP $1 ..." >&2
  local pids=() r
  for ((r = 0; r < world; r++)); do
    BRAID_RANK=$r GLOO_SOCKET_IFNAME=${prefix}v$((r / RANKS_PER_HOST)) timeout "$ddp_timeout" bench/netns_rank.sh /usr/bin/python3 \
      bench/ddp/pytorch_ddp.py --rank $r --world $world --master-addr $addr0 --port 29612 --model "$model" \
      --hook "$2" --epochs "$epochs" --train-samples "$train_samples" --batch 128 --json "$work/$1.json" \
      > "$work/$1.rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "  $1 failed:" >&2; tail -3 "$work/$1.rank0.log" >&2; }; done
}

braid fp32-no-overlap --compress none --overlap off
braid fp32-overlap --compress none
braid fp16-no-overlap --compress fp16 --overlap off
braid fp16-overlap --compress fp16
braid int8 --compress int8
braid sign --compress sign
braid topk --compress topk:0.01
ddp ddp-plain none
ddp ddp-fp16 fp16
ddp ddp-powersgd powersgd:2

echo
/usr/bin/python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
def load(name):
    path = os.path.join(work, name + ".json")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    d = json.load(open(path))
    e = d["epochs"][-1] if isinstance(d.get("epochs"), list) else d
    return e.get("samples_per_second"), e.get("communication_share"), e.get("test_accuracy")
base = load("fp32-no-overlap")
print(f"{'run':<20} {'samples/s':>10} {'vs fp32':>8} {'comm %':>7} {'test acc':>9}")
for name in ["fp32-no-overlap", "fp32-overlap", "fp16-no-overlap", "fp16-overlap", "int8", "sign", "topk",
             "ddp-plain", "ddp-fp16", "ddp-powersgd"]:
    r = load(name)
    if r is None:
        print(f"{name:<20} {'failed':>10}")
        continue
    sps, comm, acc = r
    ratio = sps / base[0] if base else float("nan")
    comm_s = f"{100 * comm:7.1f}" if comm is not None else f"{'-':>7}"
    print(f"{name:<20} {sps:10.0f} {ratio:8.2f} {comm_s} {100 * acc:8.2f}%")
PY
