/*
 * softverbs benchmark baseline: one-way latency of a raw shared-memory
 * ping-pong between two processes (what softverbs' latency is compared to).
 *
 *   softverbs_shm_pingpong [iterations] [size] [pvw]
 *
 * Parent and child share an anonymous mapping. Each side waits, spinning, for
 * the other's sequence number, copies `size` bytes of payload (as an RDMA
 * write would) and answers. Prints "typical_usec avg_usec" one-way: the
 * median and the mean of the round trips, halved (as perftest reports).
 * With "pvw" the mapping is private and each side writes payload and
 * sequence number into the other with process_vm_writev (the mechanism a
 * user-space verbs device has for an RDMA write into unshared memory).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SVT_LINE 128

typedef struct {
    volatile uint64_t seq __attribute__((aligned(SVT_LINE)));
    char              data[4096] __attribute__((aligned(SVT_LINE)));
} svt_slot_t;

static double svt_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int svt_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static pid_t svt_pp_peer; /* pvw mode: the process to write into */

/* Put payload and sequence number into `out` (shared, or the peer's copy) */
static void svt_pp_put(svt_slot_t *out, uint64_t seq, size_t size,
                       char *local)
{
    struct iovec l[2], r[2];

    if (svt_pp_peer == 0) {
        memcpy(out->data, local, size);
        __atomic_store_n(&out->seq, seq, __ATOMIC_RELEASE);
        return;
    }
    l[0] = (struct iovec){local, size};
    r[0] = (struct iovec){out->data, size};
    l[1] = (struct iovec){&seq, sizeof(seq)};
    r[1] = (struct iovec){(void *)&out->seq, sizeof(seq)};
    if (process_vm_writev(svt_pp_peer, l, 2, r, 2, 0) < 0) {
        perror("process_vm_writev");
        _exit(1);
    }
}

/* Wait for `seq` in `in`, then answer through `out` */
static void svt_pp_step(svt_slot_t *in, svt_slot_t *out, uint64_t seq,
                        size_t size, char *local)
{
    /* acquire: pairs with the peer's release store of seq, so its payload
     * is seen after seq on any CPU (a plain load with a compiler barrier
     * orders only on x86) */
    while (__atomic_load_n(&in->seq, __ATOMIC_ACQUIRE) != seq) {
        __asm__ __volatile__("" ::: "memory");
    }
    svt_pp_put(out, seq, size, local);
}

int main(int argc, char **argv)
{
    long iters = (argc > 1) ? atol(argv[1]) : 100000;
    size_t size = (argc > 2) ? (size_t)atol(argv[2]) : 8;
    int pvw = (argc > 3) && !strcmp(argv[3], "pvw");
    const long warmup = 1000;
    svt_slot_t *slot;
    double *rtt, t0, sum = 0;
    char local[4096];
    pid_t pid;
    long i;

    if ((iters < 1) || (size > sizeof(local))) {
        fprintf(stderr, "usage: %s [iterations] [size <= 4096]\n", argv[0]);
        return 1;
    }
    slot = mmap(NULL, 2 * sizeof(*slot), PROT_READ | PROT_WRITE,
                (pvw ? MAP_PRIVATE : MAP_SHARED) | MAP_ANONYMOUS, -1, 0);
    rtt  = calloc(iters, sizeof(*rtt));
    if ((slot == MAP_FAILED) || (rtt == NULL)) {
        perror("mmap/calloc");
        return 1;
    }
    memset(local, 0x5a, sizeof(local));
    memset(slot, 0, 2 * sizeof(*slot));
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) { /* pong: answer every ping */
        svt_pp_peer = pvw ? getppid() : 0;
        for (i = 1; i <= iters + warmup; ++i) {
            svt_pp_step(&slot[0], &slot[1], i, size, local);
        }
        _exit(0);
    }
    svt_pp_peer = pvw ? pid : 0;
    for (i = 1; i <= iters + warmup; ++i) {
        t0 = svt_now_us();
        svt_pp_put(&slot[0], i, size, local);
        /* acquire: as in svt_pp_step */
        while (__atomic_load_n(&slot[1].seq, __ATOMIC_ACQUIRE) !=
               (uint64_t)i) {
            __asm__ __volatile__("" ::: "memory");
        }
        if (i > warmup) {
            rtt[i - warmup - 1] = svt_now_us() - t0;
        }
    }
    waitpid(pid, NULL, 0);
    for (i = 0; i < iters; ++i) {
        sum += rtt[i];
    }
    qsort(rtt, iters, sizeof(*rtt), svt_cmp_double);
    printf("%.3f %.3f\n", rtt[iters / 2] / 2, sum / iters / 2);
    free(rtt);
    return 0;
}
