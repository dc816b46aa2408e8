/*
 * OpenSHMEM over UCX (spml ucx): puts, gets, atomic add, fetch-add and
 * compare-swap among the PEs (each to the next); each PE prints "PE n: OK"
 * when right.
 */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    static long target[1024], counter, src[1024];
    int me, npes, peer, i, errors = 0;
    long old;

    shmem_init();
    me = shmem_my_pe(); npes = shmem_n_pes(); peer = (me + 1) % npes;
    for (i = 0; i < 1024; ++i) src[i] = me * 100000 + i;
    counter = 0;
    shmem_barrier_all();
    shmem_long_put(target, src, 1024, peer);
    shmem_barrier_all();
    for (i = 0; i < 1024; ++i) errors += target[i] != ((me + npes - 1) % npes) * 100000 + i;
    shmem_long_get(src, target, 1024, peer);
    for (i = 0; i < 1024; ++i) errors += src[i] != me * 100000 + i;
    for (i = 0; i < 100; ++i) shmem_long_atomic_add(&counter, 1, 0);
    old = shmem_long_atomic_fetch_add(&counter, 0, 0);
    shmem_barrier_all();
    if (me == 0) errors += counter != 100 * npes;
    old = shmem_long_atomic_compare_swap(&counter, -1, 5, peer);
    (void)old;
    shmem_barrier_all();
    printf("PE %d: %s (%d errors)\n", me, errors ? "FAILED" : "OK", errors);
    shmem_finalize();
    return errors != 0;
}
