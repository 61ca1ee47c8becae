/* Helpers shared by every MPI Sentinel benchmark: argument parsing with
 * clear messages, the start-up, statistics, the rank affinity report and the
 * output format.
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

/* How sb_parse_options reads the value of one option. */
typedef enum {
    SB_LONG,   /* an integer in [min, max], as sb_parse_long */
    SB_LIST,   /* integers in [min, max], as sb_parse_int_list */
    SB_NAMES,  /* names of names[], as sb_parse_name_list: a bit mask */
    SB_NAME,   /* exactly one of names[]: its index */
    SB_CUSTOM, /* parse(option, value, err, errlen) */
    SB_FLAG,   /* takes no value: sets *flag to 1 */
    SB_HELP    /* takes no value: the usage is written to err */
} sb_opt_kind;

typedef struct sb_option sb_option;

/* One option of a benchmark's command line. The SB_OPTION_* macros below
 * fill the fields its kind uses; the union checks the target's type (but for
 * SB_CUSTOM, whose parser knows it). */
struct sb_option {
    const char *name;
    sb_opt_kind kind;
    union {
        long *number;
        sb_int_list *list;
        unsigned *mask;
        int *index;
        int *flag;
        void *custom;
    } target;
    long min, max;
    const char *const *names;
    int nnames;
    int (*parse)(const sb_option *option, const char *value, char *err, size_t errlen);
};

#define SB_OPTION_LONG(opt, var, lo, hi) \
    {.name = (opt), .kind = SB_LONG, .target.number = (var), .min = (lo), .max = (hi)}
#define SB_OPTION_LIST(opt, var, lo, hi) \
    {.name = (opt), .kind = SB_LIST, .target.list = (var), .min = (lo), .max = (hi)}
#define SB_OPTION_NAMES(opt, var, allowed, n) \
    {.name = (opt), .kind = SB_NAMES, .target.mask = (var), .names = (allowed), .nnames = (n)}
#define SB_OPTION_NAME(opt, var, allowed, n) \
    {.name = (opt), .kind = SB_NAME, .target.index = (var), .names = (allowed), .nnames = (n)}
#define SB_OPTION_CUSTOM(opt, var, fn) \
    {.name = (opt), .kind = SB_CUSTOM, .target.custom = (var), .parse = (fn)}
#define SB_OPTION_FLAG(opt, var) {.name = (opt), .kind = SB_FLAG, .target.flag = (var)}
#define SB_OPTION_HELP(opt) {.name = (opt), .kind = SB_HELP}

#define SB_COUNT(array) ((int)(sizeof(array) / sizeof *(array)))

/* The options every benchmark takes besides its own (sb_parse_options reads
 * them; sb_check_start acts on them), and their usage lines. */
#define SB_COMMON_USAGE                                                              \
    "  --distinct-cpus  before measuring, stop (exit 2) if two ranks of one host\n" \
    "                 share a CPU: ranks that busy-poll one core take turns on it\n"

/* Parse "--option value" pairs (and value-less SB_FLAG and SB_HELP options)
 * of argv[1..] into the targets of table[0..n-1] and of the common options
 * (SB_COMMON_USAGE); options not given keep their values. Returns 0, or -1
 * after writing to err the problem: "<option>: missing value (or unknown
 * option)" and usage when the command line ends before a value, "unknown
 * option '<option>'" and usage, or the message of the value's parser. The
 * usage written is `usage` followed by SB_COMMON_USAGE. */
int sb_parse_options(int argc, char **argv, const sb_option *table, int n,
                     const char *usage, char *err, size_t errlen);

/* Whether --distinct-cpus was given to sb_parse_options. */
int sb_distinct_cpus_requested(void);

/* An SB_CUSTOM parser of a --target-time: seconds in (0, 3600] into the
 * double at opt->target.custom (the benchmarks that time each point for a
 * while: hybrid, msgrate). */
int sb_parse_target_time(const sb_option *opt, const char *val, char *err, size_t errlen);

/* The sample counts of the benchmarks that time batches of operations
 * (pt2pt, rma): per sample, `iterations` operations (`iterations_large`
 * above SB_LARGE bytes) or, windowed, `windows` windows of `window`
 * operations (`windows_large` above); `repetitions` samples a value, after
 * `warmup` untimed operations scaled by the sample's count over `iterations`. */
#define SB_LARGE 65536
typedef struct {
    long iterations, iterations_large, windows, windows_large, repetitions, warmup, window;
} sb_samples;

/* The options of an sb_samples (in a benchmark's sb_option table). */
#define SB_SAMPLE_OPTIONS(s)                                                          \
    SB_OPTION_LONG("--iterations", &(s)->iterations, 1, 100000000),                   \
    SB_OPTION_LONG("--iterations-large", &(s)->iterations_large, 1, 100000000),       \
    SB_OPTION_LONG("--windows", &(s)->windows, 1, 100000000),                         \
    SB_OPTION_LONG("--windows-large", &(s)->windows_large, 1, 100000000),             \
    SB_OPTION_LONG("--repetitions", &(s)->repetitions, 1, 100000),                    \
    SB_OPTION_LONG("--warmup", &(s)->warmup, 0, 100000000),                           \
    SB_OPTION_LONG("--window", &(s)->window, 1, 4096)

/* Operations (windows, when windowed) per sample of `size` bytes. */
long sb_sample_count(const sb_samples *s, int windowed, long size);

/* Untimed operations before the samples of `count`: --warmup scaled by
 * count over --iterations, rounded up (as OSU skips 10 of 100 windows). */
long sb_warmup_count(const sb_samples *s, long count);

/* " iterations=I iterations_large=... window=W": the counts, for a
 * SENTINEL_CONFIG line. */
void sb_print_samples(const sb_samples *s);

/* 0 when min <= max; else -1 after writing "--min-size A is larger than
 * --max-size B" to err. */
int sb_check_size_range(long min, long max, char *err, size_t errlen);

/* Median and minimum of n doubles; values is reordered. */
double sb_median(double *values, int n);
double sb_min(const double *values, int n);

/* The q-th percentile (0 < q <= 100, nearest rank) of n doubles; values is
 * reordered (sorted). */
double sb_percentile(double *values, long n, double q);

/* The distribution-free interval of the median of n doubles (values is
 * sorted): the order statistics x(j) and x(n+1-j), j the largest rank with
 * P(Binomial(n, 1/2) < j) <= 0.025, so that it covers the median with at
 * least 95 % probability (the range, x(1) .. x(n), below 9 samples). */
void sb_median_interval(double *values, int n, double *lo, double *hi);

/* Payload verification (--verify): byte `offset` of message `msg` of `size`
 * bytes sent by rank `from`, a pattern of its own per message and sender;
 * a buffer filled with it; and a received buffer checked against it, the
 * first wrong byte of the first wrong message kept in *v. */
typedef struct {
    long errors, message, offset; /* messages with a wrong byte; the first one and where */
    int expected, got;
} sb_verdict;
unsigned char sb_pattern_byte(long size, long msg, int from, long offset);
void sb_pattern_fill(char *buf, long size, long msg, int from);
void sb_pattern_check(const char *buf, long size, long msg, int from, sb_verdict *v);

/* Every rank of comm reports host and CPU affinity; rank 0 prints one
 * SENTINEL_AFFINITY line per rank, in rank order. */
int sb_report_affinity(MPI_Comm comm);

/* The placement of the calling thread, for threaded benchmarks:
 * "SENTINEL_THREAD rank=R thread=T cpu=C cpus=<affinity list>". */
void sb_thread_affinity_line(int rank, int thread, char *out, size_t len);

/* Rank 0 prints the MPI library's version string (first line). */
void sb_report_library(MPI_Comm comm);

/* The node as the scheduler knows it ($SLURMD_NODENAME, else the host name):
 * several slurmd may share a host (a test cluster), and a site's node names
 * are what an admin reads. */
#define SB_HOST 256
void sb_host_name(char host[SB_HOST]);

/* Both of the above: the lines every benchmark prints before measuring. */
int sb_report_environment(MPI_Comm comm);

/* Rank 0 of comm prints err (prefixed with the program name) to stderr. */
void sb_error(MPI_Comm comm, const char *program, const char *err);

/* Proves, before any measurement, that no two ranks of comm on one host (as
 * sb_report_affinity names hosts) have overlapping CPU sets. Collective;
 * returns 0 on every rank when they are distinct. Otherwise, on every rank,
 * -1, after rank 0 printed one line on stdout for the first such pair i < j
 * (in rank order), e.g.
 *   SENTINEL_ERROR bench=<program> what=shared_cpus host=vm ranks=0,1 cpus=0
 * (cpus: the CPUs both have, as in SENTINEL_AFFINITY) and on stderr
 *   <program>: error: ranks 0 and 1 share CPU(s) 0 on host vm; ...
 * A rank that cannot read its affinity gives what=affinity_unknown rank=R. */
int sb_check_distinct_cpus(MPI_Comm comm, const char *program);

/* Seconds sb_finalize waits for MPI_Finalize (SENTINEL_FINALIZE_TIMEOUT
 * overrides; 0 waits for ever; sb_parse_options refuses any other value
 * than a whole number of seconds up to a day, naming it). */
#define SB_FINALIZE_TIMEOUT_S 60

/* MPI_Finalize, after the results are out, under a watchdog: a rank whose
 * MPI_Finalize has not returned after the timeout prints on stderr
 *   <program>: error: rank R: MPI_Finalize did not return within N s
 * and exits with status 6, so that a library that deadlocks in its
 * shutdown (MPICH before 4.2 over UCX) ends its launch in seconds instead
 * of holding the job to its time limit. */
void sb_finalize(const char *program);

/* Start-up checks of the benchmarks that take options: the option parser's result
 * (parse_rc != 0 prints err), a world of at least min_ranks ranks and, when
 * --distinct-cpus was given, sb_check_distinct_cpus on MPI_COMM_WORLD.
 * Returns 0 to go on, or the exit code (2) after printing the problem and
 * finalizing MPI. */
int sb_check_start(const char *program, int parse_rc, const char *err, int min_ranks);

/* A benchmark between world ranks 0 and 1 (higher ranks idle), for
 * sb_pair_main. */
typedef struct {
    const char *program;
    /* Fills *options, or returns -1 after writing the problem to err. */
    int (*parse)(int argc, char **argv, void *options, char *err, size_t errlen);
    /* Collective on MPI_COMM_WORLD after the start-up checks, before config:
     * acquires what run needs besides memory (a GPU, sb_gpu_setup). Returns
     * 0 on every rank, or the exit code on every rank after rank 0 printed
     * the problem. NULL: nothing to acquire. */
    int (*prepare)(void *options);
    /* Prints the SENTINEL_CONFIG line (rank 0). */
    void (*config)(const void *options, int world);
    /* Measures, on ranks 0 and 1 of pair; returns 0 or the exit code. */
    int (*run)(MPI_Comm pair, int rank, const void *options);
} sb_pair_bench;

/* main() of a two-rank benchmark: MPI_Init, parse into options, the checks of
 * sb_check_start (2 ranks), prepare (if any) on every rank, config on rank 0,
 * sb_report_environment, run on ranks 0 and 1. Returns the largest exit code
 * of all ranks, after rank 0 printed "SENTINEL_DONE bench=<program>" if it is
 * 0 and MPI was finalized (prepare's exit code, MPI finalized, when it fails). */
int sb_pair_main(int argc, char **argv, const sb_pair_bench *bench, void *options);

/* A communicator of world ranks 0 and 1 (MPI_COMM_NULL on the others). */
MPI_Comm sb_pair_comm(void);

#endif
