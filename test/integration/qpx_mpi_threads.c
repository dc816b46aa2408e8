/*
 * MPI_THREAD_MULTIPLE: every rank runs THREADS threads that exchange
 * messages with the same thread of the other rank at the same time (tag =
 * thread), sizes from 1 B to 1 MiB, every byte checked, then a barrier of
 * all threads through MPI_Allreduce on a duplicated communicator per
 * thread.
 *
 * usage: qpx_mpi_threads THREADS ITERATIONS (2 ranks)
 * Rank 0 prints "THREADS OK <threads> x <iterations>" when every byte of
 * every message was right; exits 1 otherwise.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct {
    int      id;
    int      rank;
    int      iters;
    MPI_Comm comm;
    int      errors;
} thread_arg_t;


static const int sizes[] = {1, 8, 100, 4096, 8193, 65536, 300000, 1 << 20};


static unsigned char pattern(int thread, int iter, int src, size_t off)
{
    return (unsigned char)((thread * 97) ^ (iter * 13) ^ (src * 71) ^
                           (off * 2654435761u >> 11));
}


static void *thread_main(void *p)
{
    thread_arg_t *a = p;
    int peer        = 1 - a->rank;
    size_t max      = 1 << 20, off;
    unsigned char *sbuf = malloc(max), *rbuf = malloc(max);
    MPI_Request reqs[2];
    int it, s, sum, one = 1;

    if ((sbuf == NULL) || (rbuf == NULL)) {
        a->errors++;
        return NULL;
    }
    for (it = 0; it < a->iters; ++it) {
        for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); ++s) {
            for (off = 0; off < (size_t)sizes[s]; ++off) {
                sbuf[off] = pattern(a->id, it, a->rank, off);
            }
            memset(rbuf, 0xee, sizes[s]);
            MPI_Irecv(rbuf, sizes[s], MPI_BYTE, peer, a->id, a->comm,
                      &reqs[0]);
            MPI_Isend(sbuf, sizes[s], MPI_BYTE, peer, a->id, a->comm,
                      &reqs[1]);
            MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
            for (off = 0; off < (size_t)sizes[s]; ++off) {
                if (rbuf[off] != pattern(a->id, it, peer, off)) {
                    if (a->errors < 3) {
                        fprintf(stderr, "rank %d thread %d iter %d size %d: "
                                "byte %zu is 0x%02x, expected 0x%02x\n",
                                a->rank, a->id, it, sizes[s], off, rbuf[off],
                                pattern(a->id, it, peer, off));
                    }
                    a->errors++;
                    break;
                }
            }
        }
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, a->comm);
        if (sum != 2) {
            a->errors++;
        }
    }
    free(sbuf);
    free(rbuf);
    return NULL;
}


int main(int argc, char **argv)
{
    thread_arg_t args[16];
    pthread_t threads[16];
    int provided, rank, nprocs, nthreads, iters, i, errors = 0, total;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if ((argc != 3) || (nprocs != 2) || (provided < MPI_THREAD_MULTIPLE)) {
        if (rank == 0) {
            fprintf(stderr, "usage: %s THREADS ITERATIONS, 2 ranks; "
                    "thread level provided %d\n", argv[0], provided);
        }
        MPI_Finalize();
        return 1;
    }
    nthreads = atoi(argv[1]);
    iters    = atoi(argv[2]);
    if ((nthreads < 1) || (nthreads > 16)) {
        MPI_Finalize();
        return 1;
    }

    for (i = 0; i < nthreads; ++i) {
        args[i].id     = i;
        args[i].rank   = rank;
        args[i].iters  = iters;
        args[i].errors = 0;
        MPI_Comm_dup(MPI_COMM_WORLD, &args[i].comm);
    }
    for (i = 0; i < nthreads; ++i) {
        pthread_create(&threads[i], NULL, thread_main, &args[i]);
    }
    for (i = 0; i < nthreads; ++i) {
        pthread_join(threads[i], NULL);
        errors += args[i].errors;
        MPI_Comm_free(&args[i].comm);
    }

    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if ((rank == 0) && (total == 0)) {
        printf("THREADS OK %d x %d\n", nthreads, iters);
    }
    MPI_Finalize();
    return errors ? 1 : 0;
}
