/* Helpers for the suite's MPI + OpenMP benchmarks (built with -fopenmp). */
#ifndef SENTINEL_BENCH_OMP_H
#define SENTINEL_BENCH_OMP_H

#include <mpi.h>

/* Every thread of every rank of comm reports its placement; rank 0 prints
 * one SENTINEL_THREAD line per thread, in rank and thread order. Returns 0,
 * or -1 (on every rank) when a buffer cannot be allocated. */
int sb_report_threads(MPI_Comm comm, int threads);

#endif
