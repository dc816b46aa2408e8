/*
 * MPI_Finalize as a barrier: rank 0 enters it 2 s after the others, and
 * every rank prints when it entered and left (wall clock, the hosts of
 * contrib/cluster-one-host.sh share one). Open MPI's pml ucx closes its
 * endpoints and then waits in a PMIx fence before it destroys its worker;
 * a launcher whose fence does not hold leaves ranks that destroy their
 * queue pairs while other ranks still flush to them. qpx-cluster.sh checks
 * that no rank left before rank 0 entered.
 *
 * Usage: qpx_mpi_finalize_order [delay_ms]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double qpx_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int delay_ms = (argc > 1) ? atoi(argv[1]) : 2000;
    double enter, leave;
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        usleep(delay_ms * 1000);
    }
    enter = qpx_now();
    MPI_Finalize();
    leave = qpx_now();
    printf("FINALIZE rank %d of %d enter %.6f leave %.6f\n", rank, size,
           enter, leave);
    return 0;
}
