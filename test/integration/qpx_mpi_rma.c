/*
 * Open MPI one-sided (osc ucx) over qpx: MPI_Put and MPI_Get of 8 B..4 MiB
 * to the next rank, each followed by MPI_Win_fence, with every byte checked.
 * The fence makes UCP flush its endpoints: a flush that never completes
 * hangs here (the script runs it under a timeout).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QPX_RMA_MAX (4 << 20)

static unsigned char qpx_rma_byte(int rank, int iter, size_t i)
{
    return (unsigned char)(rank * 131 + iter * 7 + i * 13 + (i >> 12));
}

static void qpx_rma_fill(unsigned char *buf, size_t len, int rank, int iter)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = qpx_rma_byte(rank, iter, i);
    }
}

static int qpx_rma_check(const unsigned char *buf, size_t len, int rank,
                         int iter)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (buf[i] != qpx_rma_byte(rank, iter, i)) {
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {8, 4096, 65536, 524288, 2 << 20,
                                   QPX_RMA_MAX};
    unsigned char *win_buf, *local;
    int rank, nranks, next, prev, s, iter = 0, errors = 0, checks = 0;
    int all_errors, all_checks;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    next  = (rank + 1) % nranks;
    prev  = (rank + nranks - 1) % nranks;
    local = malloc(QPX_RMA_MAX);
    MPI_Win_allocate(QPX_RMA_MAX, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf,
                     &win);

    for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); ++s, ++iter) {
        /* Put: my pattern into next's window; check what prev put in mine */
        memset(win_buf, 0, sizes[s]);
        qpx_rma_fill(local, sizes[s], rank, iter);
        MPI_Win_fence(0, win);
        MPI_Put(local, (int)sizes[s], MPI_BYTE, next, 0, (int)sizes[s],
                MPI_BYTE, win);
        MPI_Win_fence(0, win);
        ++checks;
        if (!qpx_rma_check(win_buf, sizes[s], prev, iter)) {
            fprintf(stderr, "rank %d: MPI_Put of %zu bytes: wrong data\n",
                    rank, sizes[s]);
            ++errors;
        }

        /* Get: next's window (which holds my put) back into local */
        memset(local, 0, sizes[s]);
        MPI_Win_fence(0, win);
        MPI_Get(local, (int)sizes[s], MPI_BYTE, next, 0, (int)sizes[s],
                MPI_BYTE, win);
        MPI_Win_fence(0, win);
        ++checks;
        if (!qpx_rma_check(local, sizes[s], rank, iter)) {
            fprintf(stderr, "rank %d: MPI_Get of %zu bytes: wrong data\n",
                    rank, sizes[s]);
            ++errors;
        }
    }

    MPI_Reduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&checks, &all_checks, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("rma: %d ranks, %d checks, %d errors\n", nranks, all_checks,
               all_errors);
    }
    MPI_Win_free(&win);
    free(local);
    MPI_Finalize();
    return (errors == 0) ? 0 : 1;
}
