/* Helpers shared by every MPI Sentinel benchmark: argument parsing with
 * clear messages, statistics, the rank affinity report and the output format.
 *
 * Output format: one line per result, "SENTINEL_<KIND> key=value key=value",
 * values never contain spaces; a final "SENTINEL_DONE bench=<name>" line lets
 * parsers tell a complete output from a truncated one. */
#ifndef SENTINEL_BENCH_COMMON_H
#define SENTINEL_BENCH_COMMON_H

#include <mpi.h>
#include <stddef.h>

#define SB_MAX_LIST 64

/* A list of positive integers given as "a,b,c" on the command line. */
typedef struct {
    long values[SB_MAX_LIST];
    int count;
} sb_int_list;

/* Parse "a,b,c" into list; returns 0, or -1 after writing a message to err. */
int sb_parse_int_list(const char *option, const char *text, long min, long max,
                      sb_int_list *list, char *err, size_t errlen);

/* Parse one integer option value within [min, max]. */
int sb_parse_long(const char *option, const char *text, long min, long max,
                  long *value, char *err, size_t errlen);

/* Split a comma-separated list of names and check each against allowed[];
 * sets bit i of *mask for allowed[i]. */
int sb_parse_name_list(const char *option, const char *text,
                       const char *const allowed[], int nallowed,
                       unsigned *mask, char *err, size_t errlen);

/* The value of option argv[*i], advancing *i past it; NULL (after writing
 * "<option>: missing value (or unknown option)" and usage to err) at the end
 * of the command line. */
const char *sb_option_value(int argc, char **argv, int *i, const char *usage, char *err,
                            size_t errlen);

/* 0 when min <= max; else -1 after writing "--min-size A is larger than
 * --max-size B" to err. */
int sb_check_size_range(long min, long max, char *err, size_t errlen);

/* Median and minimum of n doubles; values is reordered. */
double sb_median(double *values, int n);
double sb_min(const double *values, int n);

/* Every rank of comm reports host and CPU affinity; rank 0 prints one
 * SENTINEL_AFFINITY line per rank, in rank order. */
int sb_report_affinity(MPI_Comm comm);

/* The placement of the calling thread, for threaded benchmarks:
 * "SENTINEL_THREAD rank=R thread=T cpu=C cpus=<affinity list>". */
void sb_thread_affinity_line(int rank, int thread, char *out, size_t len);

/* Rank 0 prints the MPI library's version string (first line). */
void sb_report_library(MPI_Comm comm);

/* Both of the above: the lines every benchmark prints before measuring. */
int sb_report_environment(MPI_Comm comm);

/* Rank 0 of comm prints err (prefixed with the program name) to stderr. */
void sb_error(MPI_Comm comm, const char *program, const char *err);

/* Start-up checks every two-rank benchmark makes: the option parser's result
 * (parse_rc != 0 prints err) and a world of at least 2 ranks. Returns 0 to go
 * on, or the exit code (2) after printing the problem and finalizing MPI. */
int sb_check_start(const char *program, int parse_rc, const char *err);

/* A communicator of world ranks 0 and 1 (MPI_COMM_NULL on the others). */
MPI_Comm sb_pair_comm(void);

#endif
