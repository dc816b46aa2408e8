/* qpx_ud under Open MPI: ping-pong of 1 B..1 MB with content checks, allreduce */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    int rank, size, i, n, errors = 0, sizes[] = {1, 64, 4000, 65536, 1 << 20};
    char *buf;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    buf = malloc(1 << 20);
    for (n = 0; n < 5; ++n) {
        for (i = 0; i < 50; ++i) {
            if (rank == 0) {
                memset(buf, (i + n) & 0xff, sizes[n]);
                MPI_Send(buf, sizes[n], MPI_CHAR, 1, i, MPI_COMM_WORLD);
                MPI_Recv(buf, sizes[n], MPI_CHAR, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (buf[sizes[n] - 1] != (char)((i + n + 1) & 0xff)) errors++;
            } else {
                MPI_Recv(buf, sizes[n], MPI_CHAR, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (buf[0] != (char)((i + n) & 0xff)) errors++;
                memset(buf, (i + n + 1) & 0xff, sizes[n]);
                MPI_Send(buf, sizes[n], MPI_CHAR, 0, i, MPI_COMM_WORLD);
            }
        }
    }
    {
        long v = rank + 1, sum = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (sum != (long)size * (size + 1) / 2) errors++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d of %d: %d errors\n", rank, size, errors);
    MPI_Finalize();
    return errors != 0;
}
