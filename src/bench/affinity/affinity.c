/* Affinity probe: every rank reports host and CPU affinity, then exits.
 * Launched with the same launcher options just before a third-party
 * benchmark (OSU, IMB) that reports no placement itself, so that the suite
 * can validate the rank mapping those options produce. */
#include "../common/bench_common.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (argc > 1) {
        sb_error(MPI_COMM_WORLD, "affinity", "takes no arguments");
        MPI_Finalize();
        return 2;
    }
    if (rank == 0)
        printf("SENTINEL_CONFIG bench=affinity ranks=%d\n", world);
    int rc = sb_report_environment(MPI_COMM_WORLD) == 0 ? 0 : 3;
    if (rank == 0 && rc == 0)
        printf("SENTINEL_DONE bench=affinity\n");
    MPI_Finalize();
    return rc;
}
