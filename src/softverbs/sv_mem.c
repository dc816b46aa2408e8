/*
 * softverbs memory movement between processes: process_vm_writev/readv
 * into a peer's registered memory, memcpy within one process.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---------------------------------------------------------------------
 * Yama
 * ------------------------------------------------------------------- */
/*
 * process_vm_readv/writev need PTRACE_MODE_ATTACH access to the peer
 * (process_vm_readv(2)). With Yama's kernel.yama.ptrace_scope=1 only an
 * ancestor, or a process the target named with PR_SET_PTRACER, has it
 * (Documentation/admin-guide/LSM/Yama.rst), so two softverbs processes
 * started side by side could not reach each other. Each softverbs process
 * lets any process of its user in, as UCX's CMA transport does at scope 1
 * (uct_cma_test_ptrace_scope, src/uct/sm/scopy/cma/cma_md.c). Without Yama
 * the prctl fails with EINVAL: nothing to allow. Called at initialization
 * and in a forked child (the permission is per process).
 */
void sv_mem_allow_peers(void)
{
    if ((prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0) &&
        (errno != EINVAL)) {
        sv_error("prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY) failed: %m");
    }
}

/*
 * process_vm_*v refused with EPERM: Yama at scope 2 or 3, a peer that did
 * not allow us (scope 1), or another user's process. Nothing a retry can
 * fix, so the operation completes in error (the callers' -EPERM); said once
 * per process on stderr whatever SOFTVERBS_DEBUG says, since without it the
 * error completion has no visible cause.
 */
static void sv_mem_eperm(int32_t pid, int write)
{
    static int reported;
    char scope[8] = "absent";
    ssize_t n;
    int fd;

    if (__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED)) {
        return;
    }
    fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, scope, sizeof(scope) - 1);
        scope[(n > 0) ? n : 0] = '\0';
        scope[strcspn(scope, "\n")] = '\0';
        close(fd);
    }
    sv_warn("process_vm_%sv(pid %d): Operation not permitted "
            "(kernel.yama.ptrace_scope=%s): this process may not access the "
            "peer's memory. The processes must run as the same user, and "
            "kernel.yama.ptrace_scope be 0 or 1 (2 needs CAP_SYS_PTRACE; "
            "sysctl -w kernel.yama.ptrace_scope=1). Operations to such a peer "
            "complete in error.",
            write ? "write" : "read", pid, scope);
}

/* ---------------------------------------------------------------------
 * Memory movement
 * ------------------------------------------------------------------- */
void sv_iov_copy(const struct iovec *dst, int dcnt,
                        const struct iovec *src, int scnt)
{
    size_t doff = 0, soff = 0, n;
    int d = 0, s = 0;

    while ((d < dcnt) && (s < scnt)) {
        n = dst[d].iov_len - doff;
        if (src[s].iov_len - soff < n) {
            n = src[s].iov_len - soff;
        }
        memcpy((char *)dst[d].iov_base + doff,
               (const char *)src[s].iov_base + soff, n);
        doff += n;
        soff += n;
        if (doff == dst[d].iov_len) {
            d++;
            doff = 0;
        }
        if (soff == src[s].iov_len) {
            s++;
            soff = 0;
        }
    }
}

size_t sv_iov_len(const struct iovec *iov, int cnt)
{
    size_t len = 0;
    int i;

    for (i = 0; i < cnt; i++) {
        len += iov[i].iov_len;
    }
    return len;
}

/*
 * process_vm_*v missing (ENOSYS): a kernel built without
 * CONFIG_CROSS_MEMORY_ATTACH, or qemu-user, which does not emulate them
 * (an aarch64 softverbs run under qemu-aarch64, contrib/cross-check.sh).
 * The peer's /proc/PID/mem then, read and written at the peer's addresses:
 * the same PTRACE_MODE_ATTACH check (proc(5)), one open and one
 * pread/pwrite per piece instead of one call. Same returns as
 * sv_mem_xfer.
 */
static int sv_mem_xfer_proc(int32_t pid, const struct iovec *liov, int lcnt,
                            const struct iovec *riov, int rcnt, int write)
{
    size_t loff = 0, roff = 0, len;
    char path[32];
    int l = 0, r = 0, fd, ret = 0;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
    fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
        if ((errno == EACCES) || (errno == EPERM)) {
            sv_mem_eperm(pid, write);
            return -EPERM;
        }
        return (errno == ENOENT) ? -ESRCH : -EFAULT;
    }
    while ((l < lcnt) && (r < rcnt)) {
        len = liov[l].iov_len - loff;
        if (riov[r].iov_len - roff < len) {
            len = riov[r].iov_len - roff;
        }
        if (len > 0) {
            n = write ? pwrite(fd, (char *)liov[l].iov_base + loff, len,
                               (off_t)((uintptr_t)riov[r].iov_base + roff)) :
                        pread(fd, (char *)liov[l].iov_base + loff, len,
                              (off_t)((uintptr_t)riov[r].iov_base + roff));
            if (n <= 0) {
                /* 0: the peer has no memory left (exiting); EIO: not
                 * mapped there */
                ret = (n == 0) ? -ESRCH : -EFAULT;
                sv_error("%s %s at 0x%lx failed: %s", write ? "write" : "read",
                         path, (unsigned long)((uintptr_t)riov[r].iov_base +
                         roff), (n == 0) ? "process exiting" : strerror(errno));
                break;
            }
            len = n; /* a short transfer goes on from where it stopped */
        }
        loff += len;
        roff += len;
        if (loff == liov[l].iov_len) {
            l++;
            loff = 0;
        }
        if (roff == riov[r].iov_len) {
            r++;
            roff = 0;
        }
    }
    close(fd);
    return ret;
}

/*
 * Whether this thread runs operations some time after the program posted
 * them (the mlx5 personality's engine, sv_mlx5_engine.c). The program may
 * have unmapped a buffer meanwhile, under a registration still alive (a
 * registration cache drops it later): an HCA then still reads and writes
 * the pages the registration pinned, but here the address is all there is.
 * Such a thread moves even its own process's bytes through
 * process_vm_readv/writev, which fail on an unmapped page where memcpy
 * would fault; a post from the program's own thread runs at once, while its
 * buffers are there, and copies directly.
 */
static __thread int sv_mem_deferred;

void sv_mem_deferred_thread(void)
{
    sv_mem_deferred = 1;
}

int sv_mem_is_deferred(void)
{
    return sv_mem_deferred;
}

/* Returns 0, or -ESRCH when the peer process is gone, -EPERM when it may
 * not be accessed (sv_mem_eperm), -EFAULT otherwise */
static int sv_mem_xfer(int32_t pid, const struct iovec *liov, int lcnt,
                       const struct iovec *riov, int rcnt, int write)
{
    size_t total = sv_iov_len(liov, lcnt);
    ssize_t n;

    if (total == 0) {
        return 0;
    }
    if ((pid == sv_g.pid) && !sv_mem_deferred) {
        if (write) {
            sv_iov_copy(riov, rcnt, liov, lcnt);
        } else {
            sv_iov_copy(liov, lcnt, riov, rcnt);
        }
        return 0;
    }
    n = write ? process_vm_writev(pid, liov, lcnt, riov, rcnt, 0) :
                process_vm_readv(pid, liov, lcnt, riov, rcnt, 0);
    if (n == (ssize_t)total) {
        return 0;
    }
    if ((n < 0) && (errno == ENOSYS)) {
        return sv_mem_xfer_proc(pid, liov, lcnt, riov, rcnt, write);
    }
    if ((n < 0) && (errno == EPERM)) {
        sv_mem_eperm(pid, write);
        return -EPERM;
    }
    if (n < 0) {
        sv_error("process_vm_%sv(pid %d) failed: %m",
                 write ? "write" : "read", pid);
        return (errno == ESRCH) ? -ESRCH : -EFAULT;
    }
    /* partial: the kernel stops at the first unmapped page */
    sv_error("process_vm_%sv(pid %d): %zd of %zu bytes",
             write ? "write" : "read", pid, n, total);
    return -EFAULT;
}

int sv_mem_write(int32_t pid, const struct iovec *liov, int lcnt,
                 const struct iovec *riov, int rcnt)
{
    return sv_mem_xfer(pid, liov, lcnt, riov, rcnt, 1);
}

int sv_mem_read(int32_t pid, const struct iovec *liov, int lcnt,
                const struct iovec *riov, int rcnt)
{
    return sv_mem_xfer(pid, liov, lcnt, riov, rcnt, 0);
}

/* Trim an iovec list to len bytes */
int sv_iov_trim(struct iovec *iov, int cnt, size_t len)
{
    int i;

    for (i = 0; (i < cnt) && (len > 0); i++) {
        if (iov[i].iov_len >= len) {
            iov[i].iov_len = len;
            return i + 1;
        }
        len -= iov[i].iov_len;
    }
    return i;
}
