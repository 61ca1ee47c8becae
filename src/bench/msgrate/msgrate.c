/* Multithreaded message rate between two processes (MPI_THREAD_MULTIPLE).
 *
 * World ranks 0 and 1 each run up to OMP_NUM_THREADS OpenMP threads; for
 * every count T of --thread-counts (1,2,4 by default, each at most
 * OMP_NUM_THREADS) thread t < T of rank 0 sends windows of --window
 * messages of --size bytes (MPI_Isend) to thread t of rank 1, which posts as
 * many MPI_Irecv and answers each window with a zero-byte message, as
 * osu_mbw_mr does per pair and osu_latency_mt / IMB-MT per thread. Each
 * thread pair has its own communicator (--space comm, a duplicate of the
 * pair's each) or its own tag on one (--space tag). For each T the window
 * count doubles from 1 until a timed run lasts --target-time / --repetitions
 * seconds; --repetitions runs of that count are timed, and the median rate
 * (messages per second, all T threads' together) with the order-statistics
 * interval of the median is printed.
 *
 * Every message is a pattern of its own (thread, place in the window), set
 * before the timed runs; after each timed run every receiving thread checks
 * its last window (outside the timed region): wrong= counts messages with a
 * wrong byte.
 *
 * --serialise makes every MPI call of every thread hold one process-wide
 * lock: the threads take turns in the library, as under one that serialises
 * them with a global lock. It is the test of the suite's verdict, never a
 * site's setting. */
#define _GNU_SOURCE
#include "../common/bench_common.h"
#include "../common/bench_omp.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "msgrate"
#define MAX_REPS 1000

enum { SPACE_COMM, SPACE_TAG, NSPACE };
static const char *const space_names[NSPACE] = {"comm", "tag"};

typedef struct {
    sb_int_list counts;
    int space, serialise;
    long size, window, repetitions;
    double target;
} options;

typedef struct {
    int rank, threads;
    MPI_Comm pair;
    MPI_Comm *comm;      /* per thread: its communicator (--space comm) or pair */
    char **bufs;         /* per thread: window x size bytes */
    MPI_Request **reqs;  /* per thread: window requests */
    MPI_Status **stats;  /* per thread: their statuses (MPICH's MPI_Waitall is declared
                          * to write them, so MPI_STATUSES_IGNORE fails -Werror) */
    omp_lock_t lock;     /* --serialise */
} context;

static const char usage[] =
    "usage: msgrate [--thread-counts T,T,...] [--size B] [--window W] [--space comm|tag]\n"
    "               [--target-time S] [--repetitions R] [--serialise]\n"
    "  thread counts (1,2,4), each at most OMP_NUM_THREADS; --size (8) bytes per\n"
    "  message; --window (64) messages per window before the receiver answers;\n"
    "  --space: a communicator (comm, the default) or a tag (tag) per thread pair;\n"
    "  --target-time (1.0) seconds per thread count, shared by its --repetitions (6)\n"
    "  timed runs; --serialise: one lock held across every window (the verdict's test)\n";

static int parse_options(int argc, char **argv, options *o, char *err, size_t errlen)
{
    *o = (options){.counts = {{1, 2, 4}, 3}, .space = SPACE_COMM, .size = 8, .window = 64,
                   .repetitions = 6, .target = 1.0};
    const sb_option table[] = {
        SB_OPTION_LIST("--thread-counts", &o->counts, 1, 4096),
        SB_OPTION_NAME("--space", &o->space, space_names, NSPACE),
        SB_OPTION_LONG("--size", &o->size, 0, 1L << 20),
        SB_OPTION_LONG("--window", &o->window, 1, 4096),
        SB_OPTION_CUSTOM("--target-time", &o->target, sb_parse_target_time),
        SB_OPTION_LONG("--repetitions", &o->repetitions, 1, MAX_REPS),
        SB_OPTION_FLAG("--serialise", &o->serialise),
    };
    return sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, errlen);
}

/* MPI_Waitall of n requests; under --serialise, each test holds the lock. */
static void wait_all(context *c, const options *o, int n, MPI_Request *reqs, MPI_Status *stats)
{
    if (!o->serialise) {
        MPI_Waitall(n, reqs, stats);
        return;
    }
    for (int done = 0; !done;) {
        omp_set_lock(&c->lock);
        MPI_Testall(n, reqs, &done, stats);
        omp_unset_lock(&c->lock);
    }
}

/* One window of thread t: rank 0 sends --window messages and waits for the
 * answer, rank 1 receives them and answers. Under --serialise every MPI
 * call holds the process's one lock, as in a library with a global lock
 * (blocking waits become tests, each under the lock, as such a library
 * releases it while it waits). */
static void window(context *c, const options *o, int t)
{
    static char answer;
    int peer = 1 - c->rank, tag = o->space == SPACE_TAG ? t + 1 : 1;
    int count = (int)o->size;
    MPI_Comm comm = c->comm[t];
    MPI_Request *reqs = c->reqs[t];
    for (long w = 0; w < o->window; w++) {
        char *buf = c->bufs[t] + w * o->size;
        if (o->serialise)
            omp_set_lock(&c->lock);
        if (c->rank == 0)
            MPI_Isend(buf, count, MPI_CHAR, peer, tag, comm, &reqs[w]);
        else
            MPI_Irecv(buf, count, MPI_CHAR, peer, tag, comm, &reqs[w]);
        if (o->serialise)
            omp_unset_lock(&c->lock);
    }
    wait_all(c, o, (int)o->window, reqs, c->stats[t]);
    if (o->serialise)
        omp_set_lock(&c->lock);
    if (c->rank == 0)
        MPI_Irecv(&answer, 0, MPI_CHAR, peer, tag, comm, &reqs[0]);
    else
        MPI_Isend(&answer, 0, MPI_CHAR, peer, tag, comm, &reqs[0]);
    if (o->serialise)
        omp_unset_lock(&c->lock);
    wait_all(c, o, 1, reqs, c->stats[t]);
}

/* Messages of thread t's last window (receiver) with a wrong byte. */
static long check_window(const context *c, const options *o, int t)
{
    sb_verdict v = {0};
    for (long w = 0; w < o->window; w++)
        sb_pattern_check(c->bufs[t] + w * o->size, o->size, t * o->window + w, 0, &v);
    return v.errors;
}

/* Seconds of one timed run of `windows` windows by each of `threads`
 * threads, after a barrier; the receiver's buffers cleared before and its
 * last windows checked after (outside the timed region). */
static double timed(context *c, const options *o, int threads, long windows, long *bad)
{
    if (c->rank == 1)
        for (int t = 0; t < threads; t++)
            memset(c->bufs[t], 0, (size_t)(o->window * o->size));
    MPI_Barrier(c->pair);
    double t0 = MPI_Wtime();
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        for (long r = 0; r < windows; r++)
            window(c, o, t);
    }
    double elapsed = MPI_Wtime() - t0;
    if (c->rank == 1)
        for (int t = 0; t < threads; t++)
            *bad += check_window(c, o, t);
    return elapsed;
}

/* Double the window count until one run lasts --target-time / --repetitions,
 * time --repetitions runs of it, print the median rate and its interval. */
static long measure(context *c, const options *o, int threads)
{
    long windows = 1, bad = 0;
    double part = o->target / (double)o->repetitions, elapsed;
    for (;;) {
        elapsed = timed(c, o, threads, windows, &bad);
        /* rank 0 decides, so that both ranks run the same windows */
        int more = elapsed < part && windows < (1L << 30);
        MPI_Bcast(&more, 1, MPI_INT, 0, c->pair);
        if (!more)
            break;
        windows *= 2;
    }
    double messages = (double)threads * (double)o->window * (double)windows;
    double rates[MAX_REPS];
    rates[0] = messages / elapsed;
    for (long r = 1; r < o->repetitions; r++)
        rates[r] = messages / timed(c, o, threads, windows, &bad);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, c->pair);
    if (c->rank == 0) {
        double lo, hi;
        sb_median_interval(rates, (int)o->repetitions, &lo, &hi);
        printf("SENTINEL_MSGRATE threads=%d size=%ld window=%ld windows=%ld repetitions=%ld "
               "rate=%.6e rate_lo=%.6e rate_hi=%.6e wrong=%ld\n", threads, o->size, o->window,
               windows, o->repetitions, sb_median(rates, (int)o->repetitions), lo, hi, bad);
        fflush(stdout);
    }
    return bad;
}

/* Each thread's communicator, buffers (rank 0's filled with their patterns)
 * and requests; 0, or -1 on every rank of the pair when one is missing. */
static int allocate(context *c, const options *o)
{
    c->comm = calloc((size_t)c->threads, sizeof(MPI_Comm));
    c->bufs = calloc((size_t)c->threads, sizeof(char *));
    c->reqs = calloc((size_t)c->threads, sizeof(MPI_Request *));
    c->stats = calloc((size_t)c->threads, sizeof(MPI_Status *));
    int ok = c->comm && c->bufs && c->reqs && c->stats;
    for (int t = 0; ok && t < c->threads; t++) {
        c->bufs[t] = calloc((size_t)(o->window * (o->size ? o->size : 1)), 1);
        c->reqs[t] = calloc((size_t)o->window, sizeof(MPI_Request));
        c->stats[t] = calloc((size_t)o->window, sizeof(MPI_Status));
        ok = c->bufs[t] && c->reqs[t] && c->stats[t];
        for (long w = 0; ok && c->rank == 0 && w < o->window; w++)
            sb_pattern_fill(c->bufs[t] + w * o->size, o->size, t * o->window + w, 0);
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c->pair);
    if (!ok)
        return -1;
    for (int t = 0; t < c->threads; t++) {
        if (o->space == SPACE_COMM)
            MPI_Comm_dup(c->pair, &c->comm[t]);
        else
            c->comm[t] = c->pair;
    }
    return 0;
}

static void release(context *c, const options *o)
{
    for (int t = 0; t < c->threads; t++) {
        if (c->comm && o->space == SPACE_COMM && c->comm[t] != MPI_COMM_NULL && c->comm[t])
            MPI_Comm_free(&c->comm[t]);
        if (c->bufs)
            free(c->bufs[t]);
        if (c->reqs)
            free(c->reqs[t]);
        if (c->stats)
            free(c->stats[t]);
    }
    free(c->comm);
    free(c->bufs);
    free(c->reqs);
    free(c->stats);
}

/* Every thread count within OMP_NUM_THREADS; else rank 0 writes the problem. */
static int check_counts(const options *o, int threads, char *err, size_t errlen)
{
    for (int i = 0; i < o->counts.count; i++)
        if (o->counts.values[i] > threads) {
            snprintf(err, errlen, "--thread-counts %ld exceeds OMP_NUM_THREADS=%d: a rank has "
                     "that many threads", o->counts.values[i], threads);
            return -1;
        }
    return 0;
}

static void print_config(const context *c, const options *o, int world, int provided)
{
    printf("SENTINEL_CONFIG bench=msgrate ranks=%d threads=%d counts=", world, c->threads);
    for (int i = 0; i < o->counts.count; i++)
        printf("%s%ld", i ? "," : "", o->counts.values[i]);
    printf(" size=%ld window=%ld space=%s serialise=%d target_s=%.3f repetitions=%ld "
           "required=%s provided=%s\n", o->size, o->window, space_names[o->space],
           o->serialise, o->target, o->repetitions, sb_thread_level_name(MPI_THREAD_MULTIPLE),
           sb_thread_level_name(provided));
}

int main(int argc, char **argv)
{
    options o;
    char err[2048] = "";
    int parsed = parse_options(argc, argv, &o, err, sizeof err), provided;
    int rc = sb_start_threaded(&argc, &argv, PROGRAM, parsed, err, 2, "multiple",
                               MPI_THREAD_MULTIPLE, &provided);
    if (rc != 0)
        return rc;
    context c = {.threads = omp_get_max_threads(), .pair = sb_pair_comm()};
    int world;
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (check_counts(&o, c.threads, err, sizeof err) != 0) {
        sb_error(MPI_COMM_WORLD, PROGRAM, err);
        MPI_Finalize();
        return 2;
    }
    if (c.rank == 0)
        print_config(&c, &o, world, provided);
    int ok = sb_report_environment(MPI_COMM_WORLD) == 0 &&
             sb_report_threads(MPI_COMM_WORLD, c.threads) == 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ok && c.pair != MPI_COMM_NULL)
        ok = allocate(&c, &o) == 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        sb_error(MPI_COMM_WORLD, PROGRAM, "cannot allocate the message buffers");
        release(&c, &o);
        MPI_Finalize();
        return 3;
    }
    omp_init_lock(&c.lock);
    long wrong = 0;
    for (int i = 0; c.pair != MPI_COMM_NULL && i < o.counts.count; i++)
        wrong += measure(&c, &o, (int)o.counts.values[i]);
    omp_destroy_lock(&c.lock);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (wrong)
        sb_error(MPI_COMM_WORLD, PROGRAM, "received messages differ from what was sent "
                                          "(see wrong= in the result lines)");
    else if (c.rank == 0)
        printf("SENTINEL_DONE bench=msgrate\n");
    release(&c, &o);
    sb_finalize(PROGRAM);
    return wrong ? 5 : 0;
}
