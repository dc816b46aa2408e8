/*
 * softverbs benchmark baseline: memcpy bandwidth for 1 MiB blocks (what
 * softverbs' RDMA write bandwidth is compared to).
 *
 *   softverbs_memcpy_bw [size] [seconds] [pvw]
 *
 * Copies `size` bytes (default 1 MiB) between two page-aligned buffers
 * repeatedly for about `seconds` (default 1) and prints MiB/s (MB/sec in
 * perftest's units: 2^20 bytes per second). With "pvw" the destination is
 * in a child process, written with process_vm_writev.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double svt_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    size_t size    = (argc > 1) ? (size_t)atol(argv[1]) : (1u << 20);
    double seconds = (argc > 2) ? atof(argv[2]) : 1.0;
    int pvw = (argc > 3) && !strcmp(argv[3], "pvw");
    struct iovec l, r;
    double t0, t;
    char *src, *dst;
    pid_t child = 0;
    long n = 0;

    if ((size == 0) || (posix_memalign((void **)&src, 4096, size) != 0) ||
        (posix_memalign((void **)&dst, 4096, size) != 0)) {
        fprintf(stderr, "usage: %s [size] [seconds]\n", argv[0]);
        return 1;
    }
    memset(src, 1, size);
    memset(dst, 2, size);
    if (pvw) {
        child = fork(); /* same addresses: dst is valid in the child */
        if (child == 0) {
            pause();
            _exit(0);
        }
    }
    l = (struct iovec){src, size};
    r = (struct iovec){dst, size};
    t0 = svt_now_s();
    do {
        if (!pvw) {
            memcpy(dst, src, size);
        } else if (process_vm_writev(child, &l, 1, &r, 1, 0) != (ssize_t)size) {
            perror("process_vm_writev");
            kill(child, SIGKILL);
            return 1;
        }
        src[n % size] ^= 1; /* keep the copies from being elided */
        ++n;
        t = svt_now_s() - t0;
    } while (t < seconds);
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    printf("%.1f\n", (double)size * n / t / (1 << 20));
    return dst[0] == 42;
}
