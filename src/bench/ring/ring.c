/* Ring: every rank sends one message each way around a ring of all ranks.
 *
 * The exercise of the Orfeo study (Banerjee, 2022): each rank starts one
 * message to its right and one to its left neighbour; every step, each rank
 * receives the two messages in flight towards it, adds its rank to each and
 * forwards them in their own direction. After N steps (one lap) every
 * message is back at the rank that started it, carrying its start value
 * plus the sum of all ranks, which each rank checks. The time of a lap is
 * linear in N (t = a + b N: b the cost of one hop); the suite fits it over a
 * series of N.
 *
 * Output, after the common lines:
 *   SENTINEL_RING ranks=N bytes=B laps=L repetition=r lap_us=T
 * one per repetition (T: the slowest rank's time per lap), or
 *   SENTINEL_ERROR bench=ring what=wrong_value rank=R direction=right|left ...
 * when a message came back with another value than the ring gives it. */
#include "../common/bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "ring"

static const char usage[] =
    "usage: ring [--laps L] [--repetitions R] [--warmup W] [--size B]\n"
    "  --laps (1000) laps per repetition; --repetitions (5) timed repetitions,\n"
    "  each after a barrier; --warmup (10) untimed laps; --size (8) message bytes,\n"
    "  a multiple of 8 (the first 8 bytes carry the checked value)\n";

typedef struct {
    long laps, repetitions, warmup, bytes;
} options;

enum { RIGHT, LEFT };

static int parse(int argc, char **argv, options *o, char *err, size_t errlen)
{
    *o = (options){.laps = 1000, .repetitions = 5, .warmup = 10, .bytes = 8};
    const sb_option table[] = {
        SB_OPTION_HELP("--help"),
        SB_OPTION_LONG("--laps", &o->laps, 1, 100000000),
        SB_OPTION_LONG("--repetitions", &o->repetitions, 1, 100000),
        SB_OPTION_LONG("--warmup", &o->warmup, 0, 100000000),
        SB_OPTION_LONG("--size", &o->bytes, 8, 1L << 26),
    };
    if (sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, errlen) != 0)
        return -1;
    if (o->bytes % 8 != 0) {
        snprintf(err, errlen, "--size %ld is not a multiple of 8\n%s", o->bytes, usage);
        return -1;
    }
    return 0;
}

typedef struct {
    int rank, size, right, left;
    long words;
    long long *out[2], *in[2];
} ring;

/* One lap: N steps of receiving both messages and forwarding them, each
 * with this rank added. On return out[d] holds the message this rank
 * started in direction d, back from its lap. */
static void lap(ring *r)
{
    MPI_Request req[4];
    MPI_Status status[4]; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's as an array */
    for (int step = 0; step < r->size; step++) {
        MPI_Irecv(r->in[RIGHT], (int)r->words, MPI_LONG_LONG, r->left, RIGHT, MPI_COMM_WORLD,
                  &req[0]);
        MPI_Irecv(r->in[LEFT], (int)r->words, MPI_LONG_LONG, r->right, LEFT, MPI_COMM_WORLD,
                  &req[1]);
        MPI_Isend(r->out[RIGHT], (int)r->words, MPI_LONG_LONG, r->right, RIGHT, MPI_COMM_WORLD,
                  &req[2]);
        MPI_Isend(r->out[LEFT], (int)r->words, MPI_LONG_LONG, r->left, LEFT, MPI_COMM_WORLD,
                  &req[3]);
        MPI_Waitall(4, req, status);
        for (int d = RIGHT; d <= LEFT; d++) {
            long long *t = r->out[d];
            r->out[d] = r->in[d];
            r->in[d] = t;
            r->out[d][0] += r->rank;
        }
    }
}

/* Start values: distinct per rank and direction. */
static long long start_value(int rank, int direction)
{
    return 1000LL * rank + direction;
}

static void reset(ring *r)
{
    for (int d = RIGHT; d <= LEFT; d++)
        r->out[d][0] = start_value(r->rank, d);
}

/* 0 when both messages came back with start + sum of ranks; else -1 after
 * rank 0 printed the first wrong one (collective). */
static int check(const ring *r)
{
    long long sum = (long long)r->size * (r->size - 1) / 2;
    int wrong = -1;
    for (int d = RIGHT; d <= LEFT && wrong < 0; d++)
        if (r->out[d][0] != start_value(r->rank, d) + sum)
            wrong = d;
    int first[2] = {wrong < 0 ? r->size : r->rank, wrong};
    int found[2];
    MPI_Allreduce(first, found, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
    if (found[0] == r->size)
        return 0;
    long long got[2] = {0, 0};
    if (r->rank == found[0]) {
        got[0] = r->out[wrong][0];
        got[1] = start_value(r->rank, wrong) + sum;
    }
    MPI_Bcast(got, 2, MPI_LONG_LONG, found[0], MPI_COMM_WORLD);
    if (r->rank == 0) {
        printf("SENTINEL_ERROR bench=%s what=wrong_value rank=%d direction=%s got=%lld "
               "expected=%lld\n", PROGRAM, found[0], found[1] == RIGHT ? "right" : "left",
               got[0], got[1]);
        fprintf(stderr, "%s: error: the message rank %d sent %s came back with %lld, not "
                "%lld: a message was lost, duplicated or delivered out of order\n", PROGRAM,
                found[0], found[1] == RIGHT ? "right" : "left", got[0], got[1]);
    }
    return -1;
}

/* Times the repetitions; 0, or 3 after a wrong value. */
static int run(ring *r, const options *o)
{
    for (long i = 0; i < o->warmup; i++)
        lap(r);
    double *lap_us = malloc((size_t)o->repetitions * sizeof *lap_us);
    if (lap_us == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    int rc = 0;
    for (long rep = 0; rep < o->repetitions && rc == 0; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < o->laps; i++) {
            reset(r);
            lap(r);
        }
        double local = (MPI_Wtime() - t0) * 1e6 / (double)o->laps;
        MPI_Reduce(&local, &lap_us[rep], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        rc = check(r) == 0 ? 0 : 3;
    }
    if (r->rank == 0)
        for (long rep = 0; rep < o->repetitions && rc == 0; rep++)
            printf("SENTINEL_RING ranks=%d bytes=%ld laps=%ld repetition=%ld lap_us=%.4f\n",
                   r->size, o->bytes, o->laps, rep, lap_us[rep]);
    free(lap_us);
    return rc;
}

int main(int argc, char **argv)
{
    char err[2048] = "";
    options o;
    int parsed = parse(argc, argv, &o, err, sizeof err);
    MPI_Init(&argc, &argv);
    ring r = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.size);
    int rc = sb_check_start(PROGRAM, parsed, err, 1);
    if (rc != 0)
        return rc;
    if (r.rank == 0)
        printf("SENTINEL_CONFIG bench=%s ranks=%d bytes=%ld laps=%ld repetitions=%ld "
               "warmup=%ld\n", PROGRAM, r.size, o.bytes, o.laps, o.repetitions, o.warmup);
    rc = sb_report_environment(MPI_COMM_WORLD) == 0 ? 0 : 3;
    r.right = (r.rank + 1) % r.size;
    r.left = (r.rank + r.size - 1) % r.size;
    r.words = o.bytes / 8;
    long long *buffers = calloc(4 * (size_t)r.words, sizeof *buffers);
    if (buffers == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    for (int i = 0; i < 4; i++)
        (i < 2 ? r.out : r.in)[i % 2] = buffers + (size_t)i * (size_t)r.words;
    if (rc == 0) {
        reset(&r);
        rc = run(&r, &o);
    }
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (r.rank == 0 && rc == 0)
        printf("SENTINEL_DONE bench=%s\n", PROGRAM);
    free(buffers);
    sb_finalize(PROGRAM);
    return rc;
}
