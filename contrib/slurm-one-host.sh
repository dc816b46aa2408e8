#!/bin/sh
#
# A Slurm cluster on this host, from Debian's packages (slurmctld, slurmd,
# slurm-client, munge), for running qpx jobs the way a scheduler launches
# them. Everything lives in one directory, listens on loopback only, and
# leaves the host's own Slurm and munge configuration alone.
#
#   contrib/slurm-one-host.sh start [DIR]   start munged, slurmctld, slurmd
#   contrib/slurm-one-host.sh env [DIR]     print the export lines for
#                                           sbatch/srun/sinfo (SLURM_CONF)
#   contrib/slurm-one-host.sh stop [DIR]    stop them, remove DIR
#
# DIR defaults to /tmp/qpx-slurm. Ports: SLURMCTLD_PORT (default 16817),
# SLURMD_PORT (16818). Root is needed (the daemons run as root).
#
set -eu

cmd=${1:-}
dir=${2:-/tmp/qpx-slurm}
ctld_port=${SLURMCTLD_PORT:-16817}
slurmd_port=${SLURMD_PORT:-16818}
node=qpxnode
cpus=$(nproc)

say() { echo "slurm-one-host: $*" >&2; }

need() {
    for p in munged slurmctld slurmd sbatch srun; do
        command -v "$p" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
        command -v "$p" >/dev/null 2>&1 ||
            { say "$p not found (apt-get install slurmctld slurmd slurm-client munge)"; exit 2; }
    done
}

write_conf() {
    cat >"$dir/slurm.conf" <<EOF
# one-host cluster for qpx (contrib/slurm-one-host.sh)
ClusterName=qpx
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$node NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
}

start() {
    need
    [ "$(id -u)" = 0 ] || { say "run as root"; exit 2; }
    if [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
        say "already running in $dir"; return 0
    fi
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
    chmod 700 "$dir/munge"
    # munge: a key of this cluster only, its own socket
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$dir/munge/munge.key"
    /usr/sbin/munged --force --key-file="$dir/munge/munge.key" \
        --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
        --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
    write_conf
    export SLURM_CONF=$dir/slurm.conf
    /usr/sbin/slurmctld -f "$SLURM_CONF"
    /usr/sbin/slurmd -f "$SLURM_CONF" -N "$node"
    # ready when the node is idle
    i=0
    while [ $i -lt 60 ]; do
        state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
        case "$state" in
        idle*) say "up in $dir: node $node ($cpus CPUs), partition debug"; return 0 ;;
        esac
        sleep 0.5
        i=$((i + 1))
    done
    say "node $node not idle (state '$state'); logs in $dir"
    tail -n 5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
    return 1
}

stop() {
    for f in slurmd.pid slurmctld.pid munge/munged.pid; do
        [ -f "$dir/$f" ] && kill "$(cat "$dir/$f")" 2>/dev/null || true
    done
    sleep 1
    for f in slurmd.pid slurmctld.pid munge/munged.pid; do
        [ -f "$dir/$f" ] && kill -9 "$(cat "$dir/$f")" 2>/dev/null || true
    done
    rm -rf "$dir"
}

case "$cmd" in
start) start ;;
stop)  stop ;;
env)   echo "export SLURM_CONF=$dir/slurm.conf" ;;
*)     sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
