/* Affinity probe: every rank reports host and CPU affinity, then exits.
 * Launched with the same launcher options just before a third-party
 * benchmark (OSU, IMB) that reports no placement itself, so that the suite
 * can validate the rank mapping those options produce. Takes only the
 * options common to every benchmark (--distinct-cpus). */
#include "../common/bench_common.h"

#include <stdio.h>

#define PROGRAM "affinity"

static const char usage[] = "usage: affinity [--distinct-cpus]\n";

int main(int argc, char **argv)
{
    char err[2048] = "";
    const sb_option table[] = {SB_OPTION_HELP("--help")};
    int parsed = sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, sizeof err);
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    int rc = sb_check_start(PROGRAM, parsed, err, 1);
    if (rc != 0)
        return rc;
    if (rank == 0)
        printf("SENTINEL_CONFIG bench=affinity ranks=%d\n", world);
    rc = sb_report_environment(MPI_COMM_WORLD) == 0 ? 0 : 3;
    if (rank == 0 && rc == 0)
        printf("SENTINEL_DONE bench=affinity\n");
    sb_finalize(PROGRAM);
    return rc;
}
