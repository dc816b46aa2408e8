#!/bin/sh
#
# A cluster of N hosts on this machine, for running qpx jobs across hosts:
# each host is a network namespace (qpx-h1 .. qpx-hN) joined by a veth to
# a bridge (qpxbr0, 10.77.0.1/24; host i is 10.77.0.(10+i)), with its own
# hostname (h1 .. hN, a UTS namespace per process started there) and its
# own softverbs HCA: all hosts share one softverbs registry, host i owns
# device slot i-1 (SOFTVERBS_FIRST_DEVICE=h1=0,h2=1,...) and names it
# softverbs0, its port's LID unique on the fabric. Open MPI's mpirun
# starts ranks there through an rsh agent of this script's.
#
#   contrib/cluster-one-host.sh start N [DIR]   make the hosts (N = 2..8)
#   contrib/cluster-one-host.sh slurm [DIR]     a Slurm cluster over them:
#                                               slurmctld here, one slurmd
#                                               per host (munge of its own)
#   contrib/cluster-one-host.sh env [DIR]       the export lines for a job
#                                               (mpirun: $QPX_CLUSTER_MPIRUN;
#                                               srun: SLURM_CONF)
#   contrib/cluster-one-host.sh on HOST CMD...  run CMD on host HOST
#   contrib/cluster-one-host.sh stop [DIR]      kill what runs there, remove
#                                               namespaces, bridge and DIR
#
# DIR defaults to /tmp/qpx-cluster. Root is needed (namespaces, veth).
# Nothing outside this machine is touched; stop removes everything start
# made. The ports are InfiniBand; a job run with SOFTVERBS_LINK_LAYER=ethernet
# (exported to its ranks, e.g. mpirun -x) sees RoCE ports whose GID tables
# carry each host's own address. librdmacm resolves and connects across the
# hosts by their addresses (SOFTVERBS_SOCKET_DIR, which env sets). A job
# run with SOFTVERBS_WIRE_DELAY / SOFTVERBS_WIRE_LOSS (exported to its
# ranks) sees the hosts that far apart and that lossy; A-B= items name a
# pair of hosts by their slots (h1 is 0).
#
set -eu

cmd=${1:-}
BR=qpxbr0
NET=10.77.0

say() { echo "cluster-one-host: $*" >&2; }

dir_of() { echo "${1:-/tmp/qpx-cluster}"; }

hosts_of() { cat "$1/hosts" 2>/dev/null || true; }

start() {
    n=$1 dir=$(dir_of "${2:-}")
    [ "$(id -u)" = 0 ] || { say "run as root"; exit 2; }
    case "$n" in
    [2-8]) ;;
    *) say "N must be 2..8 (softverbs has 8 device slots)"; exit 2 ;;
    esac
    for p in ip unshare nsenter; do
        command -v "$p" >/dev/null 2>&1 || { say "$p not found (iproute2, util-linux)"; exit 2; }
    done
    if [ -d "$dir" ]; then
        say "$dir exists: stop first"; exit 2
    fi
    mkdir -p "$dir/sock"
    ip link add "$BR" type bridge
    ip addr add "$NET.1/24" dev "$BR"
    ip link set "$BR" up
    map=""
    i=1
    while [ $i -le "$n" ]; do
        h=h$i
        ip netns add "qpx-$h"
        ip link add "qpxv$i" type veth peer name eth0 netns "qpx-$h"
        ip link set "qpxv$i" master "$BR" up
        ip netns exec "qpx-$h" ip addr add "$NET.$((10 + i))/24" dev eth0
        ip netns exec "qpx-$h" ip link set eth0 up
        ip netns exec "qpx-$h" ip link set lo up
        echo "$h" >>"$dir/hosts"
        echo "$h slots=8" >>"$dir/hostfile"
        map="$map${map:+,}$h=$((i - 1))"
        i=$((i + 1))
    done
    echo "$map" >"$dir/slots"
    # the rsh agent of mpirun: "rsh HOST COMMAND..." runs COMMAND there
    cat >"$dir/rsh" <<EOF
#!/bin/sh
# mpirun's rsh agent for the hosts of $dir (cluster-one-host.sh)
while [ \$# -gt 0 ]; do
    case "\$1" in -*) shift ;; *) break ;; esac
done
h=\$1; shift
exec sh "$(cd "$(dirname "$0")" && pwd)/cluster-one-host.sh" on "\$h" "\$*"
EOF
    chmod +x "$dir/rsh"
    # every host's link up
    for h in $(hosts_of "$dir"); do
        st=$(ip netns exec "qpx-$h" cat /sys/class/net/eth0/operstate)
        [ "$st" = up ] || { say "host $h: eth0 is $st"; exit 1; }
    done
    say "up: $n hosts ($(hosts_of "$dir" | tr '\n' ' ')) in $dir; bridge $BR $NET.1/24"
}

# on HOST CMD...: CMD (one shell command line, or a program and its
# arguments) in HOST's network namespace, with HOST as the hostname
on() {
    h=$1; shift
    dir=$(dir_of "${QPX_CLUSTER_DIR:-}")
    ip netns list | grep -qw "qpx-$h" || { say "no host $h"; exit 2; }
    [ $# -eq 1 ] && set -- sh -c "$1"
    # nsenter, not ip netns exec: that one mounts a sysfs of its own, which
    # lacks /sys/fs/cgroup (slurmd will not start without it)
    exec nsenter --net="/run/netns/qpx-$h" unshare --uts \
        sh -c 'hostname "$0" && exec "$@"' "$h" "$@"
}

# Slurm: slurmctld on the bridge address, one slurmd per host, started in
# the host (its hostname, its address); munge with a key of this cluster
# only, on a socket of its own; ports 16817/16818 (SLURMCTLD_PORT,
# SLURMD_PORT)
slurm() {
    dir=$(dir_of "${1:-}")
    [ -f "$dir/hosts" ] || { say "no cluster in $dir"; exit 2; }
    PATH=$PATH:/usr/sbin
    for p in munged slurmctld slurmd srun sinfo; do
        command -v "$p" >/dev/null 2>&1 ||
            { say "$p not found (apt-get install slurmctld slurmd slurm-client munge)"; exit 2; }
    done
    n=$(wc -l <"$dir/hosts")
    cpus=$(nproc)
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
    chmod 700 "$dir/munge"
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" \
        --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
        --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
    {
        echo "# $n hosts on one machine (contrib/cluster-one-host.sh)"
        echo "ClusterName=qpxcluster"
        echo "SlurmctldHost=$(hostname)($NET.1)"
        echo "SlurmctldPort=${SLURMCTLD_PORT:-16817}"
        echo "SlurmdPort=${SLURMD_PORT:-16818}"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "AuthType=auth/munge"
        echo "AuthInfo=socket=$dir/munge/munge.socket"
        echo "CredType=cred/munge"
        echo "StateSaveLocation=$dir/state"
        echo "SlurmdSpoolDir=$dir/spool/%n"
        echo "SlurmctldPidFile=$dir/slurmctld.pid"
        echo "SlurmdPidFile=$dir/slurmd.%n.pid"
        echo "SlurmctldLogFile=$dir/slurmctld.log"
        echo "SlurmdLogFile=$dir/slurmd.%n.log"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_CPU"
        echo "MpiDefault=none"
        echo "ReturnToService=2"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/none"
        for h in $(hosts_of "$dir"); do
            echo "NodeName=$h NodeHostname=$h NodeAddr=$NET.$((10 + ${h#h})) CPUs=$cpus State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=h[1-$n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE"
    } >"$dir/slurm.conf"
    # Slurm's PMIx plugin (22.05, with Debian 12's PMIx 4.2) completes a
    # fence of its tree algorithm on each node alone: a wildcard fence
    # (PMIx_Fence(NULL, 0)) on 4 hosts released every host as soon as its
    # own ranks had entered (the slurmd logs show each node as the tree's
    # root with no children). Its ring algorithm waits for every node.
    # Open MPI's MPI_Finalize and its pml ucx rely on that fence: without
    # it a host's ranks left and destroyed their endpoints while the ranks
    # of other hosts still flushed to them (qpx_dc's DCIs then retried
    # until their timeout, and an endpoint error without a handler aborted
    # the job). Sites running Open MPI under srun need the same setting.
    echo "PMIxCollFence=ring" >"$dir/mpi.conf"
    SLURM_CONF=$dir/slurm.conf
    export SLURM_CONF
    slurmctld -f "$SLURM_CONF"
    # a configuration per host that differs in TmpFS only: PMIx makes its
    # client directories there by step name, and the hosts share /tmp
    for h in $(hosts_of "$dir"); do
        mkdir -p "$dir/spool/$h" "$dir/tmp/$h"
        sed "s|^ClusterName=|TmpFS=$dir/tmp/$h\nClusterName=|" "$SLURM_CONF" \
            >"$dir/slurm.$h.conf"
        sh "$0" on "$h" "exec slurmd -f $dir/slurm.$h.conf -N $h" </dev/null >/dev/null 2>&1
    done
    i=0
    while [ $i -lt 120 ]; do
        idle=$(sinfo -h -o '%T %D' 2>/dev/null | awk '$1 ~ /^idle/ {s += $2} END {print s + 0}')
        [ "$idle" = "$n" ] && { say "slurm: $n nodes idle (partition debug)"; return 0; }
        sleep 0.5
        i=$((i + 1))
    done
    say "slurm: $idle of $n nodes idle; logs in $dir"
    tail -n 5 "$dir"/slurmctld.log "$dir"/slurmd.*.log >&2 || true
    return 1
}

env_lines() {
    dir=$(dir_of "${1:-}")
    [ -f "$dir/slots" ] || { say "no cluster in $dir"; exit 2; }
    echo "export QPX_CLUSTER_DIR=$dir"
    echo "export SOFTVERBS_SHM=/dev/shm/$(basename "$dir")-registry"
    echo "export SOFTVERBS_SOCKET_DIR=$dir/sock"
    echo "export SOFTVERBS_FIRST_DEVICE=$(cat "$dir/slots")"
    echo "export QPX_CLUSTER_HOSTFILE=$dir/hostfile"
    [ -f "$dir/slurm.conf" ] && echo "export SLURM_CONF=$dir/slurm.conf"
    echo "export QPX_CLUSTER_MPIRUN=\"--hostfile $dir/hostfile --mca plm_rsh_agent $dir/rsh --mca oob_tcp_if_include $NET.0/24 -x SOFTVERBS_SHM -x SOFTVERBS_SOCKET_DIR -x SOFTVERBS_FIRST_DEVICE -x QPX_CLUSTER_DIR\""
}

stop() {
    dir=$(dir_of "${1:-}")
    for f in "$dir"/slurmctld.pid "$dir"/munge/munged.pid; do
        [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
    for ns in $(ip netns list 2>/dev/null | awk '/^qpx-h[0-9]/ {print $1}'); do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
    ip link del "$BR" 2>/dev/null || true
    rm -f "/dev/shm/$(basename "$dir")-registry"
    rm -rf "$dir"
    say "stopped; $dir removed"
}

case "$cmd" in
start) shift; start "${1:-4}" "${2:-}" ;;
slurm) shift; slurm "${1:-}" ;;
on)    shift; on "$@" ;;
env)   shift; env_lines "${1:-}" ;;
stop)  shift; stop "${1:-}" ;;
*)     sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
