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
 * (message i travels on its own duplicated communicator, tag 0). */
#include "../common/bench_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "matching"

enum { ALG_TAG, ALG_COMM, NALG };
enum { PAT_PINGPONG, PAT_UMQ, PAT_PRQ, NPAT };
static const char *const alg_names[NALG] = {"tag", "comm"};
static const char *const pat_names[NPAT] = {"pingpong", "umq", "prq"};

typedef struct {
    sb_int_list lengths;  /* message lengths in doubles */
    sb_int_list messages; /* batch sizes n */
    long iterations, repetitions, warmup;
    unsigned algorithms, patterns;
} options;

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
    "usage: matching [--lengths L,...] [--messages N,...] [--iterations I]\n"
    "                [--repetitions R] [--warmup W] [--algorithms tag,comm]\n"
    "                [--patterns pingpong,umq,prq]\n"
    "  --lengths      message lengths in doubles (default 10,100,...,1000000)\n"
    "  --messages     messages per batch n (default 1,10,20,...,90,45)\n"
    "  --iterations   timed iterations per repetition (default 10)\n"
    "  --repetitions  repetitions, each after a barrier (default 5)\n"
    "  --warmup       untimed iterations per order before timing (default 2)\n";

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

    const sb_option table[] = {
        SB_OPTION_HELP("--help"),
        SB_OPTION_LIST("--lengths", &o->lengths, 1, 1L << 27),
        SB_OPTION_LIST("--messages", &o->messages, 1, 4096),
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

/* Measure one (algorithm, pattern, length, n) case and print its line. */
static int run_case(context *c, const options *o, int alg, int pat, long len,
                    int n, double *t_in, double *t_rev)
{
    int timer = pat == PAT_PINGPONG ? 0 : 1;
    long samples = o->repetitions * o->iterations;
    for (long w = 0; w < o->warmup; w++) {
        iteration(c, alg, pat, 0, n, len, w);
        iteration(c, alg, pat, 1, n, len, w);
    }
    for (long r = 0; r < o->repetitions; r++) {
        MPI_Barrier(c->pair);
        for (long it = 0; it < o->iterations; it++)
            t_in[r * o->iterations + it] = iteration(c, alg, pat, 0, n, len, it);
        MPI_Barrier(c->pair);
        for (long it = 0; it < o->iterations; it++)
            t_rev[r * o->iterations + it] = iteration(c, alg, pat, 1, n, len, it);
    }
    if (timer == 1) {
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
    if (c->rank != 0)
        return bad ? -1 : 0;
    if (bad) {
        printf("SENTINEL_ERROR bench=matching what=data_mismatch algorithm=%s "
               "pattern=%s bytes=%ld n=%d mismatched_values=%ld\n",
               alg_names[alg], pat_names[pat], len * 8, n, bad);
        return -1;
    }
    int legs = pat == PAT_PINGPONG ? 2 : 1;
    double steps = 0.5 * n * (n - 1);
    double iot_min = sb_min(t_in, (int)samples) * 1e6;
    double rot_min = sb_min(t_rev, (int)samples) * 1e6;
    double iot = sb_median(t_in, (int)samples) * 1e6;
    double rot = sb_median(t_rev, (int)samples) * 1e6;
    double m = steps > 0 ? (rot - iot) / (legs * steps) : NAN;
    printf("SENTINEL_MATCH algorithm=%s pattern=%s bytes=%ld n=%d legs=%d "
           "samples=%ld iot_us=%.4f rot_us=%.4f diff_us=%.4f iot_min_us=%.4f "
           "rot_min_us=%.4f m_us=%.6f\n",
           alg_names[alg], pat_names[pat], len * 8, n, legs, samples, iot, rot,
           rot - iot, iot_min, rot_min, m);
    fflush(stdout);
    return 0;
}

static void print_config(const void *opts, int world)
{
    const options *o = opts;
    printf("SENTINEL_CONFIG bench=matching ranks=%d iterations=%ld "
           "repetitions=%ld warmup=%ld lengths=",
           world, o->iterations, o->repetitions, o->warmup);
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
                for (int k = 0; k < o->messages.count && rc == 0; k++)
                    rc = run_case(c, o, a, p, o->lengths.values[l],
                                  (int)o->messages.values[k], t_in, t_rev);
        }
    }
    free(t_in);
    free(t_rev);
    return rc;
}

/* Ranks 0 and 1: buffers and communicators for the largest case, then every case. */
static int run(MPI_Comm pair, int rank, const void *opts)
{
    const options *o = opts;
    context c = {.pair = pair, .rank = rank, .mismatches = 0};
    int rc;
    long nmax = max_of(&o->messages), lmax = max_of(&o->lengths);
    size_t bytes = (size_t)nmax * (size_t)lmax * sizeof(double);
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
        for (long i = 0; i < nmax; i++)
            MPI_Comm_dup(c.pair, &c.comms[i]);
        rc = run_all(&c, o) == 0 ? 0 : 3;
        for (long i = 0; i < nmax; i++)
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
    static const sb_pair_bench bench = {PROGRAM, parse_options, print_config, run};
    options o;
    return sb_pair_main(argc, argv, &bench, &o);
}
