#!/usr/bin/env bash
# The straggler effect (issue 23; docs/performance.md#the-straggler-effect-one-bad-link): the
# time of a fixed-size allreduce loop, standing in for a training step's gradient sync, when
# ONE host's link loses 1% of its packets or carries +5 ms each way, against every link clean.
# Emulated hosts: network namespaces on one bridge (a "switch" namespace), every link shaped to
# RATE both ways (tbf); loss by bench/link_conditions.sh (a BPF filter: this kernel has no
# sch_netem), delay by braid-link-relay spliced into the bad host's switch port. Layouts
# HOSTSxRANKS (default 2x1 4x1 2x2); rounds alternate clean / loss / delay, ROUNDS times, and
# the medians are printed with the amplification (bad / clean). --train: a short braid-train
# (MLP, STEPS steps of 128 samples, ms per step) instead of the allreduce loop. Needs root;
# prints "skipped" and exits 0 without.
#
# Usage: bench/straggler.sh [--rate 1gbit] [--rounds 5] [--layouts "2x1 4x1 2x2"]
#                           [-b 64K] [-e 64M] [-f 4] [--iters 3] [--train [--steps 20]]
# Environment: BUILD_DIR (build), KEEP_DIR (keep the raw logs), RUN_TIMEOUT (300 s a run).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
rate=1gbit rounds=5 layouts="2x1 4x1 2x2" first=64K last=64M factor=4 iters=3 train=0 steps=20
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    -b) first=$2; shift 2 ;;
    -e) last=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --train) train=1; shift ;;
    --steps) steps=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "straggler: skipped (needs root, ip and tc to build network namespaces)"
  exit 0
fi
tools=("$build/bin/braid-run" "$build/bin/braid-bench" "$build/tests/braid-link-relay")
[ "$train" -eq 0 ] || tools+=("$build/bin/braid-train")
for tool in "${tools[@]}"; do
  [ -x "$tool" ] || { echo "no $tool: ninja -C $build braid-run braid-bench braid-link-relay" >&2; exit 1; }
done
source bench/link_conditions.sh
prefix=braidstr sw=braidstrsw bad=1  # host 1 has the bad link (host 0 holds rank 0's store)
work=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$work"
relay_pid=

hosts_down() {
  [ -n "$relay_pid" ] && kill "$relay_pid" 2>/dev/null && wait "$relay_pid" 2>/dev/null || true
  relay_pid=
  local h
  for h in 0 1 2 3 4 5 6 7; do ip netns del $prefix$h 2>/dev/null || true; done
  ip netns del $sw 2>/dev/null || true
}
trap 'hosts_down; [ -n "${KEEP_DIR:-}" ] || rm -rf "$work"' EXIT

hosts_up() {  # HOSTS: host h at 10.79.0.(h+1) on bridge br0 of the switch namespace
  local h
  ip netns add $sw
  ip -n $sw link add br0 type bridge
  ip -n $sw link set br0 up
  for ((h = 0; h < $1; h++)); do
    ip netns add $prefix$h
    ip link add ${prefix}v$h type veth peer name ${prefix}s$h
    ip link set ${prefix}v$h netns $prefix$h
    ip link set ${prefix}s$h netns $sw
    ip -n $sw link set ${prefix}s$h master br0 up
    ip -n $prefix$h link set lo up
    ip -n $prefix$h addr add 10.79.0.$((h + 1))/24 dev ${prefix}v$h
    ip -n $prefix$h link set ${prefix}v$h up
    link_rate $prefix$h ${prefix}v$h "$rate"
    link_rate $sw ${prefix}s$h "$rate"
  done
}

# +5 ms each way on host $bad's link: its switch port leaves the bridge, and the relay
# forwards between it and a fresh veth pair whose other end takes its place on the bridge.
delay_on() {
  ip -n $sw link set ${prefix}s$bad nomaster
  ip -n $sw link add ${prefix}d$bad type veth peer name ${prefix}e$bad
  ip -n $sw link set ${prefix}e$bad master br0 up
  ip -n $sw link set ${prefix}d$bad up
  ip netns exec $sw "$build"/tests/braid-link-relay ${prefix}s$bad ${prefix}d$bad 5 0 2>> "$work/relay.log" &
  relay_pid=$!
  sleep 0.2
}
delay_off() {
  kill "$relay_pid"; wait "$relay_pid" 2>/dev/null || true
  relay_pid=
  ip -n $sw link del ${prefix}d$bad
  ip -n $sw link set ${prefix}s$bad master br0
}

# run LAYOUT CONDITION ROUND: one braid-bench allreduce (or braid-train), its "size time(us)"
# rows appended to $work/times as "LAYOUT CONDITION SIZE US" (braid-train: size 0, us per step).
run() {
  local hosts=${1%x*} per_host=${1#*x} log="$work/$1.$2.$3.log" program
  if [ "$train" -eq 1 ]; then
    program=("$build"/bin/braid-train --model mlp --steps "$steps" --batch 128 --train-samples $((steps * 128))
             --test-samples 64 --threads 1 --quiet --json "$work/$1.$2.$3.json")
  else
    program=("$build"/bin/braid-bench allreduce -b "$first" -e "$last" -f "$factor" -n "$iters" -w 1 --repeats 1)
  fi
  NETNS_PREFIX=$prefix RANKS_PER_HOST=$per_host timeout "${RUN_TIMEOUT:-300}" "$build"/bin/braid-run \
    -n $((hosts * per_host)) --master-addr 10.79.0.1 --master-port 29661 bench/netns_rank.sh "${program[@]}" \
    > "$log" 2>&1 || { echo "  $1 $2 round $3 failed:" >&2; tail -5 "$log" >&2; return 0; }
  if [ "$train" -eq 1 ]; then
    /usr/bin/python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["epochs"][-1]
print(sys.argv[2], sys.argv[3], 0, 1e6 * e["step_seconds"] / e["steps"])' "$work/$1.$2.$3.json" "$1" "$2" >> "$work/times"
  else
    awk -v l="$1" -v c="$2" '$1 == "[0]" && $2 ~ /^[0-9]+$/ && NF >= 9 { print l, c, $2, $6 }' "$log" >> "$work/times"
  fi
}

echo "straggler: $(date -u +%F), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores," \
     "links $rate (tbf), one bad link (host $bad), $rounds alternating rounds," \
     "$([ "$train" -eq 1 ] && echo "braid-train mlp, $steps steps a run" || echo "$iters timed iterations a run")"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$work/times"
for layout in $layouts; do
  hosts_down
  hosts_up "${layout%x*}"
  for ((round = 1; round <= rounds; round++)); do
    run "$layout" clean $round
    link_loss $prefix$bad ${prefix}v$bad 1
    run "$layout" loss1% $round
    link_clear $prefix$bad ${prefix}v$bad
    link_rate $prefix$bad ${prefix}v$bad "$rate"
    delay_on
    run "$layout" delay5ms $round
    delay_off
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
/usr/bin/python3 - "$work/times" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    layout, cond, size, us = line.split()
    rows[(layout, int(size), cond)].append(float(us))
print(f"{'hosts x ranks':<14} {'size':>6} {'clean ms':>9} {'loss 1%':>9} {'x':>6} {'+5 ms':>9} {'x':>6}  runs")
for layout, size in sorted({(l, s) for l, s, _ in rows}, key=lambda k: (k[0], k[1])):
    med = {c: statistics.median(rows[(layout, size, c)]) / 1e3 for c in ("clean", "loss1%", "delay5ms")
           if rows.get((layout, size, c))}
    n = min(len(rows.get((layout, size, c), [])) for c in ("clean", "loss1%", "delay5ms"))
    clean = med.get("clean", float("nan"))
    fmt = lambda c: (f"{med[c]:9.2f} {med[c] / clean:6.2f}" if c in med else f"{'-':>9} {'-':>6}")
    name = "train" if size == 0 else (f"{size >> 20}Mi" if size >= 1 << 20 else f"{size >> 10}Ki")
    print(f"{layout:<14} {name:>6} {clean:9.2f} {fmt('loss1%')} {fmt('delay5ms')}  {n}")
PY
