#include "bench_omp.h"

#include "bench_common.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define THREAD_LINE 256

int sb_report_threads(MPI_Comm comm, int threads)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char *mine = calloc((size_t)threads, THREAD_LINE), *all = NULL;
    if (rank == 0)
        all = calloc((size_t)threads * (size_t)size, THREAD_LINE);
    int ok = mine != NULL && (rank != 0 || all != NULL);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if (!ok) {
        free(mine);
        free(all);
        return -1;
    }
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        sb_thread_affinity_line(rank, t, mine + (size_t)t * THREAD_LINE, THREAD_LINE);
    }
    MPI_Gather(mine, threads * THREAD_LINE, MPI_CHAR, all, threads * THREAD_LINE, MPI_CHAR, 0,
               comm);
    if (rank == 0) {
        for (int i = 0; i < threads * size; i++)
            printf("%s\n", all + (size_t)i * THREAD_LINE);
        fflush(stdout);
    }
    free(mine);
    free(all);
    return 0;
}

const char *sb_thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "unknown";
    }
}

int sb_require_thread_level(const char *program, const char *mode, int required,
                            int provided)
{
    if (provided >= required)
        return 0;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        fprintf(stderr, "%s: error: mode %s needs %s, the MPI library provides %s\n", program,
                mode, sb_thread_level_name(required), sb_thread_level_name(provided));
        printf("SENTINEL_UNSUPPORTED bench=%s mode=%s required=%s provided=%s\n", program,
               mode, sb_thread_level_name(required), sb_thread_level_name(provided));
        fflush(stdout);
    }
    MPI_Finalize();
    return 4;
}

int sb_start_threaded(int *argc, char ***argv, const char *program, int parse_rc,
                      const char *err, int min_ranks, const char *mode, int required,
                      int *provided)
{
    MPI_Init_thread(argc, argv, required, provided);
    int rc = sb_check_start(program, parse_rc, err, min_ranks);
    if (rc != 0)
        return rc;
    return sb_require_thread_level(program, mode, required, *provided);
}
