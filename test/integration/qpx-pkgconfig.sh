#!/bin/sh
# The installed pkg-config file builds a program against what the installed
# headers declare: qpx/version.h, and softverbs_get_stats() of
# softverbs/softverbs.h (in softverbs' libibverbs). Installed into a
# scratch root (DESTDIR); the program opens the soft device, creates a CQ
# and reads its own count back through softverbs_get_stats().
. "$QPX_SRCDIR/test/integration/lib.sh"
command -v pkg-config >/dev/null || qpx_skip_all "pkg-config missing"
b=$QPX_BUILDDIR
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
if ! make -s -C "$b" install-pkgconfigDATA install-nodist_qpxincludeHEADERS \
        DESTDIR="$root" >"$root/install.log" 2>&1 ||
   ! make -s -C "$b/src/softverbs" install-softverbsincludeHEADERS \
        install-softverbsLTLIBRARIES DESTDIR="$root" >>"$root/install.log" 2>&1; then
    qpx_fail "install into $root failed"; tail -n 5 "$root/install.log"
    qpx_finish
fi
pc=$(find "$root" -name qpx.pc | head -n 1)
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs qpx 2>&1)
case "$flags" in
*-libverbs*) qpx_pass "pkg-config --libs qpx names softverbs' libibverbs: $flags" ;;
*) qpx_fail "pkg-config --cflags --libs qpx: $flags" ;;
esac

cat >"$root/t.c" <<'PROG'
#include <qpx/version.h>
#include <softverbs/softverbs.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    struct softverbs_stats st;
    struct ibv_device **devs = ibv_get_device_list(NULL);
    struct ibv_context *ctx  = (devs && devs[0]) ? ibv_open_device(devs[0]) : NULL;
    struct ibv_cq *cq        = ctx ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
    int rc;

    if (cq == NULL) {
        printf("no CQ\n");
        return 1;
    }
    rc = softverbs_get_stats((uint32_t)getpid(), &st);
    printf("qpx %s: softverbs_get_stats %d, num_cq %u\n", QPX_VERSION_STRING,
           rc, st.num_cq);
    ibv_destroy_cq(cq);
    ibv_close_device(ctx);
    ibv_free_device_list(devs);
    return (rc == 0) && (st.num_cq == 1) ? 0 : 1;
}
PROG
# -Wl,-rpath names the final location; the scratch root is put first
if gcc -o "$root/t" "$root/t.c" $flags 2>"$root/gcc.out"; then
    out=$(LD_LIBRARY_PATH=$(dirname "$(find "$root" -name libibverbs.so.1 | head -n 1)") \
          SOFTVERBS_SHM=$root/registry "$root/t" 2>&1)
    if [ $? -eq 0 ]; then
        qpx_pass "a program built with pkg-config runs: $out"
    else
        qpx_fail "the program built with pkg-config: $out"
    fi
else
    qpx_fail "gcc with pkg-config's flags: $(head -n 3 "$root/gcc.out")"
fi
qpx_finish
