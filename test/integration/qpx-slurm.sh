#!/bin/sh
# qpx jobs launched by Slurm, as a cluster's users launch them: a one-host
# cluster from Debian's packages (contrib/slurm-one-host.sh: munged,
# slurmctld, slurmd on loopback), then, with qpx's environment set the way
# docs/running.md tells users (eval "$(qpxrun --soft --env)", carried into
# the job by Slurm's --export=ALL; the batch script does the same itself):
#  - srun -n2 --mpi=pmix of the MPI test over UCX_TLS=qpx_rc,qpx_ud (and
#    over qpx_dc alone where it is built): its results are checked;
#  - sbatch --wait of a job script that runs mpirun on 2 ranks;
#  - in each, qpx's debug log shows the job size the launcher gave it
#    (what the hybrid transport will size its defaults by).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
PATH=$PATH:/usr/sbin
for p in munged slurmctld slurmd srun sbatch mpicc; do
    command -v $p >/dev/null || qpx_skip_all "$p not installed"
done
[ "$(id -u)" = 0 ] || qpx_skip_all "the daemons need root"
mpicc -O2 -o "$TL_TMP/qpx_mpi_test" "$QPX_SRCDIR/test/integration/qpx_mpi_test.c" ||
    qpx_skip_all "mpicc failed"

cluster=$TL_TMP/slurm
export SLURMCTLD_PORT=$(qpx_free_port) SLURMD_PORT=$(qpx_free_port)
trap 'sh "$QPX_SRCDIR/contrib/slurm-one-host.sh" stop "$cluster"; rm -rf "$TL_TMP"' EXIT
if sh "$QPX_SRCDIR/contrib/slurm-one-host.sh" start "$cluster" 2>"$TL_TMP/start.log"; then
    qpx_pass "one-host cluster up: $(tail -n 1 "$TL_TMP/start.log" | sed 's/^slurm-one-host: //')"
else
    qpx_fail "cluster did not start"; cat "$TL_TMP/start.log"
    qpx_finish
fi
export SLURM_CONF=$cluster/slurm.conf
export UCX_NET_DEVICES=$QPX_DEV UCX_LOG_LEVEL=debug UCX_WARN_UNUSED_ENV_VARS=n \
       OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx OMPI_MCA_btl=self \
       OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any

# UCX's debug log goes to a file per process (UCX_LOG_FILE, %p: the pid):
# in the job's output, two ranks' buffered writes interleave at any byte,
# which split the "MPI OK" line once. collect RUN: the run's output and its
# processes' logs in one file, RUN.all, for check
collect() {
    cat "$TL_TMP/$1.out" "$TL_TMP/$1"-ucx.*.log >"$TL_TMP/$1.all" 2>/dev/null
}

# check NAME OUT LAUNCHER: the MPI test's verdict and the job size qpx saw
check() {
    if grep -q "^MPI OK" "$2"; then
        qpx_pass "$1: MPI ping-pong, put, get, accumulate, fetch_and_op"
    else
        qpx_fail "$1: no 'MPI OK'"; grep -v DEBUG "$2" | tail -n 8
    fi
    seen=$(grep -c "qpx job: launcher $3, 2 processes on 1 hosts, 2 here" "$2")
    if [ "$seen" -ge 2 ]; then
        qpx_pass "$1: both ranks' qpx log the job ($(grep -o "qpx job: launcher $3.*" "$2" | head -n 1))"
    else
        qpx_fail "$1: $seen rank(s) logged 'qpx job: launcher $3, 2 processes'"
        grep 'qpx job' "$2" | head -n 4
    fi
}

# qpxrun of this build (the installed one takes the installed files)
qpxrun=$QPX_BUILDDIR/contrib/qpxrun
export QPX_MODULE SOFTVERBS_LIBDIR
qpx_has_dc=no
qpx_has_tl qpx_dc && qpx_has_dc=yes
(
    eval "$("$qpxrun" --soft --env)"
    UCX_TLS=qpx_rc,qpx_ud,self UCX_LOG_FILE="$TL_TMP/srun-ucx.%p.log" \
        timeout 120 srun -n2 --mpi=pmix "$TL_TMP/qpx_mpi_test" \
        >"$TL_TMP/srun.out" 2>&1
    if [ $qpx_has_dc = yes ]; then
        UCX_TLS=qpx_dc,self UCX_LOG_FILE="$TL_TMP/srun-dc-ucx.%p.log" \
            timeout 120 srun -n2 --mpi=pmix "$TL_TMP/qpx_mpi_test" \
            >"$TL_TMP/srun-dc.out" 2>&1
    fi
)
collect srun
check "srun -n2 --mpi=pmix, qpx_rc,qpx_ud" "$TL_TMP/srun.all" slurm
if [ $qpx_has_dc = yes ]; then
    collect srun-dc
    check "srun -n2 --mpi=pmix, qpx_dc" "$TL_TMP/srun-dc.all" slurm
fi

cat >"$TL_TMP/job.sh" <<JOB
#!/bin/sh
#SBATCH -n 2
eval "\$("$qpxrun" --soft --env)"
export UCX_TLS=qpx_rc,qpx_ud,self UCX_LOG_FILE="$TL_TMP/sbatch-ucx.%p.log"
mpirun --allow-run-as-root "$TL_TMP/qpx_mpi_test"
JOB
if timeout 180 sbatch --wait -o "$TL_TMP/sbatch.out" "$TL_TMP/job.sh" >"$TL_TMP/sbatch.log" 2>&1; then
    collect sbatch
    check "sbatch --wait, mpirun -np 2" "$TL_TMP/sbatch.all" mpirun
else
    qpx_fail "sbatch --wait: $(cat "$TL_TMP/sbatch.log")"; tail -n 8 "$TL_TMP/sbatch.out" 2>/dev/null
fi
qpx_finish
