/*
 * A halo exchange, as stencil codes do: every iteration each rank sends a
 * block to each of its 2*K nearest ring neighbours (rank +-1 .. +-K) and
 * receives theirs, nonblocking; every tenth iteration all ranks also
 * exchange one small value with every other rank (MPI_Alltoall), so that
 * each rank has K*2 hot peers and the rest cold. Every byte received is
 * checked against what its sender wrote.
 *
 *   qpx_mpi_halo ITERATIONS BLOCK K
 * Prints "HALO OK <iters> x <block> B, <2K> neighbours on <N> ranks, <t>
 * us per iteration" on rank 0 when every check passed, exits 1 otherwise.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(int src, int dst, int it, size_t i)
{
    return (unsigned char)(src * 131 + dst * 31 + it * 7 + i * 13 + (i >> 8));
}

int main(int argc, char **argv)
{
    int rank, size, iters, k, it, d, n, nn, peer, *a2a_out, *a2a_in;
    long errors = 0, total;
    double t0, elapsed;
    unsigned char **sbuf, **rbuf;
    MPI_Request *reqs;
    size_t block, i;
    int *peers;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0) {
            fprintf(stderr, "usage: %s ITERATIONS BLOCK K\n", argv[0]);
        }
        MPI_Finalize();
        return 2;
    }
    iters = atoi(argv[1]);
    block = strtoul(argv[2], NULL, 0);
    k     = atoi(argv[3]);
    nn    = 2 * k;

    peers   = calloc(nn, sizeof(*peers));
    sbuf    = calloc(nn, sizeof(*sbuf));
    rbuf    = calloc(nn, sizeof(*rbuf));
    reqs    = calloc(2 * nn, sizeof(*reqs));
    a2a_out = calloc(size, sizeof(int));
    a2a_in  = calloc(size, sizeof(int));
    for (n = 0; n < nn; ++n) {
        d        = n / 2 + 1;
        peers[n] = (n % 2) ? (rank - d + size) % size : (rank + d) % size;
        sbuf[n]  = malloc(block);
        rbuf[n]  = malloc(block);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (it = 0; it < iters; ++it) {
        /* Message n goes to peers[n] with tag n; the peer receives it as
         * its message n^1 (the opposite direction), tag n */
        for (n = 0; n < nn; ++n) {
            peer = peers[n ^ 1];
            MPI_Irecv(rbuf[n], (int)block, MPI_BYTE, peer, n, MPI_COMM_WORLD,
                      &reqs[n]);
        }
        for (n = 0; n < nn; ++n) {
            for (i = 0; i < block; ++i) {
                sbuf[n][i] = pattern(rank, peers[n], it, i);
            }
            MPI_Isend(sbuf[n], (int)block, MPI_BYTE, peers[n], n,
                      MPI_COMM_WORLD, &reqs[nn + n]);
        }
        MPI_Waitall(2 * nn, reqs, MPI_STATUSES_IGNORE);
        for (n = 0; n < nn; ++n) {
            for (i = 0; i < block; ++i) {
                if (rbuf[n][i] != pattern(peers[n ^ 1], rank, it, i)) {
                    if (errors < 5) {
                        printf("rank %d iteration %d: byte %zu from %d is "
                               "0x%02x, expected 0x%02x\n", rank, it, i,
                               peers[n ^ 1], rbuf[n][i],
                               pattern(peers[n ^ 1], rank, it, i));
                    }
                    ++errors;
                    break;
                }
            }
        }
        if ((it % 10) == 0) {
            for (n = 0; n < size; ++n) {
                a2a_out[n] = rank * 100000 + n * 10 + it;
            }
            MPI_Alltoall(a2a_out, 1, MPI_INT, a2a_in, 1, MPI_INT,
                         MPI_COMM_WORLD);
            for (n = 0; n < size; ++n) {
                if (a2a_in[n] != n * 100000 + rank * 10 + it) {
                    ++errors;
                }
            }
        }
    }

    MPI_Barrier(MPI_COMM_WORLD);
    elapsed = MPI_Wtime() - t0;
    MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if ((rank == 0) && (total == 0)) {
        printf("HALO OK %d x %zu B, %d neighbours on %d ranks, %.1f us per "
               "iteration\n", iters, block, nn, size, elapsed * 1e6 / iters);
    } else if (rank == 0) {
        printf("HALO FAILED: %ld wrong blocks or values\n", total);
    }
    MPI_Finalize();
    return total != 0;
}
