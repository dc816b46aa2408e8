/*
 * Two-rank MPI check over UCX: ping-pong of several sizes with data checks,
 * MPI_Put / MPI_Get / MPI_Accumulate / MPI_Fetch_and_op on a window.
 * Prints "MPI OK" on rank 0 when every result is right; exits 1 otherwise.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define WIN_N 4096

static int errors;

static void expect(int cond, const char *what)
{
    if (!cond) {
        ++errors;
        fprintf(stderr, "FAIL: %s\n", what);
    }
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1, 64, 4096, 65536, 1 << 20, 4 << 20};
    int rank, nprocs, peer, k, s;
    size_t i;
    unsigned char *buf;
    int64_t *win_buf, local[WIN_N], one = 1, old = -1;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs != 2) {
        if (rank == 0) fprintf(stderr, "needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    peer = 1 - rank;

    buf = malloc(4 << 20);
    for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); ++s) {
        for (k = 0; k < 10; ++k) {
            if (rank == 0) {
                for (i = 0; i < sizes[s]; ++i) buf[i] = (unsigned char)(i * 7 + k + s);
                MPI_Send(buf, (int)sizes[s], MPI_BYTE, peer, k, MPI_COMM_WORLD);
                memset(buf, 0, sizes[s]);
                MPI_Recv(buf, (int)sizes[s], MPI_BYTE, peer, k, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                for (i = 0; i < sizes[s]; ++i) {
                    if (buf[i] != (unsigned char)(i * 7 + k + s + 1)) break;
                }
                expect(i == sizes[s], "ping-pong data");
            } else {
                MPI_Recv(buf, (int)sizes[s], MPI_BYTE, peer, k, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                for (i = 0; i < sizes[s]; ++i) buf[i]++;
                MPI_Send(buf, (int)sizes[s], MPI_BYTE, peer, k, MPI_COMM_WORLD);
            }
        }
    }

    MPI_Win_allocate(WIN_N * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &win_buf, &win);
    for (i = 0; i < WIN_N; ++i) win_buf[i] = rank * 1000000 + i;
    MPI_Win_fence(0, win);

    /* Put: rank r writes its pattern into the peer's second half */
    for (i = 0; i < WIN_N / 2; ++i) local[i] = -(rank * 1000000 + i);
    MPI_Put(local, WIN_N / 2, MPI_INT64_T, peer, WIN_N / 2, WIN_N / 2,
            MPI_INT64_T, win);
    MPI_Win_fence(0, win);
    for (i = 0; i < WIN_N / 2; ++i) {
        if (win_buf[WIN_N / 2 + i] != -(peer * 1000000 + i)) break;
    }
    expect(i == WIN_N / 2, "MPI_Put data");

    /* Get: read the peer's first half */
    MPI_Get(local, WIN_N / 2, MPI_INT64_T, peer, 0, WIN_N / 2, MPI_INT64_T, win);
    MPI_Win_fence(0, win);
    for (i = 0; i < WIN_N / 2; ++i) {
        if (local[i] != peer * 1000000 + i) break;
    }
    expect(i == WIN_N / 2, "MPI_Get data");

    /* Accumulate: both ranks add 1..N to rank 0's first 64 elements, 100 times */
    for (i = 0; i < 64; ++i) local[i] = i + 1;
    MPI_Win_fence(0, win);
    for (k = 0; k < 100; ++k) {
        MPI_Accumulate(local, 64, MPI_INT64_T, 0, 0, 64, MPI_INT64_T, MPI_SUM, win);
    }
    MPI_Win_fence(0, win);
    if (rank == 0) {
        for (i = 0; i < 64; ++i) {
            if (win_buf[i] != i + 2 * 100 * (i + 1)) break;
        }
        expect(i == 64, "MPI_Accumulate sum");
    }

    /* Fetch-and-op: counter at rank 1 element 100 */
    MPI_Win_fence(0, win);
    if (rank == 1) win_buf[100] = 0;
    MPI_Win_fence(0, win);
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
    for (k = 0; k < 50; ++k) {
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, 100, MPI_SUM, win);
        MPI_Win_flush(1, win);
    }
    MPI_Win_unlock(1, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        expect(win_buf[100] == 100, "MPI_Fetch_and_op total");
        MPI_Win_unlock(1, win);
    }

    MPI_Win_free(&win);
    free(buf);
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(errors ? "MPI FAILED (%d errors)\n" : "MPI OK\n", errors);
    }
    MPI_Finalize();
    return errors ? 1 : 0;
}
