#define _GNU_SOURCE
#include "bench_common.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SB_LINE 2048

int sb_parse_long(const char *option, const char *text, long min, long max,
                  long *value, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') {
        snprintf(err, errlen, "%s: '%s' is not an integer", option, text);
        return -1;
    }
    if (v < min || v > max) {
        snprintf(err, errlen, "%s: %ld is out of range [%ld, %ld]", option, v,
                 min, max);
        return -1;
    }
    *value = v;
    return 0;
}

/* Copy a comma-separated option value into buf for strtok_r. */
static int copy_list(const char *option, const char *text, char *buf, size_t len,
                     char *err, size_t errlen)
{
    if (strlen(text) >= len) {
        snprintf(err, errlen, "%s: list is too long", option);
        return -1;
    }
    strcpy(buf, text);
    return 0;
}

int sb_parse_int_list(const char *option, const char *text, long min, long max,
                      sb_int_list *list, char *err, size_t errlen)
{
    char buf[SB_LINE];
    if (copy_list(option, text, buf, sizeof buf, err, errlen) != 0)
        return -1;
    list->count = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (list->count == SB_MAX_LIST) {
            snprintf(err, errlen, "%s: at most %d values", option, SB_MAX_LIST);
            return -1;
        }
        if (sb_parse_long(option, tok, min, max, &list->values[list->count],
                          err, errlen) != 0)
            return -1;
        list->count++;
    }
    if (list->count == 0) {
        snprintf(err, errlen, "%s: empty list", option);
        return -1;
    }
    return 0;
}

/* "<option>: unknown value '<text>' (allowed: a b c)" into err. */
static void unknown_value(const char *option, const char *text,
                          const char *const allowed[], int nallowed, char *err,
                          size_t errlen)
{
    int off = snprintf(err, errlen, "%s: unknown value '%s' (allowed:", option, text);
    for (int i = 0; i < nallowed && off > 0 && (size_t)off < errlen; i++)
        off += snprintf(err + off, errlen - (size_t)off, " %s", allowed[i]);
    if (off > 0 && (size_t)off < errlen)
        snprintf(err + off, errlen - (size_t)off, ")");
}

int sb_parse_name_list(const char *option, const char *text,
                       const char *const allowed[], int nallowed,
                       unsigned *mask, char *err, size_t errlen)
{
    char buf[SB_LINE];
    if (copy_list(option, text, buf, sizeof buf, err, errlen) != 0)
        return -1;
    *mask = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int i = 0; i < nallowed; i++)
            if (strcmp(tok, allowed[i]) == 0)
                found = i;
        if (found < 0) {
            unknown_value(option, tok, allowed, nallowed, err, errlen);
            return -1;
        }
        *mask |= 1u << found;
    }
    if (*mask == 0) {
        snprintf(err, errlen, "%s: empty list", option);
        return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sb_median(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, cmp_double);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double sb_percentile(double *values, long n, double q)
{
    qsort(values, (size_t)n, sizeof *values, cmp_double);
    long k = (long)ceil(q / 100.0 * (double)n);
    return values[(k < 1 ? 1 : k) - 1];
}

void sb_median_interval(double *values, int n, double *lo, double *hi)
{
    qsort(values, (size_t)n, sizeof *values, cmp_double);
    /* P(Bin(n, 1/2) <= k), summed in logs to stay finite for large n. */
    int j = 1;
    double below = 0.0; /* P(Bin(n, 1/2) <= k) */
    for (int k = 0; k < n / 2; k++) {
        below += exp(lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) - n * log(2.0));
        if (below > 0.025)
            break;
        j = k + 1;
    }
    if (j > (n + 1) / 2)
        j = (n + 1) / 2;
    *lo = values[j - 1];
    *hi = values[n - j];
}

double sb_min(const double *values, int n)
{
    double m = values[0];
    for (int i = 1; i < n; i++)
        if (values[i] < m)
            m = values[i];
    return m;
}

/* Format the CPU set as a compact range list, e.g. "0-3,8". */
static void format_cpuset(const cpu_set_t *set, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, set))
            continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
            last++;
        int w = last > cpu
                    ? snprintf(out + off, len - off, "%s%d-%d", off ? "," : "",
                               cpu, last)
                    : snprintf(out + off, len - off, "%s%d", off ? "," : "", cpu);
        if (w < 0 || (size_t)w >= len - off)
            return;
        off += (size_t)w;
        cpu = last;
    }
}

void sb_thread_affinity_line(int rank, int thread, char *out, size_t len)
{
    char cpus[SB_LINE - 300] = "unknown";
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) /* 0: the calling thread */
        format_cpuset(&set, cpus, sizeof cpus);
    snprintf(out, len, "SENTINEL_THREAD rank=%d thread=%d cpu=%d cpus=%s", rank, thread,
             sched_getcpu(), cpus);
}

void sb_host_name(char host[SB_HOST])
{
    const char *node = getenv("SLURMD_NODENAME");
    memset(host, 0, SB_HOST);
    if (node != NULL && node[0] != '\0')
        snprintf(host, SB_HOST, "%s", node);
    else if (gethostname(host, SB_HOST - 1) != 0)
        snprintf(host, SB_HOST, "unknown");
}

int sb_report_affinity(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char host[SB_HOST], cpus[SB_LINE - 300] = "unknown";
    char line[SB_LINE];
    sb_host_name(host);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        format_cpuset(&set, cpus, sizeof cpus);
    snprintf(line, sizeof line, "SENTINEL_AFFINITY rank=%d host=%s cpus=%s",
             rank, host, cpus);
    char *all = NULL;
    if (rank == 0) {
        all = malloc((size_t)size * SB_LINE);
        if (all == NULL) {
            fprintf(stderr, "affinity report: out of memory\n");
            return -1;
        }
    }
    MPI_Gather(line, SB_LINE, MPI_CHAR, all, SB_LINE, MPI_CHAR, 0, comm);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("%s\n", all + (size_t)r * SB_LINE);
        free(all);
        fflush(stdout);
    }
    return 0;
}

void sb_report_library(MPI_Comm comm)
{
    int rank, len = 0;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Comm_rank(comm, &rank);
    MPI_Get_library_version(version, &len);
    if (rank != 0)
        return;
    for (int i = 0; i < len; i++) {
        if (version[i] == '\n' || version[i] == '\r') {
            version[i] = '\0';
            break;
        }
        if (version[i] == ' ' || version[i] == '\t')
            version[i] = '_';
    }
    printf("SENTINEL_LIBRARY version=%s\n", version);
}

int sb_report_environment(MPI_Comm comm)
{
    sb_report_library(comm);
    return sb_report_affinity(comm);
}

void sb_error(MPI_Comm comm, const char *program, const char *err)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        fprintf(stderr, "%s: error: %s\n", program, err);
}

/* Where one rank may run, as sb_check_distinct_cpus gathers it. */
typedef struct {
    char host[SB_HOST];
    int known; /* sched_getaffinity succeeded */
    cpu_set_t cpus;
} rank_cpus;

/* Rank 0: the first problem among all[0..size-1], as the stdout line and the
 * stderr message; 0 when there is none. */
static int find_shared_cpus(const rank_cpus *all, int size, const char *program, char *line,
                            size_t linelen, char *msg, size_t msglen)
{
    for (int i = 0; i < size; i++) {
        if (all[i].known)
            continue;
        snprintf(line, linelen, "SENTINEL_ERROR bench=%s what=affinity_unknown host=%s rank=%d",
                 program, all[i].host, i);
        snprintf(msg, msglen, "rank %d on host %s cannot read its CPU affinity: cannot prove "
                 "that the ranks have CPUs of their own (--distinct-cpus)", i, all[i].host);
        return 1;
    }
    for (int i = 0; i < size; i++)
        for (int j = i + 1; j < size; j++) {
            if (strcmp(all[i].host, all[j].host) != 0)
                continue;
            cpu_set_t both;
            CPU_AND(&both, &all[i].cpus, &all[j].cpus);
            if (CPU_COUNT(&both) == 0)
                continue;
            char cpus[SB_LINE / 2];
            format_cpuset(&both, cpus, sizeof cpus);
            snprintf(line, linelen,
                     "SENTINEL_ERROR bench=%s what=shared_cpus host=%s ranks=%d,%d cpus=%s",
                     program, all[i].host, i, j, cpus);
            snprintf(msg, msglen, "ranks %d and %d share CPU(s) %s on host %s; stopped before "
                     "measuring: ranks that busy-poll one CPU take turns on it "
                     "(--distinct-cpus)", i, j, cpus, all[i].host);
            return 1;
        }
    return 0;
}

int sb_check_distinct_cpus(MPI_Comm comm, const char *program)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    rank_cpus mine;
    memset(&mine, 0, sizeof mine);
    sb_host_name(mine.host);
    CPU_ZERO(&mine.cpus);
    mine.known = sched_getaffinity(0, sizeof mine.cpus, &mine.cpus) == 0;
    rank_cpus *all = NULL;
    int verdict = 0; /* 0: distinct, 1: a problem, 2: rank 0 out of memory */
    if (rank == 0) {
        all = malloc((size_t)size * sizeof *all);
        verdict = all == NULL ? 2 : 0;
    }
    MPI_Bcast(&verdict, 1, MPI_INT, 0, comm);
    if (verdict == 0)
        MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, comm);
    if (rank == 0) {
        char line[SB_LINE], msg[SB_LINE];
        if (verdict == 2)
            snprintf(msg, sizeof msg, "--distinct-cpus: out of memory for %d ranks", size);
        else
            verdict = find_shared_cpus(all, size, program, line, sizeof line, msg, sizeof msg);
        if (verdict == 1) {
            printf("%s\n", line);
            fflush(stdout);
        }
        if (verdict != 0) {
            fprintf(stderr, "%s: error: %s\n", program, msg);
            fflush(stderr);
        }
        free(all);
    }
    MPI_Bcast(&verdict, 1, MPI_INT, 0, comm);
    return verdict == 0 ? 0 : -1;
}

int sb_check_start(const char *program, int parse_rc, const char *err, int min_ranks)
{
    int world;
    char msg[128];
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (parse_rc == 0 && world >= min_ranks) {
        if (!sb_distinct_cpus_requested() || sb_check_distinct_cpus(MPI_COMM_WORLD, program) == 0)
            return 0;
        MPI_Finalize();
        return 2;
    }
    if (parse_rc != 0) {
        sb_error(MPI_COMM_WORLD, program, err);
    } else {
        snprintf(msg, sizeof msg, "needs at least %d MPI ranks, got %d", min_ranks, world);
        sb_error(MPI_COMM_WORLD, program, msg);
    }
    MPI_Finalize();
    return 2;
}

MPI_Comm sb_pair_comm(void)
{
    int rank;
    MPI_Comm pair;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    return pair;
}

int sb_pair_main(int argc, char **argv, const sb_pair_bench *bench, void *options)
{
    int rank, world;
    char err[2048] = "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    int rc = sb_check_start(bench->program, bench->parse(argc, argv, options, err, sizeof err),
                            err, 2);
    if (rc != 0)
        return rc;
    if (bench->prepare != NULL && (rc = bench->prepare(options)) != 0) {
        MPI_Finalize();
        return rc;
    }
    if (rank == 0)
        bench->config(options, world);
    sb_report_environment(MPI_COMM_WORLD);
    MPI_Comm pair = sb_pair_comm();
    if (rank < 2) {
        rc = bench->run(pair, rank, options);
        MPI_Comm_free(&pair);
    }
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && rc == 0)
        printf("SENTINEL_DONE bench=%s\n", bench->program);
    sb_finalize(bench->program);
    return rc;
}

/* --distinct-cpus: set by sb_parse_options, read by sb_check_start. */
static int distinct_cpus;

static const sb_option common_options[] = {
    SB_OPTION_FLAG("--distinct-cpus", &distinct_cpus),
};

int sb_distinct_cpus_requested(void)
{
    return distinct_cpus;
}

/* The value of option argv[*i], advancing *i past it; NULL (after writing
 * the problem and usage to err) at the end of the command line. */
static const char *option_value(int argc, char **argv, int *i, const char *usage, char *err,
                                size_t errlen)
{
    if (*i + 1 >= argc) {
        snprintf(err, errlen, "%s: missing value (or unknown option)\n%s%s", argv[*i], usage,
                 SB_COMMON_USAGE);
        return NULL;
    }
    *i += 1;
    return argv[*i];
}

/* SB_NAME: the whole value is one of the names (no list). */
static int parse_name(const sb_option *opt, const char *text, char *err, size_t errlen)
{
    for (int i = 0; i < opt->nnames; i++)
        if (strcmp(text, opt->names[i]) == 0) {
            *opt->target.index = i;
            return 0;
        }
    unknown_value(opt->name, text, opt->names, opt->nnames, err, errlen);
    return -1;
}

static int parse_value(const sb_option *opt, const char *text, char *err, size_t errlen)
{
    switch (opt->kind) {
    case SB_LONG:
        return sb_parse_long(opt->name, text, opt->min, opt->max, opt->target.number, err,
                             errlen);
    case SB_LIST:
        return sb_parse_int_list(opt->name, text, opt->min, opt->max, opt->target.list, err,
                                 errlen);
    case SB_NAMES:
        return sb_parse_name_list(opt->name, text, opt->names, opt->nnames, opt->target.mask,
                                  err, errlen);
    case SB_NAME:
        return parse_name(opt, text, err, errlen);
    case SB_CUSTOM:
        return opt->parse(opt, text, err, errlen);
    case SB_FLAG:
    case SB_HELP:
        break;
    }
    return -1;
}

/* SENTINEL_FINALIZE_TIMEOUT in seconds (SB_FINALIZE_TIMEOUT_S when unset or
 * empty); -1 for a value that is not a whole number of seconds, said in err. */
static long finalize_timeout_env(char *err, size_t errlen)
{
    const char *env = getenv("SENTINEL_FINALIZE_TIMEOUT");
    if (env == NULL || *env == '\0')
        return SB_FINALIZE_TIMEOUT_S;
    char *end = NULL;
    errno = 0;
    long value = strtol(env, &end, 10);
    if (*end == '\0' && errno == 0 && value >= 0 && value <= 86400)
        return value;
    if (err != NULL)
        snprintf(err, errlen, "SENTINEL_FINALIZE_TIMEOUT='%s' is not a whole number of seconds "
                 "from 0 (wait for ever) to 86400", env);
    return -1;
}

int sb_parse_target_time(const sb_option *opt, const char *val, char *err, size_t errlen)
{
    double *target = opt->target.custom;
    char *end = NULL;
    *target = strtod(val, &end);
    if (end == val || *end != '\0' || !(*target > 0.0 && *target <= 3600.0)) {
        snprintf(err, errlen, "--target-time: '%s' is not a number of seconds in (0, 3600]",
                 val);
        return -1;
    }
    return 0;
}

int sb_parse_options(int argc, char **argv, const sb_option *table, int n,
                     const char *usage, char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        const sb_option *opt = NULL;
        for (int k = 0; k < n && opt == NULL; k++)
            if (strcmp(name, table[k].name) == 0)
                opt = &table[k];
        for (int k = 0; k < SB_COUNT(common_options) && opt == NULL; k++)
            if (strcmp(name, common_options[k].name) == 0)
                opt = &common_options[k];
        if (opt != NULL && opt->kind == SB_HELP) {
            snprintf(err, errlen, "%s%s", usage, SB_COMMON_USAGE);
            return -1;
        }
        if (opt != NULL && opt->kind == SB_FLAG) {
            *opt->target.flag = 1;
            continue;
        }
        /* The value is taken before the name is judged: an unknown option
         * last on the line is reported as missing its value. */
        const char *val = option_value(argc, argv, &i, usage, err, errlen);
        if (val == NULL)
            return -1;
        if (opt == NULL) {
            snprintf(err, errlen, "unknown option '%s'\n%s%s", name, usage, SB_COMMON_USAGE);
            return -1;
        }
        if (parse_value(opt, val, err, errlen) != 0)
            return -1;
    }
    return finalize_timeout_env(err, errlen) < 0 ? -1 : 0;
}

long sb_sample_count(const sb_samples *s, int windowed, long size)
{
    if (windowed)
        return size > SB_LARGE ? s->windows_large : s->windows;
    return size > SB_LARGE ? s->iterations_large : s->iterations;
}

long sb_warmup_count(const sb_samples *s, long count)
{
    return (s->warmup * count + s->iterations - 1) / s->iterations;
}

void sb_print_samples(const sb_samples *s)
{
    printf(" iterations=%ld iterations_large=%ld windows=%ld windows_large=%ld "
           "repetitions=%ld warmup=%ld window=%ld", s->iterations, s->iterations_large,
           s->windows, s->windows_large, s->repetitions, s->warmup, s->window);
}

int sb_check_size_range(long min, long max, char *err, size_t errlen)
{
    if (min <= max)
        return 0;
    snprintf(err, errlen, "--min-size %ld is larger than --max-size %ld", min, max);
    return -1;
}

/* What the watchdog says if MPI_Finalize does not return: set before it starts. */
static char finalize_message[256];
static int finalize_message_len;
static unsigned finalize_timeout_s;

static void *finalize_watchdog(void *unused)
{
    (void)unused;
    unsigned left = finalize_timeout_s;
    while (left > 0)
        left = sleep(left);
    /* write and _exit only: the main thread is inside the MPI library */
    if (write(STDERR_FILENO, finalize_message, (size_t)finalize_message_len) < 0)
        _exit(7);
    _exit(6);
}

void sb_finalize(const char *program)
{
    int rank = 0;
    long timeout = finalize_timeout_env(NULL, 0);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (timeout < 0) /* refused by sb_parse_options before anything ran */
        timeout = SB_FINALIZE_TIMEOUT_S;
    fflush(stdout);
    fflush(stderr);
    if (timeout > 0) {
        finalize_timeout_s = (unsigned)timeout;
        finalize_message_len = snprintf(finalize_message, sizeof finalize_message,
                                        "%s: error: rank %d: MPI_Finalize did not return "
                                        "within %ld s\n", program, rank, timeout);
        if (finalize_message_len >= (int)sizeof finalize_message)
            finalize_message_len = (int)sizeof finalize_message - 1;
        pthread_t watchdog;
        if (pthread_create(&watchdog, NULL, finalize_watchdog, NULL) == 0)
            pthread_detach(watchdog);
    }
    MPI_Finalize();
}

unsigned char sb_pattern_byte(long size, long msg, int from, long offset)
{
    unsigned long seed = (unsigned long)size * 2654435761ul + (unsigned long)msg * 40503ul +
                         (unsigned long)from * 977ul;
    return (unsigned char)((seed >> 3) + (unsigned long)offset * 131ul +
                           ((unsigned long)offset >> 8));
}

void sb_pattern_fill(char *buf, long size, long msg, int from)
{
    for (long k = 0; k < size; k++)
        buf[k] = (char)sb_pattern_byte(size, msg, from, k);
}

void sb_pattern_check(const char *buf, long size, long msg, int from, sb_verdict *v)
{
    for (long k = 0; k < size; k++) {
        unsigned char want = sb_pattern_byte(size, msg, from, k);
        if ((unsigned char)buf[k] == want)
            continue;
        if (v->errors++ == 0) {
            v->message = msg;
            v->offset = k;
            v->expected = want;
            v->got = (unsigned char)buf[k];
        }
        return;
    }
}
