/*
 * softverbs benchmark baseline: memcpy bandwidth for 1 MiB blocks (what
 * softverbs' RDMA write bandwidth is compared to).
 *
 *   softverbs_memcpy_bw [size] [seconds]
 *
 * Copies `size` bytes (default 1 MiB) between two page-aligned buffers
 * repeatedly for about `seconds` (default 1) and prints MiB/s (MB/sec in
 * perftest's units: 2^20 bytes per second).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    double t0, t;
    char *src, *dst;
    long n = 0;

    if ((size == 0) || (posix_memalign((void **)&src, 4096, size) != 0) ||
        (posix_memalign((void **)&dst, 4096, size) != 0)) {
        fprintf(stderr, "usage: %s [size] [seconds]\n", argv[0]);
        return 1;
    }
    memset(src, 1, size);
    memset(dst, 2, size);
    memcpy(dst, src, size); /* warm up */
    t0 = svt_now_s();
    do {
        memcpy(dst, src, size);
        src[n % size] ^= 1; /* keep the copies from being elided */
        ++n;
        t = svt_now_s() - t0;
    } while (t < seconds);
    printf("%.1f\n", (double)size * n / t / (1 << 20));
    return dst[0] == 42;
}
