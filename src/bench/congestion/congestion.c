/* Congestion: a victim's latency percentiles and bandwidth, alone and beside congestors.
 *
 * World ranks 0 .. V-1 are the victims (--victims V, 0: a fifth of the
 * ranks rounded down to an even count, at least 2), the others the
 * congestors (at least 2); run it with one rank per node, so the victims
 * and the congestors are on nodes of their own and share only the fabric.
 * Victim i < V/2 is paired with victim i + V/2. For each congestor pattern
 * of --patterns, --repetitions times, the victims measure twice:
 *   quiet   the congestors idle (each tests for rank 0's start every 100 us
 *           and sleeps in between, whatever its MPI does while it waits);
 *   loaded  the congestors run the pattern, in bursts of --burst operations
 *           in which each sends --congestor-size bytes, from before the
 *           victims start until after they finish:
 *             alltoall  MPI_Alltoall among the congestors (each block the
 *                       size over the congestors, at least a byte);
 *             incast    every congestor but the first sends to the first;
 *             bcast     the first broadcasts to the others.
 * Each measurement is, on every victim pair at once: --samples 8-byte
 * round trips, each timed on its own (one-way latency, half of it), pooled
 * over the pairs: their 50th and 99th percentiles (nearest rank); then
 * --bw-iterations messages of --size bytes from the lower rank of each pair
 * to the other, answered by one zero-byte message: the mean bandwidth of the
 * pairs. The congestion impact of a repetition is loaded over quiet for the
 * latency percentiles and quiet over loaded for the bandwidth (larger is
 * worse for all three, 1 is none). Per pattern and state the median of the
 * repetitions and the order-statistics interval of the median, and the
 * bytes the congestors delivered per second while they ran (loaded; the
 * fewest bursts of a repetition with it):
 *   SENTINEL_CONGESTION pattern=P state=quiet|loaded samples=n p50_us=A
 *     p50_lo_us= p50_hi_us= p99_us=B p99_lo_us= p99_hi_us= bw_mbs=C bw_lo_mbs=
 *     bw_hi_mbs= [congestor_mbs=D congestor_lo_mbs= congestor_hi_mbs= bursts=k]
 *   SENTINEL_CONGESTION_IMPACT pattern=P p50=X p50_lo= p50_hi= p99=Y p99_lo=
 *     p99_hi= bw=Z bw_lo= bw_hi=
 * After GPCNeT's canaries and congestion impact factor (Chunduri et al.,
 * "GPCNeT: designing a benchmark suite for inducing and measuring contention
 * in HPC networks", 2019). Nothing is printed inside a timed region; rank 0
 * prints after gathering. */
#define _POSIX_C_SOURCE 200809L
#include "../common/bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROGRAM "congestion"
#define MAX_REPS 1000

enum { P_ALLTOALL, P_INCAST, P_BCAST, NPATTERN };
static const char *const pattern_names[NPATTERN] = {"alltoall", "incast", "bcast"};

#define TAG_START 10
#define TAG_RUNNING 11
#define TAG_STOP 12
#define TAG_PING 13
#define TAG_DATA 14
#define TAG_ACK 15
#define TAG_INCAST 16
#define TAG_REPORT 17

typedef struct {
    unsigned patterns;
    long victims, samples, bytes, bw_iterations, congestor_bytes, burst, repetitions;
} options;

static const char usage[] =
    "usage: congestion [--patterns alltoall,incast,bcast] [--victims V] [--samples N]\n"
    "                  [--size B] [--bw-iterations I] [--congestor-size B] [--burst K]\n"
    "                  [--repetitions R]\n"
    "  --victims (0: a fifth of the ranks, even, at least 2) ranks 0..V-1 measure, the\n"
    "  others congest; --samples (2000) timed 8-byte round trips per measurement (at\n"
    "  least 100); --bw-iterations (16) messages of --size (1048576) bytes; congestor\n"
    "  bursts of --burst (8) operations, each congestor sending --congestor-size\n"
    "  (1048576) bytes in one (the all-to-all's blocks split it); each pattern quiet\n"
    "  then loaded --repetitions (5) times (medians and intervals)\n";

static int parse_options(int argc, char **argv, options *o, char *err, size_t errlen)
{
    *o = (options){.patterns = (1u << NPATTERN) - 1, .samples = 2000, .bytes = 1L << 20,
                   .bw_iterations = 16, .congestor_bytes = 1L << 20, .burst = 8,
                   .repetitions = 5};
    const sb_option table[] = {
        SB_OPTION_NAMES("--patterns", &o->patterns, pattern_names, NPATTERN),
        SB_OPTION_LONG("--victims", &o->victims, 0, 1L << 20),
        SB_OPTION_LONG("--samples", &o->samples, 100, 10000000),
        SB_OPTION_LONG("--size", &o->bytes, 1, 1L << 28),
        SB_OPTION_LONG("--bw-iterations", &o->bw_iterations, 1, 100000),
        SB_OPTION_LONG("--congestor-size", &o->congestor_bytes, 1, 1L << 28),
        SB_OPTION_LONG("--burst", &o->burst, 1, 100000),
        SB_OPTION_LONG("--repetitions", &o->repetitions, 1, MAX_REPS),
    };
    if (sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, errlen) != 0)
        return -1;
    if (o->patterns == 0) {
        snprintf(err, errlen, "--patterns: name at least one of alltoall, incast, bcast");
        return -1;
    }
    return 0;
}

typedef struct {
    int rank, size, victims, victim;
    MPI_Comm group; /* the victims' or the congestors' communicator */
    int grank, gsize;
    char *send, *recv;    /* victims: a message, a window of them */
    char *csend, *crecv;  /* congestors: --congestor-size bytes each */
    int block;            /* congestors: the all-to-all's bytes to each congestor */
    double *lat, *pooled; /* victims: a measurement's samples; rank 0: every pair's */
} ctx;

/* The victim count: as given, or a fifth of the ranks (even, at least 2);
 * 0 after writing the problem to err. */
static int victim_count(const options *o, int size, char *err, size_t errlen)
{
    long v = o->victims ? o->victims : size / 10 * 2;
    if (v < 2)
        v = 2;
    if (v % 2 || size - v < 2) {
        snprintf(err, errlen, "--victims %ld: the victims must be an even number of ranks "
                 "(pairs), leaving at least 2 of the %d ranks to congest", v, size);
        return 0;
    }
    return (int)v;
}

static void *alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    memset(p, 1, bytes ? bytes : 1);
    return p;
}

/* --samples timed round trips on every victim pair at once; rank 0 gets the
 * 50th and 99th percentile of the one-way latencies of all pairs (us). */
static void latency(ctx *c, const options *o, double *p50, double *p99)
{
    int half = c->victims / 2, lower = c->rank < half;
    int peer = lower ? c->rank + half : c->rank - half;
    char b[8] = {0};
    MPI_Barrier(c->group);
    for (long i = -(o->samples / 10 + 1); i < o->samples; i++) {
        double t0 = MPI_Wtime();
        if (lower) {
            MPI_Send(b, 8, MPI_CHAR, peer, TAG_PING, MPI_COMM_WORLD);
            MPI_Recv(b, 8, MPI_CHAR, peer, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b, 8, MPI_CHAR, peer, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, 8, MPI_CHAR, peer, TAG_PING, MPI_COMM_WORLD);
        }
        if (i >= 0)
            c->lat[i] = (MPI_Wtime() - t0) / 2.0 * 1e6;
    }
    MPI_Gather(c->lat, (int)o->samples, MPI_DOUBLE, c->pooled, (int)o->samples, MPI_DOUBLE, 0,
               c->group);
    if (c->rank == 0) { /* the lower ranks' clocks: whole round trips */
        long n = (long)half * o->samples;
        *p50 = sb_percentile(c->pooled, n, 50.0);
        *p99 = sb_percentile(c->pooled, n, 99.0);
    }
}

/* --bw-iterations messages from each pair's lower rank to the other, then a
 * zero-byte answer; rank 0 gets the mean bandwidth of the pairs (MB/s). */
static double bandwidth(ctx *c, const options *o)
{
    int half = c->victims / 2, lower = c->rank < half;
    int peer = lower ? c->rank + half : c->rank - half;
    long n = o->bw_iterations;
    MPI_Request *req = malloc((size_t)n * sizeof *req);
    MPI_Status *stat = malloc((size_t)n * sizeof *stat); /* MPICH's MPI_Waitall writes them */
    if (req == NULL || stat == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    MPI_Barrier(c->group);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {
        if (lower)
            MPI_Isend(c->send, (int)o->bytes, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &req[i]);
        else
            MPI_Irecv(c->recv + i * o->bytes, (int)o->bytes, MPI_CHAR, peer, TAG_DATA,
                      MPI_COMM_WORLD, &req[i]);
    }
    MPI_Waitall((int)n, req, stat);
    if (lower)
        MPI_Recv(NULL, 0, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(NULL, 0, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD);
    double mine = lower ? (double)o->bytes * (double)n / (MPI_Wtime() - t0) / 1e6 : 0.0, sum;
    free(req);
    free(stat);
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, c->group);
    return sum / half;
}

/* One burst of a pattern on the congestors' communicator: the bytes this
 * congestor received. */
static double burst(ctx *c, const options *o, int pattern)
{
    int cb = (int)o->congestor_bytes, senders = c->gsize - 1;
    double got = 0.0;
    for (long k = 0; k < o->burst; k++) {
        switch (pattern) {
        case P_ALLTOALL:
            MPI_Alltoall(c->csend, c->block, MPI_CHAR, c->crecv, c->block, MPI_CHAR, c->group);
            got += (double)c->block * senders;
            break;
        case P_INCAST:
            if (c->grank == 0) {
                for (int s = 0; s < senders; s++)
                    MPI_Recv(c->crecv, cb, MPI_CHAR, MPI_ANY_SOURCE, TAG_INCAST, c->group,
                             MPI_STATUS_IGNORE);
                got += (double)cb * senders;
            } else {
                MPI_Send(c->csend, cb, MPI_CHAR, 0, TAG_INCAST, c->group);
            }
            break;
        default:
            MPI_Bcast(c->csend, cb, MPI_CHAR, 0, c->group);
            got += c->grank ? (double)cb : 0.0;
        }
    }
    return got;
}

/* The congestors run `pattern` until world rank 0 says stop: the first tells
 * rank 0 once a burst is done (every congestor has started), and after each
 * burst tells the others whether rank 0 has said stop. Returns (on the
 * first congestor) the bytes delivered per second, in MB/s; *bursts: how
 * many bursts ran after the first. */
static double congest(ctx *c, const options *o, int pattern, long *bursts)
{
    int stop = 0, said = 0, one = 1;
    MPI_Request req = MPI_REQUEST_NULL;
    if (c->grank == 0)
        MPI_Irecv(&stop, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD, &req);
    double got = 0.0, t0 = MPI_Wtime();
    long n = 0;
    while (!said) {
        got += burst(c, o, pattern);
        if (n++ == 0 && c->grank == 0)
            MPI_Send(&one, 1, MPI_INT, 0, TAG_RUNNING, MPI_COMM_WORLD);
        if (c->grank == 0)
            MPI_Test(&req, &said, MPI_STATUS_IGNORE);
        MPI_Bcast(&said, 1, MPI_INT, 0, c->group);
    }
    double seconds = MPI_Wtime() - t0, all = 0.0;
    MPI_Reduce(&got, &all, 1, MPI_DOUBLE, MPI_SUM, 0, c->group);
    *bursts = n - 1;
    return all / seconds / 1e6;
}

/* Waits for world rank 0's start, testing for it every 100 us and sleeping
 * in between: an idle congestor leaves its node's CPUs alone (a site's
 * node has no one else to leave them to; a test cluster's nodes that share
 * CPUs have the victims), where a blocking receive or a barrier spins in
 * most MPIs. */
static void idle_until_start(void)
{
    int start = 0, done = 0;
    MPI_Request req;
    MPI_Irecv(&start, 1, MPI_INT, 0, TAG_START, MPI_COMM_WORLD, &req);
    const struct timespec pause = {0, 100000};
    for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done;
         MPI_Test(&req, &done, MPI_STATUS_IGNORE))
        nanosleep(&pause, NULL);
}

typedef struct {
    double *p50, *p99, *bw; /* per repetition */
} series;

static series series_new(long reps)
{
    series s = {alloc((size_t)reps * sizeof(double)), alloc((size_t)reps * sizeof(double)),
                alloc((size_t)reps * sizeof(double))};
    return s;
}

static void series_free(series *s)
{
    free(s->p50);
    free(s->p99);
    free(s->bw);
}

/* "name=M name_lo=L name_hi=H" (with "_<unit>" after each name when unit is
 * given): the median of n values and its interval; values is reordered. */
static void spread(char *out, size_t len, const char *name, const char *unit, double *values,
                   long n)
{
    double m = sb_median(values, (int)n), lo, hi;
    sb_median_interval(values, (int)n, &lo, &hi);
    const char *u = unit[0] ? "_" : "";
    snprintf(out, len, "%s%s%s=%.3f %s_lo%s%s=%.3f %s_hi%s%s=%.3f", name, u, unit, m, name, u,
             unit, lo, name, u, unit, hi);
}

static void print_state(const char *pattern, const char *state, long samples, series *s,
                        long reps, const char *extra)
{
    char a[160], b[160], w[160];
    spread(a, sizeof a, "p50", "us", s->p50, reps);
    spread(b, sizeof b, "p99", "us", s->p99, reps);
    spread(w, sizeof w, "bw", "mbs", s->bw, reps);
    printf("SENTINEL_CONGESTION pattern=%s state=%s samples=%ld %s %s %s%s\n", pattern, state,
           samples, a, b, w, extra);
}

/* Rank 0: the pattern's lines; quiet and loaded are reordered. */
static void report(const char *pattern, const options *o, long samples, series *quiet,
                   series *loaded, double *cmbs, long bursts)
{
    long reps = o->repetitions;
    series impact = series_new(reps);
    for (long r = 0; r < reps; r++) {
        impact.p50[r] = loaded->p50[r] / quiet->p50[r];
        impact.p99[r] = loaded->p99[r] / quiet->p99[r];
        impact.bw[r] = quiet->bw[r] / loaded->bw[r];
    }
    char extra[256], congestors[160];
    spread(congestors, sizeof congestors, "congestor", "mbs", cmbs, reps);
    snprintf(extra, sizeof extra, " %s bursts=%ld", congestors, bursts);
    print_state(pattern, "quiet", samples, quiet, reps, "");
    print_state(pattern, "loaded", samples, loaded, reps, extra);
    char a[160], b[160], w[160];
    spread(a, sizeof a, "p50", "", impact.p50, reps);
    spread(b, sizeof b, "p99", "", impact.p99, reps);
    spread(w, sizeof w, "bw", "", impact.bw, reps);
    printf("SENTINEL_CONGESTION_IMPACT pattern=%s %s %s %s\n", pattern, a, b, w);
    series_free(&impact);
}

/* The victims measure into s[rep] (rank 0 holds the figures). */
static void measure(ctx *c, const options *o, series *s, long rep)
{
    double p50 = 0.0, p99 = 0.0;
    latency(c, o, &p50, &p99);
    double bw = bandwidth(c, o);
    s->p50[rep] = p50;
    s->p99[rep] = p99;
    s->bw[rep] = bw;
}

/* Rank 0 starts the congestors, waits until they run, lets the victims
 * measure, stops them and gets their figures; the other victims measure. */
static void loaded_victims(ctx *c, const options *o, series *loaded, long rep, double *cmbs,
                           long *fewest)
{
    int first = c->victims, one = 1;
    if (c->rank == 0) {
        for (int r = first; r < c->size; r++)
            MPI_Send(&one, 1, MPI_INT, r, TAG_START, MPI_COMM_WORLD);
        MPI_Recv(&one, 1, MPI_INT, first, TAG_RUNNING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    measure(c, o, loaded, rep);
    if (c->rank != 0)
        return;
    double got[2];
    MPI_Send(&one, 1, MPI_INT, first, TAG_STOP, MPI_COMM_WORLD);
    MPI_Recv(got, 2, MPI_DOUBLE, first, TAG_REPORT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    cmbs[rep] = got[0];
    if (*fewest < 0 || (long)got[1] < *fewest)
        *fewest = (long)got[1];
}

/* Each repetition: the victims quiet, then loaded. The congestors idle
 * until rank 0 starts them and run until it stops them; rank 0 has their
 * figures (every congestor has finished) before the next quiet measurement. */
static void run_pattern(ctx *c, const options *o, int pattern)
{
    long reps = o->repetitions, fewest = -1;
    series quiet = series_new(reps), loaded = series_new(reps);
    double *cmbs = alloc((size_t)reps * sizeof *cmbs);
    for (long rep = 0; rep < reps; rep++) {
        if (c->victim) {
            measure(c, o, &quiet, rep);
            loaded_victims(c, o, &loaded, rep, cmbs, &fewest);
            continue;
        }
        idle_until_start();
        long bursts = 0;
        double mbs = congest(c, o, pattern, &bursts);
        if (c->grank == 0) {
            double sent[2] = {mbs, (double)bursts};
            MPI_Send(sent, 2, MPI_DOUBLE, 0, TAG_REPORT, MPI_COMM_WORLD);
        }
    }
    if (c->rank == 0)
        report(pattern_names[pattern], o, (long)(c->victims / 2) * o->samples, &quiet,
               &loaded, cmbs, fewest);
    series_free(&quiet);
    series_free(&loaded);
    free(cmbs);
}

static void setup(ctx *c, const options *o)
{
    MPI_Comm_split(MPI_COMM_WORLD, c->victim, c->rank, &c->group);
    MPI_Comm_rank(c->group, &c->grank);
    MPI_Comm_size(c->group, &c->gsize);
    if (c->victim) {
        c->send = alloc((size_t)o->bytes);
        c->recv = alloc((size_t)o->bytes * (size_t)o->bw_iterations);
        c->lat = alloc((size_t)o->samples * sizeof *c->lat);
        c->pooled = alloc((size_t)(c->rank == 0 ? c->victims : 1) * (size_t)o->samples *
                          sizeof *c->pooled);
    } else {
        long block = o->congestor_bytes / c->gsize;
        c->block = block > 0 ? (int)block : 1;
        size_t bytes = (size_t)c->block * (size_t)c->gsize;
        if (bytes < (size_t)o->congestor_bytes)
            bytes = (size_t)o->congestor_bytes;
        c->csend = alloc(bytes);
        c->crecv = alloc(bytes);
    }
}

static void teardown(ctx *c)
{
    free(c->send);
    free(c->recv);
    free(c->lat);
    free(c->pooled);
    free(c->csend);
    free(c->crecv);
    MPI_Comm_free(&c->group);
}

static void print_config(const ctx *c, const options *o)
{
    char names[64] = "";
    for (int p = 0; p < NPATTERN; p++)
        if (o->patterns & (1u << p))
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     names[0] ? "," : "", pattern_names[p]);
    printf("SENTINEL_CONFIG bench=%s ranks=%d victims=%d congestors=%d patterns=%s "
           "samples=%ld bytes=%ld bw_iterations=%ld congestor_bytes=%ld burst=%ld "
           "repetitions=%ld\n", PROGRAM, c->size, c->victims, c->size - c->victims, names,
           o->samples, o->bytes, o->bw_iterations, o->congestor_bytes, o->burst,
           o->repetitions);
}

int main(int argc, char **argv)
{
    char err[2048] = "";
    options o;
    int parsed = parse_options(argc, argv, &o, err, sizeof err);
    MPI_Init(&argc, &argv);
    ctx c = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.size);
    int rc = sb_check_start(PROGRAM, parsed, err, 4);
    if (rc != 0)
        return rc;
    c.victims = victim_count(&o, c.size, err, sizeof err);
    if (c.victims == 0) {
        sb_error(MPI_COMM_WORLD, PROGRAM, err);
        MPI_Finalize();
        return 2;
    }
    c.victim = c.rank < c.victims;
    if (c.rank == 0)
        print_config(&c, &o);
    rc = sb_report_environment(MPI_COMM_WORLD) == 0 ? 0 : 3;
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc == 0) {
        setup(&c, &o);
        for (int p = 0; p < NPATTERN; p++)
            if (o.patterns & (1u << p))
                run_pattern(&c, &o, p);
        teardown(&c);
    }
    if (c.rank == 0 && rc == 0)
        printf("SENTINEL_DONE bench=%s\n", PROGRAM);
    sb_finalize(PROGRAM);
    return rc;
}
