/*
 * Open MPI one-sided (osc ucx) on N ranks, every result checked:
 *  - MPI_Put: each rank writes a 4 KiB pattern into its own slot of every
 *    other rank's window; each rank checks every slot of its window;
 *  - MPI_Get: each rank reads a slot of every other rank's window back (the
 *    one rank 0 wrote; rank 1's in rank 0's);
 *  - MPI_Accumulate (MPI_SUM): every rank adds 1..64 into rank 0's counters
 *    and its next rank's, 20 times;
 *  - MPI_Fetch_and_op (MPI_SUM) under a shared lock: every rank adds 1 to a
 *    counter at rank 0, 25 times, each value fetched being distinct.
 * Repeated ITERATIONS times, with a fence (UCP flushes) between phases.
 *
 *   qpx_mpi_osc ITERATIONS
 * Prints "OSC OK <iters> iterations on <N> ranks" on rank 0, or the count
 * of wrong values, and exits 1 then; with QPX_OSC_TIMES set, rank 0's
 * seconds in each phase too.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOT    4096   /* bytes of a rank's slot in every window */
#define NACC    64     /* accumulated counters */
#define NACC_IT 20
#define NFOP    25

static long errors;

/* Count a wrong value; the first few are named */
static void wrong(int rank, int it, const char *what, int peer, int i,
                  int64_t got, int64_t want)
{
    if (errors++ < 5) {
        fprintf(stderr, "rank %d iteration %d: %s (peer %d, index %d): "
                "0x%llx, expected 0x%llx\n", rank, it, what, peer, i,
                (unsigned long long)got, (unsigned long long)want);
    }
}

static int64_t pattern(int src, int dst, int it, int i)
{
    return ((int64_t)src << 40) | ((int64_t)dst << 24) | ((int64_t)it << 16) | i;
}

int main(int argc, char **argv)
{
    int rank, size, iters, it, p, i, k, next;
    long total;
    int64_t *win_buf, *local, one = 1, old, *seen;
    size_t words = SLOT / sizeof(int64_t), win_words;
    MPI_Win win;
    /* seconds in put, get, accumulate, fetch-and-op, check (rank 0) */
    double phase[5] = {0, 0, 0, 0, 0}, t = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    iters     = (argc > 1) ? atoi(argv[1]) : 5;
    next      = (rank + 1) % size;
    /* slots of every rank, then NACC counters, then the fetch-op counter */
    win_words = (size_t)size * words + NACC + 1;
    MPI_Win_allocate(win_words * sizeof(int64_t), sizeof(int64_t),
                     MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win);
    local = malloc((size_t)SLOT * size);
    seen  = calloc((size_t)size * NFOP, sizeof(*seen));

    for (it = 0; it < iters; ++it) {
        memset(win_buf, 0, win_words * sizeof(int64_t));
        MPI_Win_fence(0, win);
        t = MPI_Wtime();

        for (p = 0; p < size; ++p) {
            for (i = 0; i < (int)words; ++i) {
                local[p * words + i] = pattern(rank, p, it, i);
            }
            if (p != rank) {
                MPI_Put(&local[p * words], words, MPI_INT64_T, p,
                        rank * words, words, MPI_INT64_T, win);
            }
        }
        MPI_Win_fence(0, win);
        phase[0] += MPI_Wtime() - t;
        t = MPI_Wtime();
        for (p = 0; p < size; ++p) {
            for (i = 0; (p != rank) && (i < (int)words); ++i) {
                if (win_buf[p * words + i] != pattern(p, rank, it, i)) {
                    wrong(rank, it, "MPI_Put", p, i, win_buf[p * words + i],
                          pattern(p, rank, it, i));
                    break;
                }
            }
        }

        /* every other rank's slot 0 holds rank 0's put; rank 0's slot 1
         * rank 1's */
        memset(local, 0, (size_t)SLOT * size);
        for (p = 0; p < size; ++p) {
            if (p != rank) {
                MPI_Get(&local[p * words], words, MPI_INT64_T, p,
                        ((p == 0) ? 1 : 0) * words, words, MPI_INT64_T, win);
            }
        }
        MPI_Win_fence(0, win);
        phase[1] += MPI_Wtime() - t;
        t = MPI_Wtime();
        for (p = 0; p < size; ++p) {
            int src = (p == 0) ? 1 : 0;
            for (i = 0; (p != rank) && (i < (int)words); ++i) {
                if (local[p * words + i] != pattern(src, p, it, i)) {
                    wrong(rank, it, "MPI_Get", p, i, local[p * words + i],
                          pattern(src, p, it, i));
                    break;
                }
            }
        }

        for (i = 0; i < NACC; ++i) {
            local[i] = i + 1;
        }
        for (k = 0; k < NACC_IT; ++k) {
            MPI_Accumulate(local, NACC, MPI_INT64_T, 0, size * words, NACC,
                           MPI_INT64_T, MPI_SUM, win);
            MPI_Accumulate(local, NACC, MPI_INT64_T, next, size * words, NACC,
                           MPI_INT64_T, MPI_SUM, win);
        }
        MPI_Win_fence(0, win);
        phase[2] += MPI_Wtime() - t;
        t = MPI_Wtime();
        for (i = 0; i < NACC; ++i) {
            /* rank 0 gets everyone's and its previous rank's; others one */
            int64_t want = (int64_t)(i + 1) * NACC_IT *
                           ((rank == 0) ? size + 1 : 1);
            if (win_buf[size * words + i] != want) {
                wrong(rank, it, "MPI_Accumulate", -1, i,
                      win_buf[size * words + i], want);
                break;
            }
        }

        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        for (k = 0; k < NFOP; ++k) {
            MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, size * words + NACC,
                             MPI_SUM, win);
            MPI_Win_flush(0, win);
            if ((old < 0) || (old >= (int64_t)size * NFOP)) {
                wrong(rank, it, "MPI_Fetch_and_op range", 0, k, old,
                      (int64_t)size * NFOP);
            } else {
                seen[rank * NFOP + k] = old;
            }
        }
        MPI_Win_unlock(0, win);
        phase[3] += MPI_Wtime() - t;
        t = MPI_Wtime();
        /* every fetched value once over all ranks: 0..size*NFOP-1 */
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, seen, NFOP,
                      MPI_INT64_T, MPI_COMM_WORLD);
        if (rank == 0) {
            char *hit = calloc((size_t)size * NFOP, 1);
            for (i = 0; i < size * NFOP; ++i) {
                if ((seen[i] < 0) || (seen[i] >= (int64_t)size * NFOP) ||
                    hit[seen[i]]++) {
                    wrong(rank, it, "MPI_Fetch_and_op values once", i / NFOP,
                          i % NFOP, seen[i], -1);
                    break;
                }
            }
            free(hit);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        phase[4] += MPI_Wtime() - t;
        t = MPI_Wtime();
    }

    MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0) {
            printf("OSC OK %d iterations on %d ranks\n", iters, size);
            if (getenv("QPX_OSC_TIMES") != NULL) {
                printf("rank 0 seconds: put %.3f get %.3f accumulate %.3f "
                       "fetch_and_op %.3f check %.3f\n", phase[0], phase[1],
                       phase[2], phase[3], phase[4]);
            }
        } else {
            printf("OSC FAILED: %ld wrong values\n", total);
        }
    }
    MPI_Win_free(&win);
    free(local);
    free(seen);
    MPI_Finalize();
    return total != 0;
}
