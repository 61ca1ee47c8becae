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
