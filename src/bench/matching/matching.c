/* Message-matching benchmark: the cost of one unsuccessful match in the MPI
 * library's matching queues, measured by exchanging the same batch of n
 * messages in order and in reverse order (see README.md beside this file).
 *
 * Patterns:
 *   pingpong  the multi-ping-pong of Song (2013): rank 1 receives and returns the
 *             batch; reverse order reverses both legs (2 reversed legs)
 *   umq       unexpected-message queue: rank 0 sends, both synchronise, then
 *             rank 1 posts its receives (1 reversed leg)
 *   prq       posted-receive queue: rank 1 pre-posts its receives, both
 *             synchronise, then rank 0 sends (1 reversed leg)
 * Algorithms: "tag" (message i has tag i on one communicator) and "comm"
 * (message i travels on its own duplicated communicator, tag 0).
 * Batches: "adaptive" doubles n until the reverse-order extra time is
 * resolved against the run's own noise (or the cap or time budget is
 * reached), then measures an even grid of batch sizes up to that n;
 * "fixed" measures the --messages list (the sizes of Song 2013). */
#include "../common/bench_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "matching"

enum { ALG_TAG, ALG_COMM, NALG };
enum { PAT_PINGPONG, PAT_UMQ, PAT_PRQ, NPAT };
enum { BATCH_ADAPTIVE, BATCH_FIXED, NBATCH };
static const char *const alg_names[NALG] = {"tag", "comm"};
static const char *const pat_names[NPAT] = {"pingpong", "umq", "prq"};
static const char *const batch_names[NBATCH] = {"adaptive", "fixed"};

/* Largest batch buffer of the adaptive mode: n x length x 8 B per buffer. */
#define ADAPTIVE_BUFFER_BYTES (256L << 20)
/* First batch size of the adaptive doubling. */
#define ADAPTIVE_START 8

typedef struct {
    sb_int_list lengths;  /* message lengths in doubles */
    sb_int_list messages; /* batch sizes n (fixed batches) */
    long iterations, repetitions, warmup;
    long max_messages, max_unexpected, resolution, budget, points, checkpoint;
    unsigned algorithms, patterns;
    int batches;
} options;

/* One measured batch size: medians of the samples and their 95 % intervals (us). */
typedef struct {
    double iot, rot, iot_lo, iot_hi, rot_lo, rot_hi, iot_min, rot_min;
    long samples; /* of each order: fewer than asked when a deadline cut it */
} measurement;

typedef struct {
    MPI_Comm pair;   /* ranks 0 and 1 */
    MPI_Comm *comms; /* one duplicate of pair per message (comm algorithm) */
    int rank;
    double *sbuf, *rbuf;
    MPI_Request *reqs;
    MPI_Status *stats; /* real array: MPICH's MPI_STATUSES_IGNORE trips GCC 12 */
    long mismatches;
} context;

static const char usage[] =
    "usage: matching [--lengths L,...] [--batches adaptive|fixed] [--messages N,...]\n"
    "                [--max-messages N] [--max-unexpected N] [--resolution R]\n"
    "                [--budget S] [--points P]\n"
    "                [--checkpoint N] [--iterations I] [--repetitions R] [--warmup W]\n"
    "                [--algorithms tag,comm] [--patterns pingpong,umq,prq]\n"
    "  --lengths       message lengths in doubles (default 10,100,...,1000000)\n"
    "  --batches       adaptive: double n until Diff(n) >= R x its noise, then a grid\n"
    "                  of P sizes up to that n; fixed: the --messages list (default adaptive)\n"
    "  --messages      batch sizes n of fixed batches (default 1,10,20,...,90: Song 2013)\n"
    "  --max-messages  largest adaptive n (default 1024; also <= 256 MiB per buffer)\n"
    "  --max-unexpected  largest adaptive n of the umq pattern (default 64)\n"
    "  --resolution    R: Diff(n) over the sweep's largest noise that ends the doubling\n"
    "                  (default 50)\n"
    "  --budget        seconds one adaptive sweep may take: the doubling stops before the\n"
    "                  next step and its grid would overrun it (default 10)\n"
    "  --points        batch sizes of the adaptive grid (default 8)\n"
    "  --checkpoint    n always measured, for IOT, ROT and Diff (default 45)\n"
    "  --iterations    timed iterations per repetition (default 10)\n"
    "  --repetitions   repetitions, each after a barrier (default 5)\n"
    "  --warmup        untimed iterations per order before timing (default 2)\n";

static int parse_options(int argc, char **argv, void *opts, char *err, size_t errlen)
{
    static const long lengths[] = {10, 100, 1000, 10000, 100000, 1000000};
    static const long messages[] = {1, 10, 20, 30, 40, 45, 50, 60, 70, 80, 90};
    options *o = opts;
    o->lengths.count = (int)(sizeof lengths / sizeof *lengths);
    memcpy(o->lengths.values, lengths, sizeof lengths);
    o->messages.count = (int)(sizeof messages / sizeof *messages);
    memcpy(o->messages.values, messages, sizeof messages);
    o->iterations = 10;
    o->repetitions = 5;
    o->warmup = 2;
    o->algorithms = (1u << ALG_TAG) | (1u << ALG_COMM);
    o->patterns = 1u << PAT_PINGPONG;
    o->batches = BATCH_ADAPTIVE;
    o->max_messages = 1024;
    o->max_unexpected = 64;
    o->resolution = 50;
    o->budget = 10;
    o->points = 8;
    o->checkpoint = 45;

    const sb_option table[] = {
        SB_OPTION_HELP("--help"),
        SB_OPTION_LIST("--lengths", &o->lengths, 1, 1L << 27),
        SB_OPTION_NAME("--batches", &o->batches, batch_names, NBATCH),
        SB_OPTION_LIST("--messages", &o->messages, 1, 4096),
        SB_OPTION_LONG("--max-messages", &o->max_messages, ADAPTIVE_START, 4096),
        SB_OPTION_LONG("--max-unexpected", &o->max_unexpected, ADAPTIVE_START, 4096),
        SB_OPTION_LONG("--resolution", &o->resolution, 1, 1000000),
        SB_OPTION_LONG("--budget", &o->budget, 1, 86400),
        SB_OPTION_LONG("--points", &o->points, 3, 64),
        SB_OPTION_LONG("--checkpoint", &o->checkpoint, 2, 4096),
        SB_OPTION_LONG("--iterations", &o->iterations, 1, 1000000),
        SB_OPTION_LONG("--repetitions", &o->repetitions, 1, 100000),
        SB_OPTION_LONG("--warmup", &o->warmup, 0, 100000),
        SB_OPTION_NAMES("--algorithms", &o->algorithms, alg_names, NALG),
        SB_OPTION_NAMES("--patterns", &o->patterns, pat_names, NPAT),
    };
    return sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, errlen);
}

static long max_of(const sb_int_list *l)
{
    long m = l->values[0];
    for (int i = 1; i < l->count; i++)
        if (l->values[i] > m)
            m = l->values[i];
    return m;
}

/* The value element j of message i carries in iteration it: exact in a double. */
static double payload(long it, int i, long j)
{
    return (double)((it * 131 + (long)i * 1009 + j) % 1000003);
}

static void fill(context *c, int n, long len, long it)
{
    for (int i = 0; i < n; i++)
        for (long j = 0; j < len; j++)
            c->sbuf[(size_t)i * (size_t)len + (size_t)j] = payload(it, i, j);
}

static void verify(context *c, int n, long len, long it)
{
    for (int i = 0; i < n; i++)
        for (long j = 0; j < len; j++)
            if (c->rbuf[(size_t)i * (size_t)len + (size_t)j] != payload(it, i, j))
                c->mismatches++;
}

static MPI_Comm channel(const context *c, int alg, int i, int *tag)
{
    *tag = alg == ALG_TAG ? i : 0;
    return alg == ALG_TAG ? c->pair : c->comms[i];
}

/* Post n nonblocking operations, message k of the batch being i = k or
 * n-1-k; recv != 0 posts receives into rbuf, else sends from buf. */
static void post(context *c, int alg, int n, long len, int reverse, int recv,
                 const double *buf)
{
    int peer = 1 - c->rank, tag;
    for (int k = 0; k < n; k++) {
        int i = reverse ? n - 1 - k : k;
        MPI_Comm comm = channel(c, alg, i, &tag);
        size_t off = (size_t)i * (size_t)len;
        if (recv)
            MPI_Irecv(c->rbuf + off, (int)len, MPI_DOUBLE, peer, tag, comm,
                      &c->reqs[k]);
        else
            MPI_Isend(buf + off, (int)len, MPI_DOUBLE, peer, tag, comm,
                      &c->reqs[k]);
    }
}

static void wait_all(context *c, int n)
{
    MPI_Waitall(n, c->reqs, c->stats);
}

/* One iteration; returns the elapsed time on the timing rank (rank 0 for
 * pingpong, rank 1 for umq/prq), 0 elsewhere. Data checks are outside the
 * timed region. */
static double iteration(context *c, int alg, int pat, int reverse, int n,
                        long len, long it)
{
    double t0 = 0.0, t1 = 0.0;
    if (pat == PAT_PINGPONG) {
        if (c->rank == 0) {
            fill(c, n, len, it);
            t0 = MPI_Wtime();
            post(c, alg, n, len, 0, 0, c->sbuf);
            wait_all(c, n);
            post(c, alg, n, len, 0, 1, NULL);
            wait_all(c, n);
            t1 = MPI_Wtime();
            verify(c, n, len, it);
        } else {
            post(c, alg, n, len, reverse, 1, NULL);
            wait_all(c, n);
            post(c, alg, n, len, reverse, 0, c->rbuf);
            wait_all(c, n);
        }
    } else if (pat == PAT_UMQ) {
        if (c->rank == 0) {
            fill(c, n, len, it);
            post(c, alg, n, len, 0, 0, c->sbuf);
            MPI_Barrier(c->pair);
            wait_all(c, n);
        } else {
            MPI_Barrier(c->pair);
            t0 = MPI_Wtime();
            post(c, alg, n, len, reverse, 1, NULL);
            wait_all(c, n);
            t1 = MPI_Wtime();
            verify(c, n, len, it);
        }
    } else {
        if (c->rank == 0) {
            fill(c, n, len, it);
            MPI_Barrier(c->pair);
            post(c, alg, n, len, 0, 0, c->sbuf);
            wait_all(c, n);
        } else {
            post(c, alg, n, len, reverse, 1, NULL);
            MPI_Barrier(c->pair);
            t0 = MPI_Wtime();
            wait_all(c, n);
            t1 = MPI_Wtime();
            verify(c, n, len, it);
        }
    }
    return t1 - t0;
}

/* The largest batch n of messages of len doubles that an adaptive sweep of
 * pattern pat may use (pat < 0: of any pattern). The unexpected-message
 * pattern holds all n unmatched while the ranks synchronise: past a
 * transport's buffering that barrier can queue behind them for ever (Intel
 * MPI over ofi-tcp between two nodes hung at n = 128), hence its own cap. */
static long adaptive_cap(const options *o, long len, int pat)
{
    long by_memory = ADAPTIVE_BUFFER_BYTES / (len * (long)sizeof(double));
    long cap = o->max_messages < by_memory ? o->max_messages : by_memory;
    if (pat == PAT_UMQ && o->max_unexpected < cap)
        cap = o->max_unexpected;
    return cap < 2 ? 2 : cap;
}

/* Whether the deadline (rank 0's clock; 0: none) has passed, agreed by both ranks. */
static int past(const context *c, double deadline)
{
    if (deadline <= 0)
        return 0;
    int over = c->rank == 0 && MPI_Wtime() > deadline;
    MPI_Bcast(&over, 1, MPI_INT, 0, c->pair);
    return over;
}

/* Measure one (algorithm, pattern, length, n) case; rank 0 gets the result
 * (the timing rank of umq/prq sends its samples there). Past the deadline
 * (an adaptive sweep's budget) it stops at the next iteration with at least
 * one sample of each order: over TCP one batch can take seconds once the
 * transport's flow control sets in. Returns -1 on a data mismatch (printed),
 * on every rank. */
static int measure(context *c, const options *o, int alg, int pat, long len, int n,
                   double deadline, double *t_in, double *t_rev, measurement *m)
{
    long n_in = 0, n_rev = 0;
    for (long w = 0; w < o->warmup && !past(c, deadline); w++) {
        iteration(c, alg, pat, 0, n, len, w);
        iteration(c, alg, pat, 1, n, len, w);
    }
    int over = 0;
    for (long r = 0; r < o->repetitions && !over; r++) {
        MPI_Barrier(c->pair);
        for (long it = 0; it < o->iterations; it++) {
            t_in[n_in++] = iteration(c, alg, pat, 0, n, len, it);
            if ((over = past(c, deadline)))
                break;
        }
        MPI_Barrier(c->pair);
        for (long it = 0; it < o->iterations; it++) {
            t_rev[n_rev++] = iteration(c, alg, pat, 1, n, len, it);
            if ((over = over || past(c, deadline)))
                break;
        }
    }
    m->samples = n_in < n_rev ? n_in : n_rev;
    long samples = m->samples;
    if (pat != PAT_PINGPONG) {
        if (c->rank == 1) {
            MPI_Send(t_in, (int)samples, MPI_DOUBLE, 0, 0, c->pair);
            MPI_Send(t_rev, (int)samples, MPI_DOUBLE, 0, 1, c->pair);
        } else {
            MPI_Recv(t_in, (int)samples, MPI_DOUBLE, 1, 0, c->pair, MPI_STATUS_IGNORE);
            MPI_Recv(t_rev, (int)samples, MPI_DOUBLE, 1, 1, c->pair, MPI_STATUS_IGNORE);
        }
    }
    long bad = c->mismatches;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, c->pair);
    if (bad) {
        if (c->rank == 0)
            printf("SENTINEL_ERROR bench=matching what=data_mismatch algorithm=%s "
                   "pattern=%s bytes=%ld n=%d mismatched_values=%ld\n",
                   alg_names[alg], pat_names[pat], len * 8, n, bad);
        return -1;
    }
    if (c->rank != 0)
        return 0;
    m->iot_min = sb_min(t_in, (int)samples) * 1e6;
    m->rot_min = sb_min(t_rev, (int)samples) * 1e6;
    m->iot = sb_median(t_in, (int)samples) * 1e6;
    m->rot = sb_median(t_rev, (int)samples) * 1e6;
    sb_median_interval(t_in, (int)samples, &m->iot_lo, &m->iot_hi);
    sb_median_interval(t_rev, (int)samples, &m->rot_lo, &m->rot_hi);
    m->iot_lo *= 1e6, m->iot_hi *= 1e6, m->rot_lo *= 1e6, m->rot_hi *= 1e6;
    return 0;
}

/* Diff(n)'s noise: the half-widths of the two medians' intervals. */
static double noise(const measurement *m)
{
    return 0.5 * (m->iot_hi - m->iot_lo) + 0.5 * (m->rot_hi - m->rot_lo);
}

/* Print one result line (record "MATCH" of the fitted grid, "MATCH_PROBE"
 * of the adaptive doubling). */
static void print_case(const char *record, int alg, int pat, long len, int n, long samples,
                       const measurement *m)
{
    int legs = pat == PAT_PINGPONG ? 2 : 1;
    double steps = 0.5 * n * (n - 1);
    double mus = steps > 0 ? (m->rot - m->iot) / (legs * steps) : NAN;
    printf("SENTINEL_%s algorithm=%s pattern=%s bytes=%ld n=%d legs=%d samples=%ld "
           "iot_us=%.4f rot_us=%.4f diff_us=%.4f noise_us=%.4f iot_lo_us=%.4f "
           "iot_hi_us=%.4f rot_lo_us=%.4f rot_hi_us=%.4f iot_min_us=%.4f rot_min_us=%.4f "
           "m_us=%.6f\n",
           record, alg_names[alg], pat_names[pat], len * 8, n, legs, samples, m->iot, m->rot,
           m->rot - m->iot, noise(m), m->iot_lo, m->iot_hi, m->rot_lo, m->rot_hi, m->iot_min,
           m->rot_min, mus);
    fflush(stdout);
}

/* Adaptive doubling: the largest n of the grid, agreed by both ranks. */
static int find_nmax(context *c, const options *o, int alg, int pat, long len,
                     double *t_in, double *t_rev, long *nmax)
{
    long cap = adaptive_cap(o, len, pat);
    double t0 = MPI_Wtime();
    long n = ADAPTIVE_START < cap ? ADAPTIVE_START : cap;
    const char *stop = "cap";
    /* The grid after the doubling costs about points/2 + 1 times its
     * largest batch: the sweep stops doubling when the next step and its
     * grid would overrun the budget. */
    double grid_factor = 0.5 * (double)o->points + 1.0;
    /* The largest noise seen in this sweep: a quiet moment at one batch
     * size must not end the doubling before the grid, measured later, is
     * resolved too. */
    double worst = 0.0;
    for (;;) {
        measurement m;
        double t_step = MPI_Wtime();
        if (measure(c, o, alg, pat, len, (int)n, t0 + (double)o->budget, t_in, t_rev, &m) != 0)
            return -1;
        t_step = MPI_Wtime() - t_step;
        /* 0: go on; 1: resolved; 2: the budget is spent; 3: the cap is reached */
        int verdict = 0;
        if (c->rank == 0) {
            print_case("MATCH_PROBE", alg, pat, len, (int)n, m.samples, &m);
            double next = 2.0 * t_step * (1.0 + grid_factor);
            if (noise(&m) > worst)
                worst = noise(&m);
            if (m.rot - m.iot >= (double)o->resolution * worst && worst > 0)
                verdict = 1;
            else if (n >= cap)
                verdict = 3;
            else if (MPI_Wtime() - t0 + next > (double)o->budget)
                verdict = 2;
        }
        MPI_Bcast(&verdict, 1, MPI_INT, 0, c->pair);
        if (verdict) {
            stop = verdict == 1 ? "resolved" : verdict == 2 ? "budget" : "cap";
            break;
        }
        n = 2 * n < cap ? 2 * n : cap;
    }
    *nmax = n;
    if (c->rank == 0)
        printf("SENTINEL_MATCH_SWEEP algorithm=%s pattern=%s bytes=%ld n_max=%ld stop=%s "
               "seconds=%.3f\n", alg_names[alg], pat_names[pat], len * 8, n, stop,
               MPI_Wtime() - t0);
    return 0;
}

/* The batch sizes of one sweep, ascending and distinct: the fixed list, or
 * the adaptive grid nmax * k / points (k = 1 .. points); the check-point too. */
static int batch_sizes(const options *o, long nmax, long *out)
{
    int count = 0;
    long want[4096 + 65];
    if (o->batches == BATCH_FIXED) {
        for (int i = 0; i < o->messages.count; i++)
            want[count++] = o->messages.values[i];
    } else {
        for (long k = 1; k <= o->points; k++) {
            long n = nmax * k / o->points;
            want[count++] = n < 1 ? 1 : n;
        }
    }
    want[count++] = o->checkpoint;
    int kept = 0;
    for (int i = 0; i < count; i++) { /* insertion, dropping repeats */
        int j = kept;
        int seen = 0;
        for (int k = 0; k < kept; k++)
            seen |= out[k] == want[i];
        if (seen)
            continue;
        while (j > 0 && out[j - 1] > want[i]) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = want[i];
        kept++;
    }
    return kept;
}

/* One sweep: (adaptive doubling, then) every batch size of the grid. */
/* Whether an adaptive sweep begun at t0 has spent its budget (rank 0
 * decides, both ranks learn it). */
static int over_budget(const context *c, const options *o, double t0)
{
    int over = c->rank == 0 && MPI_Wtime() - t0 > (double)o->budget;
    MPI_Bcast(&over, 1, MPI_INT, 0, c->pair);
    return over;
}

/* One sweep: (adaptive doubling, then) every batch size of the grid. The
 * check-point is measured first; an adaptive grid stops once the sweep's
 * budget is spent and three sizes are measured (a transport's time per
 * message can jump past some n: the doubling cannot foresee it), and says
 * so in a SENTINEL_MATCH_GRID line. */
static int run_sweep(context *c, const options *o, int alg, int pat, long len,
                     double *t_in, double *t_rev)
{
    long nmax = 0, sizes[4096 + 65];
    double t0 = MPI_Wtime();
    if (o->batches == BATCH_ADAPTIVE && find_nmax(c, o, alg, pat, len, t_in, t_rev, &nmax))
        return -1;
    int count = batch_sizes(o, nmax, sizes), done = 0;
    for (int i = 0; i < count; i++) /* the check-point first */
        if (sizes[i] == o->checkpoint) {
            sizes[i] = sizes[0];
            sizes[0] = o->checkpoint;
        }
    for (; done < count; done++) {
        if (o->batches == BATCH_ADAPTIVE && done >= 4 && over_budget(c, o, t0))
            break;
        measurement m;
        double deadline = o->batches == BATCH_ADAPTIVE ? t0 + (double)o->budget : 0.0;
        if (measure(c, o, alg, pat, len, (int)sizes[done], deadline, t_in, t_rev, &m) != 0)
            return -1;
        if (c->rank == 0)
            print_case("MATCH", alg, pat, len, (int)sizes[done], m.samples, &m);
    }
    if (c->rank == 0 && o->batches == BATCH_ADAPTIVE)
        printf("SENTINEL_MATCH_GRID algorithm=%s pattern=%s bytes=%ld measured=%d sizes=%d "
               "stop=%s seconds=%.3f\n", alg_names[alg], pat_names[pat], len * 8, done, count,
               done < count ? "budget" : "complete", MPI_Wtime() - t0);
    return 0;
}

static void print_config(const void *opts, int world)
{
    const options *o = opts;
    printf("SENTINEL_CONFIG bench=matching ranks=%d batches=%s iterations=%ld "
           "repetitions=%ld warmup=%ld max_messages=%ld max_unexpected=%ld resolution=%ld "
           "budget=%ld points=%ld "
           "checkpoint=%ld lengths=",
           world, batch_names[o->batches], o->iterations, o->repetitions, o->warmup,
           o->max_messages, o->max_unexpected, o->resolution, o->budget, o->points,
           o->checkpoint);
    for (int i = 0; i < o->lengths.count; i++)
        printf("%s%ld", i ? "," : "", o->lengths.values[i]);
    printf(" messages=");
    for (int i = 0; i < o->messages.count; i++)
        printf("%s%ld", i ? "," : "", o->messages.values[i]);
    printf("\n");
}

static int run_all(context *c, const options *o)
{
    long samples = o->repetitions * o->iterations;
    double *t_in = malloc((size_t)samples * sizeof(double));
    double *t_rev = malloc((size_t)samples * sizeof(double));
    int rc = (t_in && t_rev) ? 0 : -1;
    for (int a = 0; a < NALG && rc == 0; a++) {
        if (!(o->algorithms & (1u << a)))
            continue;
        for (int p = 0; p < NPAT && rc == 0; p++) {
            if (!(o->patterns & (1u << p)))
                continue;
            for (int l = 0; l < o->lengths.count && rc == 0; l++)
                rc = run_sweep(c, o, a, p, o->lengths.values[l], t_in, t_rev);
        }
    }
    free(t_in);
    free(t_rev);
    return rc;
}

/* The most messages and bytes of one batch over every sweep. */
static void largest_batch(const options *o, long *nmax, size_t *bytes)
{
    *nmax = o->checkpoint;
    *bytes = 0;
    for (int l = 0; l < o->lengths.count; l++) {
        long len = o->lengths.values[l];
        long n = o->batches == BATCH_FIXED ? max_of(&o->messages) : adaptive_cap(o, len, -1);
        if (o->checkpoint > n)
            n = o->checkpoint;
        if (n > *nmax)
            *nmax = n;
        size_t b = (size_t)n * (size_t)len * sizeof(double);
        if (b > *bytes)
            *bytes = b;
    }
}

/* Ranks 0 and 1: buffers and communicators for the largest case, then every case. */
static int run(MPI_Comm pair, int rank, const void *opts)
{
    const options *o = opts;
    context c = {.pair = pair, .rank = rank, .mismatches = 0};
    int rc;
    long nmax;
    size_t bytes;
    largest_batch(o, &nmax, &bytes);
    c.sbuf = malloc(bytes);
    c.rbuf = malloc(bytes);
    c.reqs = malloc((size_t)nmax * sizeof(MPI_Request));
    c.stats = malloc((size_t)nmax * sizeof(MPI_Status));
    c.comms = malloc((size_t)nmax * sizeof(MPI_Comm));
    int ok = c.sbuf && c.rbuf && c.reqs && c.stats && c.comms;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c.pair);
    if (!ok) {
        char err[128];
        snprintf(err, sizeof err, "cannot allocate 2 x %.1f MiB of buffers",
                 (double)bytes / 1048576.0);
        sb_error(c.pair, PROGRAM, err);
        rc = 3;
    } else {
        long dups = (o->algorithms & (1u << ALG_COMM)) ? nmax : 0;
        for (long i = 0; i < dups; i++)
            MPI_Comm_dup(c.pair, &c.comms[i]);
        rc = run_all(&c, o) == 0 ? 0 : 3;
        for (long i = 0; i < dups; i++)
            MPI_Comm_free(&c.comms[i]);
    }
    free(c.sbuf);
    free(c.rbuf);
    free(c.reqs);
    free(c.stats);
    free(c.comms);
    return rc;
}

int main(int argc, char **argv)
{
    static const sb_pair_bench bench = {PROGRAM, parse_options, NULL, print_config, run};
    options o;
    return sb_pair_main(argc, argv, &bench, &o);
}
