#!/usr/bin/env bash
# TCP striping across emulated hosts (docs/performance.md, "TCP striping"): 2 hosts x 2 ranks,
# network namespaces striping0/striping1 joined by a veth pair shaped by tc's token bucket to
# each RATE (default "1gbit 10gbit") in both directions. For each rate, REPEATS rounds
# (default 3), each running in turn:
#   - braid-bench allreduce and alltoall at SIZE (default 16M) with BRAID_TCP_STREAMS in STREAMS
#     (default "1 2 4"), one braid-run whose ranks enter their host's namespace (netns_rank.sh);
#   - the other allreduce algorithms across hosts (--algo ring, hierarchical) at one stream,
#     to check the tuner's choice (host_striped at this size on 2 hosts: the s1 run);
#   - Open MPI's MPI_Allreduce / MPI_Alltoall over its tcp BTL (braid-mpi-collectives, mpirun
#     in striping0 reaching striping1 through tests/mpi/netns_agent.sh, vader inside a host);
#   - Gloo's ring allreduce (braid-gloo-allreduce, each rank bound to its host's address), and
#     PyTorch's gloo backend alltoall (bench/python/gloo_alltoall.py, each rank's Gloo on its
#     host's veth; /usr/bin/python3 with torch, skipped without).
# It prints per (rate, op) the median time, busbw (nccl-tests' factors), the share of the
# link-rate bound, the ratio to MPI and Gloo, and the CPU seconds (user + system, all ranks
# and their launcher; not for mpirun, whose ranks run under daemons time cannot see) per GB
# of payload (every call of the run: warm-up, timed, checking). The bound: each host must send SIZE bytes over the link per allreduce
# (half of its reduced sum, then half of the result) and SIZE bytes per alltoall (each of its
# 2 ranks sends half of its SIZE to the other host), so t_bound = SIZE / RATE.
# Needs root (ip netns, tc); prints "skipped" and exits 0 without.
#
# Usage: bench/tcp_striping.sh [--rates "1gbit 10gbit"] [--size 16M] [--streams "1 2 4"]
# Environment: BUILD_DIR (build), REPEATS (3), ITERS (3 calls per timed batch), RUN_TIMEOUT (300 per run), KEEP_DIR, BURST
#   (tbf burst, default 1mb: 256kb starves a 10 Gbit/s bucket between timer ticks).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
bin=$build/bin
rates="1gbit 10gbit" size=16M streams_list="1 2 4"
while [ $# -gt 0 ]; do
  case "$1" in
    --rates) rates=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --streams) streams_list=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "tcp_striping: skipped (needs root, ip and tc to build network namespaces)"
  exit 0
fi
for tool in braid-run braid-bench; do
  [ -x "$bin/$tool" ] || { echo "no $bin/$tool" >&2; exit 1; }
done
repeats=${REPEATS:-3} run_timeout=${RUN_TIMEOUT:-300}
# The same calls for every tool, so CPU per GB compares. ITERS calls per timed batch (3): at
# 10 Gbit/s the first calls of a run (connections warming, buffers faulted in) weigh on 3.
iters=(-n "${ITERS:-3}" -w 1 --repeats 3)
prefix=striping
export NETNS_PREFIX=$prefix RANKS_PER_HOST=2 SHAPED_BURST=${BURST:-1mb}
source bench/shaped_link.sh
work=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$work"
cleanup() { shaped_link_down $prefix; rm -rf "/tmp/$prefix-gloo"; }
trap 'cleanup; [ -n "${KEEP_DIR:-}" ] || rm -rf "$work"' EXIT
cleanup
export BRAID_JOB_TOKEN=${BRAID_JOB_TOKEN:-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')}
hostfile=$work/hosts
printf '%s0 slots=2\n%s1 slots=2\n' $prefix $prefix > "$hostfile"

# timed NAME CMD...: runs CMD, appends "NAME time_us cpu_s" to $work/results (time: the
# tool's reported median per call at SIZE; cpu: user + system of CMD and everything it waited for).
timed() {
  local name=$1; shift
  local out=$work/$name.$round.log cpu
  cpu=$( { /usr/bin/time -f '%U %S' -o "$work/time" timeout "$run_timeout" "$@" > "$out" 2>&1 || echo "# failed: exit $?" >> "$out"; } ; awk '{ print $1 + $2 }' "$work/time" | tail -1)
  local t
  t=$(awk '/^ *[0-9]/ && NF >= 8 { t = $5; w = $8 } END { if (w != 0) t = "wrong"; print t }' "$out")
  [ -n "$t" ] || { t=failed; echo "  $name failed: $(tail -2 "$out" | tr '\n' ' ')" >&2; }
  echo "$rate $name $t $cpu" >> "$work/results"
}
braid() {  # NAME STREAMS OP ARGS...
  local name=$1 streams=$2 op=$3; shift 3
  timed "$name" env BRAID_TCP_STREAMS="$streams" "$bin/braid-run" --no-prefix -n 4 --master-addr 10.77.0.1 \
    --master-port 29671 bench/netns_rank.sh "$bin/braid-bench" "$op" -b "$size" -e "$size" "${iters[@]}" "$@"
}
mpi() {  # NAME OP
  timed "$1" ip netns exec ${prefix}0 mpirun --allow-run-as-root --oversubscribe -np 4 --hostfile "$hostfile" \
    --mca plm_rsh_agent "$PWD/tests/mpi/netns_agent.sh" --mca oob_tcp_if_include 10.77.0.0/24 \
    --mca btl tcp,self,vader --mca btl_tcp_if_include 10.77.0.0/24 \
    "$bin/braid-mpi-collectives" "$2" -b "$size" -e "$size" "${iters[@]}"
}
gloo() {  # NAME
  mkdir -p "/tmp/$prefix-gloo"
  timed "$1" "$bin/braid-run" --no-prefix -n 4 --master-addr 10.77.0.1 --master-port 29672 /bin/sh -c \
    'BRAID_GLOO_ADDR=10.77.0.$((BRAID_RANK / 2 + 1)) exec bench/netns_rank.sh "$@"' sh \
    "$bin/braid-gloo-allreduce" ring -b "$size" -e "$size" "${iters[@]}" --store "/tmp/$prefix-gloo"
}
gloo_alltoall() {  # NAME
  timed "$1" "$bin/braid-run" --no-prefix -n 4 --master-addr 10.77.0.1 --master-port 29672 /bin/sh -c \
    'GLOO_SOCKET_IFNAME='$prefix'v$((BRAID_RANK / 2)) exec bench/netns_rank.sh "$@"' sh \
    /usr/bin/python3 bench/python/gloo_alltoall.py -b "$size" -n "${ITERS:-3}" -w 1 --repeats 3 \
    --init tcp://10.77.0.1:29673
}

echo "tcp_striping: $(date -u '+%F %T') UTC, $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs," \
     "load: $(uptime | sed 's/.*load average: //'), size $size, $repeats rounds"
have_mpi=0 have_gloo=0
[ -x "$bin/braid-mpi-collectives" ] && command -v mpirun >/dev/null && have_mpi=1
[ -x "$bin/braid-gloo-allreduce" ] && have_gloo=1
have_torch=0
/usr/bin/python3 -c 'import torch' 2>/dev/null && have_torch=1
: > "$work/results"
for rate in $rates; do
  shaped_link_up $prefix 10.77.0.1 10.77.0.2 "$rate"
  for round in $(seq "$repeats"); do
    for s in $streams_list; do
      braid "braid-allreduce-s$s" "$s" allreduce
      braid "braid-alltoall-s$s" "$s" alltoall
    done
    for algo in ring hierarchical; do braid "algo-$algo" 1 allreduce --algo "$algo"; done
    if [ $have_mpi = 1 ]; then mpi mpi-allreduce allreduce; mpi mpi-alltoall alltoall; fi
    if [ $have_gloo = 1 ]; then gloo gloo-allreduce; fi
    if [ $have_torch = 1 ]; then gloo_alltoall gloo-alltoall; fi
  done
  shaped_link_down $prefix
done
echo "load after: $(uptime | sed 's/.*load average: //')"

/usr/bin/python3 - "$work/results" "$size" "$streams_list" "${ITERS:-3}" <<'PY'
import statistics, sys
from collections import defaultdict
path, size_arg, streams, iters = sys.argv[1], sys.argv[2], sys.argv[3].split(), int(sys.argv[4])
units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
size = int(size_arg[:-1]) * units[size_arg[-1]] if size_arg[-1] in units else int(size_arg)
rows = defaultdict(lambda: ([], []))
rates = []
for line in open(path):
    rate, name, t, cpu = line.split()
    if rate not in rates: rates.append(rate)
    if t not in ("failed", "wrong"): rows[rate, name][0].append(float(t))
    rows[rate, name][1].append(float(cpu))
def rate_bytes(r):
    return float(r[:-4]) * (1e9 if r.endswith("gbit") else 1e6) / 8
n = 4
factor = {"allreduce": 2 * (n - 1) / n, "alltoall": (n - 1) / n}
calls = 1 + 3 * iters + 1  # warm-up, timed batches, the checking call
for rate in rates:
    bound_us = size / rate_bytes(rate) * 1e6
    for op in ("allreduce", "alltoall"):
        names = [f"braid-{op}-s{s}" for s in streams] + ([f"algo-{a}" for a in ("ring", "hierarchical")] if op == "allreduce" else []) + [f"mpi-{op}", f"gloo-{op}"]
        med = {k: statistics.median(rows[rate, k][0]) for k in names if rows[rate, k][0]}
        print(f"\n# {op}, 2 hosts x 2 ranks, link {rate} (tbf), {size_arg}: bound {bound_us / 1e3:.1f} ms (busbw {factor[op] * size / bound_us / 1e3:.3f} GB/s)")
        print(f"# {'run':<22} {'time(ms)':>9} {'busbw':>7} {'%bound':>7} {'x mpi':>6} {'x gloo':>6} {'cpu s/GB':>8} {'runs':>5}")
        for k in names:
            if k not in med:
                print(f"  {k:<22} {'failed':>9}"); continue
            t = med[k]
            bus = factor[op] * size / t / 1e3
            vs = lambda peer: f"{med[peer] / t:6.2f}" if peer in med else f"{'-':>6}"
            # mpirun's ranks run under its daemons, which /usr/bin/time does not see: no CPU figure.
            cpu = f"{statistics.median(rows[rate, k][1]) / (calls * size / 1e9):8.2f}" if not k.startswith("mpi") else f"{'-':>8}"
            print(f"  {k:<22} {t / 1e3:9.1f} {bus:7.3f} {100 * bound_us / t:7.1f} {vs('mpi-' + op)} {vs('gloo-' + op)} {cpu} {len(rows[rate, k][0]):5d}")
PY
