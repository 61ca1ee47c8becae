/* Helpers for the suite's MPI + OpenMP benchmarks (built with -fopenmp). */
#ifndef SENTINEL_BENCH_OMP_H
#define SENTINEL_BENCH_OMP_H

#include <mpi.h>

/* Every thread of every rank of comm reports its placement; rank 0 prints
 * one SENTINEL_THREAD line per thread, in rank and thread order. Returns 0,
 * or -1 (on every rank) when a buffer cannot be allocated. */
int sb_report_threads(MPI_Comm comm, int threads);

/* The name of an MPI thread support level ("MPI_THREAD_FUNNELED"). */
const char *sb_thread_level_name(int level);

/* 0 when provided >= required. Otherwise rank 0 says on stderr that `mode`
 * of `program` needs `required`, prints "SENTINEL_UNSUPPORTED bench=<program>
 * mode=<mode> required=... provided=...", MPI is finalized and 4 returned. */
int sb_require_thread_level(const char *program, const char *mode, int required,
                            int provided);

/* Start-up of a benchmark whose mode picks the thread level, its options
 * parsed before MPI (parse_rc, err): MPI_Init_thread asking for `required`,
 * the checks of sb_check_start (at least min_ranks ranks), then those of
 * sb_require_thread_level for `mode` (unused when parse_rc != 0). Returns 0
 * with *provided set, or the exit code (MPI finalized). */
int sb_start_threaded(int *argc, char ***argv, const char *program, int parse_rc,
                      const char *err, int min_ranks, const char *mode, int required,
                      int *provided);

#endif
