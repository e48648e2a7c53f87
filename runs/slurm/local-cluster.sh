#!/usr/bin/env bash
# runs/slurm/local-cluster.sh — a real one-node Slurm cluster on this machine,
# for tests and for trying the scripts here (Debian's slurm-wlm and munge; root).
#   runs/slurm/local-cluster.sh start DIR   writes DIR/slurm.conf, starts munged
#                                           (if not running), slurmctld and slurmd,
#                                           waits until the node is idle; prints
#                                           `export SLURM_CONF=DIR/slurm.conf`
#   runs/slurm/local-cluster.sh stop DIR    stops what start started (by pid file)
# No GPUs are declared (no GRES): the scheduling and shard flow are what it tests.
set -euo pipefail
cmd=${1:?start|stop}
dir=$(mkdir -p "${2:?DIR}" && cd "$2" && pwd)
conf=$dir/slurm.conf

stop_pidfile() {
  local f=$1
  [ -f "$f" ] || return 0
  local pid
  pid=$(cat "$f")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

if [ "$cmd" = stop ]; then
  stop_pidfile "$dir/slurmd.pid"
  stop_pidfile "$dir/slurmctld.pid"
  if [ -f "$dir/munged.started" ]; then stop_pidfile "$(cat "$dir/munged.started")"; rm -f "$dir/munged.started"; fi
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
for p in slurmctld slurmd sbatch munged; do
  command -v $p >/dev/null || { echo "local-cluster: $p not found (apt-get install slurm-wlm munge)" >&2; exit 3; }
done
[ "$(id -u)" -eq 0 ] || { echo "local-cluster: needs root (munged and slurmd as root)" >&2; exit 3; }

# munge: one key, one daemon; reuse a running one.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  fi
  chown munge:munge /etc/munge/munge.key 2>/dev/null || true
  chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
  munged --force >"$dir/munged.out" 2>&1 || true
  echo /run/munge/munged.pid >"$dir/munged.started"
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null || { echo "local-cluster: munge does not work" >&2; cat "$dir/munged.out" >&2; exit 1; }
fi

host=$(hostname -s)
base=$((20000 + ($$ % 2000) * 2))
mkdir -p "$dir/state" "$dir/spool"
cat >"$conf" <<CONF
ClusterName=tessera-test
SlurmctldHost=$host
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
InactiveLimit=0
KillWait=5
NodeName=$host CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$conf
slurmctld -f "$conf"
slurmd -f "$conf"
for _ in $(seq 120); do
  state=$(sinfo -h -o %T 2>/dev/null || true)
  case "$state" in idle*) echo "export SLURM_CONF=$conf"; exit 0 ;; esac
  sleep 0.25
done
echo "local-cluster: the node did not become idle (state '${state:-?}'); logs in $dir" >&2
tail -5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
exit 1
