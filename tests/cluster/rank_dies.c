/* Rank 0 dies of SIGSEGV right after MPI_Init; every other rank waits in
 * MPI_Recv for a message from it that never comes. What a launcher does
 * then is the question (tests/integration/test_slurm_local.py). */
#include <mpi.h>
#include <signal.h>

int main(int argc, char **argv)
{
    int rank, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        raise(SIGSEGV);
    MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
