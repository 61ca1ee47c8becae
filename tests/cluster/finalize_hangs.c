/* Preloaded into a benchmark (LD_PRELOAD), MPI_Finalize never returns:
 * the deadlock MPICH before 4.2 shows over UCX, made certain, so that a
 * test can prove what the benchmarks' finalize watchdog does about it. */
#include <mpi.h>
#include <unistd.h>

int MPI_Finalize(void)
{
    for (;;)
        pause();
    return PMPI_Finalize();
}
