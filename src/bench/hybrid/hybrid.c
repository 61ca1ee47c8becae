/* Mixed-mode MPI + OpenMP micro-benchmarks (EPCC's suite as PRACE D7.4.2 ran it, in C).
 *
 * Benchmarks (--benchmarks): barrier (all ranks), halo (ring of all ranks,
 * both neighbours), pingpong and pingping (ranks 0 and 1) by default; the
 * collectives reduce, allreduce, bcast, scatter, gather and alltoall (all
 * ranks, root 0, sizes up to --max-collective) on request. Modes (--mode):
 *   serial     MPI called by the master outside parallel regions (FUNNELED)
 *   funnelled  MPI called by the master inside the parallel region (FUNNELED)
 *   multiple   every thread communicates its own part (MULTIPLE)
 * Each thread owns --min-size .. --max-size 4-byte elements of every message
 * (sizes doubling); all threads write their part before and read it after
 * each exchange, so intra-node data movement is part of the time. For each
 * size the iteration count doubles from 1 until one timed run lasts at least
 * --target-time / --repetitions seconds; --repetitions runs of that count are
 * timed. Output: one SENTINEL_HYBRID line per (benchmark, size) with the
 * median seconds per iteration and the order-statistics interval of the
 * median (the range below 9 repetitions). */
#define _GNU_SOURCE
#include "../common/bench_common.h"
#include "../common/bench_omp.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define PROGRAM "hybrid"

enum { B_BARRIER, B_HALO, B_PINGPONG, B_PINGPING, NPOINT, B_REDUCE = NPOINT, B_ALLREDUCE,
       B_BCAST, B_SCATTER, B_GATHER, B_ALLTOALL, NBENCH };
static const char *const bench_names[NBENCH] = {"barrier", "halo",      "pingpong",
                                                "pingping", "reduce",   "allreduce",
                                                "bcast",    "scatter",  "gather",
                                                "alltoall"};
enum { MODE_SERIAL, MODE_FUNNELLED, MODE_MULTIPLE, NMODE };
static const char *const mode_names[NMODE] = {"serial", "funnelled", "multiple"};

typedef struct {
    unsigned benches;
    int mode;
    long min_size, max_size, max_collective, repetitions;
    double target;
} options;

typedef struct {
    int rank, size, threads, left, right, peer;
    int *send, *recv, *send2, *recv2; /* threads x max_size elements each */
    int *csend, *crecv;               /* threads x ranks x max_collective elements each */
    MPI_Comm *thread_comm;            /* one per thread (multiple-mode barrier) */
} context;

static const char usage[] =
    "usage: hybrid --mode serial|funnelled|multiple [--benchmarks barrier,halo,pingpong,"
    "pingping,\n"
    "              reduce,allreduce,bcast,scatter,gather,alltoall] [--min-size E]\n"
    "              [--max-size E] [--max-collective E] [--target-time S]\n"
    "              [--repetitions R]\n"
    "  sizes: 4-byte elements per thread, doubling from --min-size (1) to --max-size\n"
    "  (4194304), to --max-collective (262144) for the collectives; --target-time\n"
    "  (1.0) seconds per timed size, shared by its --repetitions (6) timed runs: the\n"
    "  median and the order-statistics interval of the median are printed;\n"
    "  default benchmarks: barrier,halo,pingpong,pingping; threads: OMP_NUM_THREADS\n";

/* --mode: a list of one name (a name given twice counts once). */
static int parse_mode(const sb_option *opt, const char *val, char *err, size_t errlen)
{
    unsigned mask = 0;
    if (sb_parse_name_list(opt->name, val, mode_names, NMODE, &mask, err, errlen) != 0)
        return -1;
    if (mask & (mask - 1)) {
        snprintf(err, errlen, "--mode takes one mode, got '%s'", val);
        return -1;
    }
    for (int m = 0; m < NMODE; m++)
        if (mask & (1u << m))
            *(int *)opt->target.custom = m;
    return 0;
}

static int parse_options(int argc, char **argv, options *o, char *err, size_t errlen)
{
    *o = (options){(1u << NPOINT) - 1, -1, 1, 4194304, 262144, 6, 1.0};
    const sb_option table[] = {
        SB_OPTION_NAMES("--benchmarks", &o->benches, bench_names, NBENCH),
        SB_OPTION_CUSTOM("--mode", &o->mode, parse_mode),
        SB_OPTION_LONG("--min-size", &o->min_size, 1, 1L << 26),
        SB_OPTION_LONG("--max-size", &o->max_size, 1, 1L << 26),
        SB_OPTION_LONG("--max-collective", &o->max_collective, 1, 1L << 26),
        SB_OPTION_CUSTOM("--target-time", &o->target, sb_parse_target_time),
        SB_OPTION_LONG("--repetitions", &o->repetitions, 1, 1000),
    };
    if (sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, errlen) != 0)
        return -1;
    if (o->mode < 0) {
        snprintf(err, errlen, "--mode is required\n%s", usage);
        return -1;
    }
    if (sb_check_size_range(o->min_size, o->max_size, err, errlen) != 0)
        return -1;
    if ((o->benches >> NPOINT) && o->min_size > o->max_collective) {
        snprintf(err, errlen, "--min-size %ld exceeds --max-collective %ld: no collective "
                 "size to run", o->min_size, o->max_collective);
        return -1;
    }
    return 0;
}

/* Thread t writes its part of the send buffer(s) (value depends on rank and
 * iteration, so a stale buffer is detected). */
static void write_part(const context *c, int *buf, int t, long n, long it)
{
    for (long i = 0; i < n; i++)
        buf[(size_t)t * (size_t)n + (size_t)i] = (int)(c->rank * 1000003L + it + i);
}

/* Thread t reads its part; returns the number of elements not from `from`. */
static long read_part(const int *buf, int t, long n, long it, int from)
{
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += buf[(size_t)t * (size_t)n + (size_t)i] != (int)(from * 1000003L + it + i);
    return bad;
}

/* One exchange of thread t's part (multiple) or of all parts (t < 0). */
static void exchange(const context *c, int bench, int t, long n, long it)
{
    int count = (int)(t < 0 ? n * c->threads : n), tag = t < 0 ? 0 : t + 1;
    size_t off = t < 0 ? 0 : (size_t)t * (size_t)n;
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Request req[4];
    MPI_Status st[4];
    if (bench == B_HALO) {
        MPI_Irecv(c->recv + off, count, MPI_INT, c->left, tag, comm, &req[0]);
        MPI_Irecv(c->recv2 + off, count, MPI_INT, c->right, tag, comm, &req[1]);
        MPI_Isend(c->send + off, count, MPI_INT, c->right, tag, comm, &req[2]);
        MPI_Isend(c->send2 + off, count, MPI_INT, c->left, tag, comm, &req[3]);
        MPI_Waitall(4, req, st);
    } else if (bench == B_PINGPING) {
        MPI_Isend(c->send + off, count, MPI_INT, c->peer, tag, comm, &req[0]);
        MPI_Recv(c->recv + off, count, MPI_INT, c->peer, tag, comm, &st[1]);
        MPI_Wait(&req[0], &st[0]);
    } else if (c->rank == 0) { /* pingpong */
        MPI_Send(c->send + off, count, MPI_INT, 1, tag, comm);
        MPI_Recv(c->recv + off, count, MPI_INT, 1, tag, comm, &st[0]);
    } else {
        MPI_Recv(c->recv + off, count, MPI_INT, 0, tag, comm, &st[0]);
        /* the reply is what arrived, written back by this rank's threads */
        MPI_Send(c->send + off, count, MPI_INT, 0, tag, comm);
    }
    (void)it;
}

/* A collective's buffers hold one block per rank where the operation has
 * several (scatter's send, gather's receive, alltoall's both): in serial and
 * funnelled modes block b holds every thread's part, thread t's at t*n; in
 * multiple mode thread t has a region of its own with its blocks of n. */
static size_t block_at(const context *c, int mode, int t, long n, int block, long i)
{
    if (mode == MODE_MULTIPLE)
        return ((size_t)t * (size_t)c->size + (size_t)block) * (size_t)n + (size_t)i;
    return ((size_t)block * (size_t)c->threads + (size_t)t) * (size_t)n + (size_t)i;
}

/* What rank `from` sends rank `to` (element i, iteration it). */
static int coll_value(int from, int to, long it, long i)
{
    return (int)((from * 1000003L + to * 7L + it + i) % 2000000011L);
}

/* Each rank's contribution to a sum: the same on every rank, so the sum is
 * ranks x it, in range for any world below 2^21 ranks. */
static int sum_value(long it, long i)
{
    return (int)((it + i) % 1024) + 1;
}

/* Thread t writes its part of what this rank sends in a collective. */
static void coll_write(const context *c, int bench, int mode, int t, long n, long it)
{
    size_t one = (size_t)t * (size_t)n;
    int root = c->rank == 0;
    for (long i = 0; i < n; i++) {
        if (bench == B_REDUCE || bench == B_ALLREDUCE)
            c->csend[one + (size_t)i] = sum_value(it, i);
        else if (bench == B_BCAST && root)
            c->crecv[one + (size_t)i] = coll_value(0, 0, it, i);
        else if (bench == B_GATHER)
            c->csend[one + (size_t)i] = coll_value(c->rank, 0, it, i);
        else if (bench == B_ALLTOALL || (bench == B_SCATTER && root))
            for (int b = 0; b < c->size; b++)
                c->csend[block_at(c, mode, t, n, b, i)] = coll_value(c->rank, b, it, i);
    }
}

/* Thread t checks its part of what this rank received; returns the wrong elements. */
static long coll_read(const context *c, int bench, int mode, int t, long n, long it)
{
    size_t one = (size_t)t * (size_t)n;
    long bad = 0;
    for (long i = 0; i < n; i++) {
        int got = c->crecv[one + (size_t)i];
        if (bench == B_ALLREDUCE || (bench == B_REDUCE && c->rank == 0))
            bad += got != c->size * sum_value(it, i);
        else if (bench == B_BCAST)
            bad += got != coll_value(0, 0, it, i);
        else if (bench == B_SCATTER)
            bad += got != coll_value(0, c->rank, it, i);
        else if (bench == B_ALLTOALL || (bench == B_GATHER && c->rank == 0))
            for (int b = 0; b < c->size; b++)
                bad += c->crecv[block_at(c, mode, t, n, b, i)] !=
                       coll_value(b, bench == B_GATHER ? 0 : c->rank, it, i);
    }
    return bad;
}

/* One collective over the parts of all threads (t < 0) or of thread t alone. */
static void coll_call(const context *c, int bench, int mode, int t, long n)
{
    MPI_Comm comm = t < 0 ? MPI_COMM_WORLD : c->thread_comm[t];
    int count = (int)(t < 0 ? n * c->threads : n);
    int *one_s = c->csend + (t < 0 ? 0 : (size_t)t * (size_t)n);
    int *one_r = c->crecv + (t < 0 ? 0 : (size_t)t * (size_t)n);
    int *many_s = c->csend + (t < 0 ? 0 : block_at(c, mode, t, n, 0, 0));
    int *many_r = c->crecv + (t < 0 ? 0 : block_at(c, mode, t, n, 0, 0));
    switch (bench) {
    case B_REDUCE:
        MPI_Reduce(one_s, one_r, count, MPI_INT, MPI_SUM, 0, comm);
        break;
    case B_ALLREDUCE:
        MPI_Allreduce(one_s, one_r, count, MPI_INT, MPI_SUM, comm);
        break;
    case B_BCAST:
        MPI_Bcast(one_r, count, MPI_INT, 0, comm);
        break;
    case B_SCATTER:
        MPI_Scatter(many_s, count, MPI_INT, one_r, count, MPI_INT, 0, comm);
        break;
    case B_GATHER:
        MPI_Gather(one_s, count, MPI_INT, many_r, count, MPI_INT, 0, comm);
        break;
    default:
        MPI_Alltoall(many_s, count, MPI_INT, many_r, count, MPI_INT, comm);
    }
}

static int collective(int bench)
{
    return bench >= B_REDUCE;
}

/* Thread t's writes before one exchange or collective (all threads' if serial). */
static void put(const context *c, int bench, int mode, int t, long n, long it)
{
    if (collective(bench)) {
        coll_write(c, bench, mode, t, n, it);
        return;
    }
    write_part(c, c->send, t, n, it);
    write_part(c, c->send2, t, n, it);
}

/* The communication of thread t (multiple) or of all threads (t < 0). */
static void move(const context *c, int bench, int mode, int t, long n, long it)
{
    if (collective(bench))
        coll_call(c, bench, mode, t, n);
    else
        exchange(c, bench, t, n, it);
}

/* Thread t's reads after it; returns the wrong elements. */
static long take(const context *c, int bench, int mode, int t, long n, long it)
{
    if (collective(bench))
        return coll_read(c, bench, mode, t, n, it);
    return read_part(c->recv, t, n, it, bench == B_HALO ? c->left : c->peer);
}

static int active(const context *c, int bench)
{
    return bench == B_BARRIER || bench == B_HALO || collective(bench) || c->rank < 2;
}

/* `reps` iterations of one benchmark at n elements per thread; returns the
 * number of wrong elements seen on this rank. */
static long run(const context *c, int bench, int mode, long n, long reps)
{
    long bad = 0;
    if (!active(c, bench))
        return 0;
    for (long it = 0; it < reps; it++) {
        if (bench == B_BARRIER) {
            if (mode == MODE_SERIAL) {
#pragma omp parallel num_threads(c->threads)
                {
                }
                MPI_Barrier(MPI_COMM_WORLD);
            } else {
#pragma omp parallel num_threads(c->threads)
                {
                    int t = omp_get_thread_num();
                    if (mode == MODE_MULTIPLE) {
                        MPI_Barrier(c->thread_comm[t]);
                    } else {
#pragma omp barrier
#pragma omp master
                        MPI_Barrier(MPI_COMM_WORLD);
#pragma omp barrier
                    }
                }
            }
            continue;
        }
        if (mode == MODE_SERIAL) {
#pragma omp parallel num_threads(c->threads)
            put(c, bench, mode, omp_get_thread_num(), n, it);
            move(c, bench, mode, -1, n, it);
#pragma omp parallel num_threads(c->threads) reduction(+ : bad)
            bad += take(c, bench, mode, omp_get_thread_num(), n, it);
        } else {
#pragma omp parallel num_threads(c->threads) reduction(+ : bad)
            {
                int t = omp_get_thread_num();
                put(c, bench, mode, t, n, it);
                if (mode == MODE_MULTIPLE) {
                    move(c, bench, mode, t, n, it);
                } else {
#pragma omp barrier
#pragma omp master
                    move(c, bench, mode, -1, n, it);
#pragma omp barrier
                }
                bad += take(c, bench, mode, t, n, it);
            }
        }
    }
    return bad;
}

/* Seconds of one timed run of `reps` iterations, after a barrier. */
static double timed(const context *c, const options *o, int bench, long n, long reps,
                    long *bad)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    *bad += run(c, bench, o->mode, n, reps);
    return MPI_Wtime() - t0;
}

/* Double the iteration count until one run lasts --target-time / --repetitions,
 * time --repetitions runs of it, print their median and its interval. */
static int measure(const context *c, const options *o, int bench, long n)
{
    long reps = 1, bad = 0;
    double part = o->target / (double)o->repetitions, elapsed;
    for (;;) {
        elapsed = timed(c, o, bench, n, reps, &bad);
        /* rank 0 decides, so that every rank runs the same iterations */
        int more = elapsed < part && reps < (1L << 30);
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!more)
            break;
        reps *= 2;
    }
    double samples[1000];
    samples[0] = elapsed / (double)reps;
    for (long r = 1; r < o->repetitions; r++)
        samples[r] = timed(c, o, bench, n, reps, &bad) / (double)reps;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (c->rank == 0) {
        long elems = bench == B_BARRIER ? 0 : n;
        double lo, hi;
        sb_median_interval(samples, (int)o->repetitions, &lo, &hi);
        printf("SENTINEL_HYBRID bench=%s mode=%s ranks=%d threads=%d elements=%ld bytes=%ld "
               "iterations=%ld repetitions=%ld time_s=%.6e time_lo_s=%.6e time_hi_s=%.6e "
               "wrong=%ld\n", bench_names[bench], mode_names[o->mode], c->size, c->threads,
               elems, elems * (long)sizeof(int) * c->threads, reps, o->repetitions,
               sb_median(samples, (int)o->repetitions), lo, hi, bad);
        fflush(stdout);
    }
    return bad != 0;
}

static int allocate(context *c, const options *o)
{
    size_t n = (size_t)o->max_size * (size_t)c->threads;
    /* only what the selected benchmarks use: alltoall's grow with the world */
    size_t points = (o->benches & ((1u << NPOINT) - 1)) ? n : 1;
    size_t colls = (o->benches >> NPOINT)
                       ? (size_t)o->max_collective * (size_t)c->threads * (size_t)c->size
                       : 1;
    c->send = calloc(points, sizeof(int));
    c->recv = calloc(points, sizeof(int));
    c->send2 = calloc(points, sizeof(int));
    c->recv2 = calloc(points, sizeof(int));
    c->csend = calloc(colls, sizeof(int));
    c->crecv = calloc(colls, sizeof(int));
    c->thread_comm = calloc((size_t)c->threads, sizeof(MPI_Comm));
    int ok = c->send && c->recv && c->send2 && c->recv2 && c->csend && c->crecv &&
             c->thread_comm;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return ok ? 0 : -1;
}

static void release(context *c)
{
    if (c->thread_comm)
        for (int t = 0; t < c->threads; t++)
            if (c->thread_comm[t] != MPI_COMM_NULL && c->thread_comm[t] != 0)
                MPI_Comm_free(&c->thread_comm[t]);
    free(c->send);
    free(c->recv);
    free(c->send2);
    free(c->recv2);
    free(c->csend);
    free(c->crecv);
    free(c->thread_comm);
}

int main(int argc, char **argv)
{
    options o;
    char err[2048] = "";
    int parsed = parse_options(argc, argv, &o, err, sizeof err);
    int required = parsed == 0 && o.mode == MODE_MULTIPLE ? MPI_THREAD_MULTIPLE
                                                          : MPI_THREAD_FUNNELED;
    int provided;
    /* ping-pong and ping-ping need a pair; the others run on any world */
    int pairs = parsed == 0 && (o.benches & ((1u << B_PINGPONG) | (1u << B_PINGPING)));
    int rc = sb_start_threaded(&argc, &argv, PROGRAM, parsed, err, pairs ? 2 : 1,
                               parsed == 0 ? mode_names[o.mode] : NULL, required, &provided);
    if (rc != 0)
        return rc;
    context c = {.threads = omp_get_max_threads()};
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.size);
    c.left = (c.rank + c.size - 1) % c.size;
    c.right = (c.rank + 1) % c.size;
    c.peer = c.rank < 2 ? 1 - c.rank : MPI_PROC_NULL;
    if (c.rank == 0)
        printf("SENTINEL_CONFIG bench=hybrid ranks=%d threads=%d mode=%s required=%s "
               "provided=%s min_size=%ld max_size=%ld max_collective=%ld target_s=%.3f "
               "repetitions=%ld\n",
               c.size, c.threads, mode_names[o.mode], sb_thread_level_name(required),
               sb_thread_level_name(provided), o.min_size, o.max_size, o.max_collective,
               o.target, o.repetitions);
    if (sb_report_environment(MPI_COMM_WORLD) != 0 || sb_report_threads(MPI_COMM_WORLD, c.threads)
        || allocate(&c, &o) != 0) {
        sb_error(MPI_COMM_WORLD, PROGRAM, "cannot allocate the message buffers");
        release(&c);
        MPI_Finalize();
        return 3;
    }
    for (int t = 0; t < c.threads; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &c.thread_comm[t]);
    int wrong = 0;
    for (int b = 0; b < NBENCH; b++) {
        if (!(o.benches & (1u << b)))
            continue;
        if (b == B_BARRIER) {
            wrong |= measure(&c, &o, b, 0);
            continue;
        }
        long largest = collective(b) ? o.max_collective : o.max_size;
        for (long n = o.min_size; n <= largest; n *= 2)
            wrong |= measure(&c, &o, b, n);
    }
    if (wrong)
        sb_error(MPI_COMM_WORLD, PROGRAM, "received data differ from what was sent "
                                          "(see wrong= in the result lines)");
    else if (c.rank == 0)
        printf("SENTINEL_DONE bench=hybrid\n");
    release(&c);
    sb_finalize(PROGRAM);
    return wrong ? 5 : 0;
}
