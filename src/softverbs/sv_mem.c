/*
 * softverbs memory movement between processes: process_vm_writev/readv
 * into a peer's registered memory, memcpy within one process.
 */
#include "sv.h"

#include <string.h>
#include <sys/uio.h>

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

/* Returns 0, or -ESRCH when the peer process is gone, -EFAULT otherwise */
static int sv_mem_xfer(int32_t pid, const struct iovec *liov, int lcnt,
                       const struct iovec *riov, int rcnt, int write)
{
    size_t total = sv_iov_len(liov, lcnt);
    ssize_t n;

    if (total == 0) {
        return 0;
    }
    if (pid == sv_g.pid) {
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
