#!/bin/bash
#
# qpxrun and the component inside UCX: configuration visible, memory domains
# listed over softverbs, export lines for batch scripts, clear errors.
#
. "$(dirname "$0")/lib.sh"

[ -x "$QPXRUN" ] || qpx_skip_all "qpxrun not built at $QPXRUN"
command -v ucx_info >/dev/null || qpx_skip_all "ucx_info not installed (ucx-utils)"

out=$("$QPXRUN" --quiet --hw --force ucx_info -c -f 2>&1)
if grep -q '^UCX_QPX_REG_OVERHEAD=' <<<"$out"; then
    qpx_pass "UCX_QPX_* variables in ucx_info -c -f"
else
    qpx_fail "UCX_QPX_* variables missing from ucx_info -c -f"
fi

# UCX 1.13 loads only the modules it was built with: without the preload
# (no qpxrun) there is no qpx, whether or not qpx is installed
out=$(env -u LD_PRELOAD ucx_info -c -f 2>&1)
if grep -q '^UCX_QPX_' <<<"$out"; then
    qpx_fail "no qpx without the preload"
else
    qpx_pass "no qpx without the preload"
fi

# Without QPX_MODULE qpxrun uses the installed module: it names it, or says
# it is not installed (both are right; which one depends on make install)
out=$(env -u QPX_MODULE "$QPXRUN" --soft --env 2>&1)
rc=$?
default=$(sed -n "s/^module=\${QPX_MODULE:-'\(.*\)'}$/\1/p" "$QPXRUN")
if [ -z "$default" ]; then
    qpx_fail "qpxrun without QPX_MODULE: no default module path in $QPXRUN"
elif [ -r "$default" ] && [ $rc -eq 0 ] &&
     grep -q "^export LD_PRELOAD='$default" <<<"$out"; then
    qpx_pass "qpxrun without QPX_MODULE preloads the installed $default"
elif [ ! -r "$default" ] && [ $rc -eq 2 ] &&
     grep -q "not found at $default" <<<"$out"; then
    qpx_pass "qpxrun without QPX_MODULE, nothing installed: clear error"
else
    qpx_fail "qpxrun without QPX_MODULE (default $default): exit $rc: $out"
fi

out=$("$QPXRUN" --soft --env)
if grep -q "^export LD_PRELOAD='$QPX_MODULE" <<<"$out" &&
   grep -q "^export LD_LIBRARY_PATH='$SOFTVERBS_LIBDIR" <<<"$out"; then
    qpx_pass "qpxrun --soft --env prints the exports"
else
    qpx_fail "qpxrun --soft --env: $out"
fi

# --hw on a host without an RDMA device: a clear refusal, unless --force
if [ -z "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
    out=$("$QPXRUN" --hw true 2>&1); rc=$?
    if [ $rc -ne 0 ] && grep -q "no RDMA device" <<<"$out" &&
       "$QPXRUN" --quiet --hw --force true; then
        qpx_pass "qpxrun --hw without an RDMA device refuses (exit $rc), --force runs"
    else
        qpx_fail "qpxrun --hw without an RDMA device: exit $rc: $out"
    fi
else
    echo "SKIP: qpxrun --hw refusal: this host has an RDMA device"
fi

if QPX_MODULE=/nonexistent/libuct_qpx.so "$QPXRUN" true 2>/dev/null; then
    qpx_fail "qpxrun with a missing module must fail"
else
    qpx_pass "qpxrun with a missing module fails"
fi

if [ ! -r "$SOFTVERBS_LIBDIR/libibverbs.so.1" ]; then
    qpx_fail "softverbs not built in $SOFTVERBS_LIBDIR"
else
    out=$("$QPXRUN" --quiet --soft ucx_info -d 2>&1)
    if grep -q 'Component: qpx' <<<"$out" &&
       grep -q 'Memory domain: softverbs0' <<<"$out"; then
        qpx_pass "qpxrun --soft ucx_info -d: component qpx, md softverbs0"
    else
        qpx_fail "ucx_info -d over softverbs shows no qpx md"
        echo "$out" | grep -i -B2 -A8 'qpx\|softverbs' | head -40
    fi
fi

# A PMIx launcher that sets neither OMPI_COMM_WORLD_* nor SLURM_*: qpx asks
# its PMIx server for the job (mpirun's PMIx server stands in, with Open
# MPI's own variables removed) only with the user's consent
# (UCX_QPX_JOB_PMIX=y), since ucx_info has not initialised PMIx itself; the
# hybrid sizes its RC pool by it. Without consent, qpx does not start a PMIx
# client in a program that did not (issue 38).
if command -v mpirun >/dev/null && [ -f "$SOFTVERBS_LIBDIR/libibverbs.so.1" ]; then
    pmix_job() {
        env LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" LD_PRELOAD="$QPX_MODULE" \
            timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 \
            env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_SIZE \
            -u OMPI_COMM_WORLD_RANK UCX_TLS=qpx UCX_NET_DEVICES=softverbs0:1 \
            UCX_LOG_LEVEL=debug "$@" ucx_info -e -u t 2>&1
    }
    out=$(pmix_job UCX_QPX_JOB_PMIX=y)
    jobs=$(grep -c "qpx job: launcher pmix, 2 processes on 1 hosts, 2 here" \
           <<<"$out")
    pools=$(grep -c "qpx: RC pool of [0-9]* QPs (job: pmix, 2 processes)" \
            <<<"$out")
    if [ "$jobs" -eq 2 ] && [ "$pools" -eq 2 ]; then
        qpx_pass "PMIx job size with UCX_QPX_JOB_PMIX=y: both ranks ($(grep -m1 -o 'qpx: RC pool.*' <<<"$out"))"
    else
        qpx_fail "PMIx job size: $jobs of 2 ranks logged the PMIx job, $pools the pool"
        grep "qpx job\|RC pool" <<<"$out" | head -4
    fi
    out=$(pmix_job)
    none=$(grep -c "qpx job: launcher none" <<<"$out")
    asked=$(grep -c "not asking it" <<<"$out")
    if [ "$none" -eq 2 ] && [ "$asked" -eq 2 ]; then
        qpx_pass "PMIx not initialised by the program, no consent: qpx does not start a PMIx client (2 of 2 ranks)"
    else
        qpx_fail "PMIx without consent: $none of 2 ranks without a job, $asked said why"
        grep "qpx job" <<<"$out" | head -4
    fi
    out=$(env PMIX_NAMESPACE=none-here UCX_QPX_JOB_PMIX=y UCX_LOG_LEVEL=debug \
          UCX_TLS=qpx UCX_NET_DEVICES=softverbs0:1 \
          LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" LD_PRELOAD="$QPX_MODULE" \
          timeout 60 ucx_info -e -u t 2>&1)
    if grep -q "qpx job: launcher none" <<<"$out"; then
        qpx_pass "PMIX_NAMESPACE without a PMIx server: no job size, no error"
    else
        qpx_fail "PMIX_NAMESPACE without a PMIx server"
        grep "qpx job" <<<"$out" | head -3
    fi
    # UCX_QPX_JOB_PMIX is read through UCX's parser before UCP checks the
    # environment: not reported as unused; a bad value is refused by name
    out=$(env UCX_QPX_JOB_PMIX=n UCX_TLS=qpx UCX_NET_DEVICES=softverbs0:1 \
          LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" LD_PRELOAD="$QPX_MODULE" \
          timeout 60 ucx_info -e -u t 2>&1)
    if grep -q "qpx" <<<"$out" && ! grep -q "unused env.*UCX_QPX_JOB_PMIX" <<<"$out"; then
        qpx_pass "UCX_QPX_JOB_PMIX=n: UCP does not report it as unused"
    else
        qpx_fail "UCX_QPX_JOB_PMIX: $(grep -m1 'unused env' <<<"$out")"
    fi
    out=$(env UCX_QPX_JOB_PMIX=maybe UCX_TLS=qpx UCX_NET_DEVICES=softverbs0:1 \
          LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" LD_PRELOAD="$QPX_MODULE" \
          timeout 60 ucx_info -e -u t 2>&1)
    if grep -q "Invalid value for PMIX: 'maybe'" <<<"$out" &&
       grep -q "PMIx is not asked" <<<"$out"; then
        qpx_pass "UCX_QPX_JOB_PMIX=maybe: refused with a warning"
    else
        qpx_fail "UCX_QPX_JOB_PMIX=maybe: no clear refusal"
        grep -i "pmix" <<<"$out" | head -3
    fi
    # Loading qpx (ucx_info -v opens no interface) reads no job at all
    out=$(env PMIX_NAMESPACE=none-here UCX_QPX_JOB_PMIX=y UCX_LOG_LEVEL=debug \
          LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" LD_PRELOAD="$QPX_MODULE" \
          timeout 60 ucx_info -v 2>&1)
    if grep -q "qpx component registered" <<<"$out" &&
       ! grep -q "qpx job" <<<"$out"; then
        qpx_pass "loading qpx reads no job information (ucx_info -v)"
    else
        qpx_fail "loading qpx: $(grep -c 'qpx job' <<<"$out") job lines at load"
    fi
fi

qpx_finish
