/*
 * Many-rank MPI_Alltoall with every byte checked: each rank sends every
 * peer (itself included) a block whose bytes encode (iteration, source,
 * destination, offset), and checks every byte it receives.
 *
 * usage: qpx_mpi_alltoall ITERATIONS BLOCK_BYTES
 * Rank 0 prints "ALLTOALL OK <iterations> x <bytes> on <n> ranks" when
 * every byte of every iteration was right; any rank exits 1 otherwise.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>


static unsigned char pattern(int iter, int src, int dst, size_t off)
{
    return (unsigned char)((iter * 131) ^ (src * 31) ^ (dst * 7) ^
                           (off * 2654435761u >> 13));
}


int main(int argc, char **argv)
{
    unsigned char *sbuf, *rbuf;
    int rank, nprocs, iters, it, p, bad_total, bad = 0;
    size_t block, off;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 3) {
        if (rank == 0) {
            fprintf(stderr, "usage: %s ITERATIONS BLOCK_BYTES\n", argv[0]);
        }
        MPI_Finalize();
        return 1;
    }
    iters = atoi(argv[1]);
    block = strtoul(argv[2], NULL, 0);

    sbuf = malloc(block * nprocs);
    rbuf = malloc(block * nprocs);
    if ((sbuf == NULL) || (rbuf == NULL)) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    for (it = 0; it < iters; ++it) {
        for (p = 0; p < nprocs; ++p) {
            for (off = 0; off < block; ++off) {
                sbuf[p * block + off] = pattern(it, rank, p, off);
            }
        }
        for (off = 0; off < block * nprocs; ++off) {
            rbuf[off] = 0xee;
        }
        MPI_Alltoall(sbuf, (int)block, MPI_BYTE, rbuf, (int)block, MPI_BYTE,
                     MPI_COMM_WORLD);
        for (p = 0; p < nprocs; ++p) {
            for (off = 0; off < block; ++off) {
                if (rbuf[p * block + off] != pattern(it, p, rank, off)) {
                    if (bad < 5) {
                        fprintf(stderr, "rank %d iter %d: byte %zu from rank "
                                "%d is 0x%02x, expected 0x%02x\n", rank, it,
                                off, p, rbuf[p * block + off],
                                pattern(it, p, rank, off));
                    }
                    ++bad;
                    break;
                }
            }
        }
    }

    MPI_Reduce(&bad, &bad_total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if ((rank == 0) && (bad_total == 0)) {
        printf("ALLTOALL OK %d x %zu on %d ranks\n", iters, block, nprocs);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return bad ? 1 : 0;
}
