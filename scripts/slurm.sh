#!/usr/bin/env bash
# A private one-node Slurm on this machine, for braid's Slurm tests and for trying the recipes
# of docs/multinode.md#slurm (Debian's slurm-wlm and munge; scripts/setup.sh installs them):
#
#   scripts/slurm.sh start DIR   # munged (unless one runs), slurmctld and slurmd; config in DIR
#   SLURM_CONF=DIR/slurm.conf srun -n 4 build/bin/braid-bench allreduce
#   scripts/slurm.sh stop DIR    # stops what start started, removes DIR
#
# The node declares 8 CPUs whatever the machine has (ranks outnumber cores in braid's tests) and
# the partition oversubscribes, so several steps may share it. Ports are chosen free at start.
# Needs root (slurmd starts tasks as their user); exits 77 (skipped) without it.
set -euo pipefail
action=${1:-} dir=${2:-}
die() { echo "slurm.sh: $*" >&2; exit 1; }
[[ ($action == start || $action == stop) && -n $dir ]] || die "usage: $0 start|stop DIR"

stop() {
  for daemon in slurmd slurmctld; do
    if [[ -f $dir/$daemon.pid ]]; then
      pid=$(cat "$dir/$daemon.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  if [[ -f $dir/munged.started ]]; then
    pkill -u munge -x munged 2>/dev/null || true
  fi
  rm -rf "$dir"
}

if [[ $action == stop ]]; then
  [[ -d $dir ]] && stop
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "slurm.sh: skipped: a private Slurm needs root (slurmd starts the tasks)"
  exit 77
fi
for tool in slurmctld slurmd srun sbatch sinfo munged munge; do
  command -v "$tool" >/dev/null || die "$tool not found: install Debian's slurm-wlm and munge (scripts/setup.sh does)"
done
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
dir=$(cd "$dir" && pwd)

# munge authenticates srun to the daemons; the package created its key at install.
if ! munge -n </dev/null >/dev/null 2>&1; then
  [[ -f /etc/munge/munge.key ]] || { mungekey --create >/dev/null 2>&1 || die "cannot create /etc/munge/munge.key"; }
  chown munge:munge /etc/munge/munge.key 2>/dev/null || true
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  runuser -u munge -- /usr/sbin/munged || die "munged did not start (see /var/log/munge/munged.log)"
  touch "$dir/munged.started"
  for _ in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
fi

free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
host=$(hostname)
cat >"$dir/slurm.conf" <<CONF
ClusterName=braid
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=8 RealMemory=4000 State=UNKNOWN
PartitionName=braid Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" || die "slurmctld did not start (see $dir/log/slurmctld.log)"
slurmd -f "$SLURM_CONF" || die "slurmd did not start (see $dir/log/slurmd.log)"
for _ in $(seq 100); do
  [[ $(sinfo -h -o %t 2>/dev/null) == idle ]] && { echo "slurm.sh: node $host idle; SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.2
done
tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
die "the node did not come up within 20 s"
