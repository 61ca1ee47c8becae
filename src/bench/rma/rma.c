/* One-sided communication between rank 0 (the origin) and rank 1 (the target).
 *
 * Operations (--ops): put (MPI_Put), get (MPI_Get) and acc (MPI_Accumulate of
 * MPI_INT with MPI_SUM), into or out of a window the target created over its
 * own memory (MPI_Win_create: the application's memory, carried by the
 * library's one-sided path for the transport, not by memory it allocated).
 * Synchronisations (--syncs):
 *   fence  active target: both ranks close each epoch with MPI_Win_fence
 *   lock   passive target: MPI_Win_lock(MPI_LOCK_SHARED) ... MPI_Win_unlock
 *          by the origin alone, the target inside the library (a barrier)
 *   pscw   generalised active target: MPI_Win_start/complete at the origin,
 *          MPI_Win_post/wait at the target
 *   flush  passive target held open: MPI_Win_lock_all once (untimed), each
 *          epoch closed by MPI_Win_flush (OSU's default, IMB-RMA's modes)
 * Metrics (--metrics):
 *   latency  one operation per epoch: seconds per epoch, what one operation
 *            with its synchronisation costs
 *   bw       --window operations per epoch: bytes per second of the epoch
 * Every value is the median of --repetitions samples, each the mean over
 * --iterations epochs (--iterations-large above 64 KiB; --windows and
 * --windows-large for bw), printed with the min and max of the samples, after
 * --warmup untimed epochs scaled as pt2pt's.
 *
 * After each (operation, synchronisation, size) one untimed epoch of that
 * operation is verified where its data lands: a put's bytes in the target's
 * window (poisoned first), a get's in the origin's buffer (poisoned first),
 * an accumulate's sums in the target's window (every element a known value
 * before it). One SENTINEL_VERIFY line per epoch, and a SENTINEL_CORRUPT line
 * for its first wrong byte (element, for acc). --corrupt-at SIZE flips one
 * byte (adds one to an element, for acc) of the data the verified epoch of
 * that size carries, after it is written: the test of the verdict. */
#define _POSIX_C_SOURCE 200112L
#include "../common/bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "rma"

enum { OP_PUT, OP_GET, OP_ACC, NOP };
enum { SYNC_FENCE, SYNC_LOCK, SYNC_PSCW, SYNC_FLUSH, NSYNC };
enum { M_LATENCY, M_BW, NMETRIC };
static const char *const op_names[NOP] = {"put", "get", "acc"};
static const char *const sync_names[NSYNC] = {"fence", "lock", "pscw", "flush"};
static const char *const metric_names[NMETRIC] = {"latency", "bw"};

typedef struct {
    unsigned ops, syncs, metrics;
    long min_size, max_size, corrupt_at;
    sb_samples s; /* the sample counts */
} options;

typedef struct {
    MPI_Comm comm;
    int rank;
    MPI_Win win;
    MPI_Group peer; /* the other rank, for PSCW */
    char *memory;   /* the target's window memory: max_size bytes */
    char *origin;   /* the origin's buffer: max_size bytes */
    int win_made;
} context;

static const char usage[] =
    "usage: rma [--ops put,get,acc] [--syncs fence,lock,pscw,flush] [--metrics latency,bw]\n"
    "           [--min-size B] [--max-size B] [--iterations N] [--iterations-large N]\n"
    "           [--windows N] [--windows-large N] [--repetitions R] [--warmup W]\n"
    "           [--window W] [--corrupt-at B]\n"
    "  sizes: the powers of two from --min-size (8; at least 4, acc moves 4-byte\n"
    "  integers) to --max-size (1048576); per sample --iterations (100) epochs up to\n"
    "  64 KiB, --iterations-large (20) above, and for bw --windows (20) /\n"
    "  --windows-large (5) epochs of --window (32) operations; --repetitions (10)\n"
    "  samples per value; --warmup (10) untimed epochs per size, scaled by the\n"
    "  sample's count over --iterations; every (op, sync, size) ends with one\n"
    "  verified epoch; --corrupt-at B corrupts the verified epochs of B bytes (tests)\n";

static int parse_options(int argc, char **argv, void *opts, char *err, size_t errlen)
{
    options *o = opts;
    *o = (options){(1u << NOP) - 1, (1u << NSYNC) - 1, (1u << NMETRIC) - 1, 8, 1048576, 0,
                   {100, 20, 20, 5, 10, 10, 32}};
    const sb_option table[] = {
        SB_OPTION_NAMES("--ops", &o->ops, op_names, NOP),
        SB_OPTION_NAMES("--syncs", &o->syncs, sync_names, NSYNC),
        SB_OPTION_NAMES("--metrics", &o->metrics, metric_names, NMETRIC),
        SB_OPTION_LONG("--min-size", &o->min_size, 4, 1L << 30),
        SB_OPTION_LONG("--max-size", &o->max_size, 4, 1L << 30),
        SB_SAMPLE_OPTIONS(&o->s),
        SB_OPTION_LONG("--corrupt-at", &o->corrupt_at, 0, 1L << 30),
    };
    if (sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, errlen) != 0)
        return -1;
    if (o->min_size & (o->min_size - 1)) {
        snprintf(err, errlen, "--min-size %ld is not a power of two (sizes double from it)",
                 o->min_size);
        return -1;
    }
    if (o->corrupt_at && (o->corrupt_at < o->min_size || o->corrupt_at > o->max_size ||
                          (o->corrupt_at & (o->corrupt_at - 1)))) {
        snprintf(err, errlen, "--corrupt-at %ld is not one of the sizes measured (powers of "
                 "two from %ld to %ld)", o->corrupt_at, o->min_size, o->max_size);
        return -1;
    }
    return sb_check_size_range(o->min_size, o->max_size, err, errlen);
}

/* The window's memory model (MPI_WIN_MODEL): unified or separate. */
static const char *memory_model(MPI_Win win)
{
    int *model = NULL, flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    if (!flag || model == NULL)
        return "unknown";
    return *model == MPI_WIN_UNIFIED ? "unified" : "separate";
}

static void print_names(const char *key, unsigned mask, const char *const names[], int n)
{
    printf(" %s=", key);
    const char *sep = "";
    for (int i = 0; i < n; i++)
        if (mask & (1u << i)) {
            printf("%s%s", sep, names[i]);
            sep = ",";
        }
}

static void print_config(const void *opts, int world)
{
    const options *o = opts;
    printf("SENTINEL_CONFIG bench=rma ranks=%d window_memory=create", world);
    print_names("ops", o->ops, op_names, NOP);
    print_names("syncs", o->syncs, sync_names, NSYNC);
    print_names("metrics", o->metrics, metric_names, NMETRIC);
    printf(" min_size=%ld max_size=%ld", o->min_size, o->max_size);
    sb_print_samples(&o->s);
    if (o->corrupt_at)
        printf(" corrupt_at=%ld", o->corrupt_at);
    printf("\n");
}

/* One operation of `size` bytes from the origin to displacement 0 of the target. */
static void issue(const context *c, int op, long size)
{
    int n = (int)size;
    if (op == OP_PUT)
        MPI_Put(c->origin, n, MPI_BYTE, 1, 0, n, MPI_BYTE, c->win);
    else if (op == OP_GET)
        MPI_Get(c->origin, n, MPI_BYTE, 1, 0, n, MPI_BYTE, c->win);
    else
        MPI_Accumulate(c->origin, n / 4, MPI_INT, 1, 0, n / 4, MPI_INT, MPI_SUM, c->win);
}

/* `count` epochs of `per` operations each, closed by `sync`; returns the
 * origin's seconds per epoch (the target's time is not used). A fence series
 * opens with MPI_MODE_NOPRECEDE and its last fence closes with
 * MPI_MODE_NOSUCCEED, and a flush series holds one MPI_Win_lock_all (taken
 * before the clock starts, released after it stops), so that epochs of
 * another kind may follow; both ranks leave together. */
static double epochs(const context *c, int op, int sync, long size, long count, long per)
{
    int origin = c->rank == 0;
    /* the lock after the barrier: the target's own exclusive lock (its
     * local access before a verified epoch) is released by then */
    MPI_Barrier(c->comm);
    if (sync == SYNC_FLUSH && origin)
        MPI_Win_lock_all(0, c->win);
    double t0 = MPI_Wtime();
    if (sync == SYNC_FENCE) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, c->win);
        for (long i = 0; i < count; i++) {
            for (long k = 0; origin && k < per; k++)
                issue(c, op, size);
            MPI_Win_fence(i == count - 1 ? MPI_MODE_NOSUCCEED : 0, c->win);
        }
    } else if (sync == SYNC_FLUSH) {
        for (long i = 0; origin && i < count; i++) {
            for (long k = 0; k < per; k++)
                issue(c, op, size);
            MPI_Win_flush(1, c->win);
        }
    } else if (sync == SYNC_LOCK) {
        for (long i = 0; origin && i < count; i++) {
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, c->win);
            for (long k = 0; k < per; k++)
                issue(c, op, size);
            MPI_Win_unlock(1, c->win);
        }
    } else {
        for (long i = 0; i < count; i++) {
            if (origin) {
                MPI_Win_start(c->peer, 0, c->win);
                for (long k = 0; k < per; k++)
                    issue(c, op, size);
                MPI_Win_complete(c->win);
            } else {
                MPI_Win_post(c->peer, 0, c->win);
                MPI_Win_wait(c->win);
            }
        }
    }
    double seconds = (MPI_Wtime() - t0) / (double)count;
    if (sync == SYNC_FLUSH && origin)
        MPI_Win_unlock_all(c->win);
    /* the target of a passive epoch waits here, inside the library, until
     * the origin's last epoch is closed: nothing it does next overlaps it */
    MPI_Barrier(c->comm);
    return seconds;
}

/* Rank 0 prints one result line: median, min and max of the samples. */
static void report(const context *c, int op, int sync, int metric, long size, double *s,
                   long n, long per)
{
    if (c->rank != 0)
        return;
    double lo = sb_min(s, (int)n), hi = s[0];
    for (long i = 1; i < n; i++)
        if (s[i] > hi)
            hi = s[i];
    double med = sb_median(s, (int)n);
    printf("SENTINEL_RMA op=%s sync=%s metric=%s bytes=%ld samples=%ld ", op_names[op],
           sync_names[sync], metric_names[metric], size, n);
    if (metric == M_BW) { /* seconds per epoch -> MB/s; the slowest sample is the min rate */
        double mb = (double)(size * per) / 1e6;
        printf("median_mbs=%.2f min_mbs=%.2f max_mbs=%.2f\n", mb / med, mb / hi, mb / lo);
    } else {
        printf("median_us=%.4f min_us=%.4f max_us=%.4f\n", med * 1e6, lo * 1e6, hi * 1e6);
    }
    fflush(stdout);
}

static void measure(const context *c, const options *o, int op, int sync, int metric,
                    long size, double *samples)
{
    int bw = metric == M_BW;
    long count = sb_sample_count(&o->s, bw, size), per = bw ? o->s.window : 1;
    long warmup = sb_warmup_count(&o->s, count);
    if (warmup)
        epochs(c, op, sync, size, warmup, per);
    for (long r = 0; r < o->s.repetitions; r++)
        samples[r] = epochs(c, op, sync, size, count, per);
    report(c, op, sync, metric, size, samples, o->s.repetitions, per);
}

/* What element i of the target's window holds before a verified accumulate,
 * and what the origin adds to it. */
static int acc_base(long size, long i)
{
    return (int)((i * 7 + size) % 65521);
}

static int acc_addend(long size, long i)
{
    return (int)((i * 13 + size * 3) % 65519) + 1;
}

/* The target's local access to its own window memory, outside any epoch of
 * the origin's: an exclusive lock on itself makes the stores and loads
 * consistent with the window in either memory model. */
static void target_prepare(const context *c, const options *o, int op, long size)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->win);
    if (op == OP_PUT) {
        memset(c->memory, 0xa5, (size_t)size);
    } else if (op == OP_GET) {
        sb_pattern_fill(c->memory, size, 0, 1);
        if (o->corrupt_at == size)
            c->memory[size / 2] = (char)(c->memory[size / 2] ^ 0x01);
    } else {
        int *w = (int *)(void *)c->memory;
        for (long i = 0; i < size / 4; i++)
            w[i] = acc_base(size, i);
    }
    MPI_Win_unlock(1, c->win);
}

static void origin_prepare(const context *c, const options *o, int op, long size)
{
    int corrupt = o->corrupt_at == size;
    if (op == OP_PUT) {
        sb_pattern_fill(c->origin, size, 0, 0);
        if (corrupt)
            c->origin[size / 2] = (char)(c->origin[size / 2] ^ 0x01);
    } else if (op == OP_GET) {
        memset(c->origin, 0x5a, (size_t)size);
    } else {
        int *a = (int *)(void *)c->origin;
        for (long i = 0; i < size / 4; i++)
            a[i] = acc_addend(size, i);
        if (corrupt)
            a[size / 8] += 1;
    }
}

/* Checks what landed; the first wrong byte (element, for acc) in *v. */
static void check(const context *c, int op, long size, sb_verdict *v)
{
    if (op == OP_PUT) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->win);
        sb_pattern_check(c->memory, size, 0, 0, v);
        MPI_Win_unlock(1, c->win);
    } else if (op == OP_GET) {
        sb_pattern_check(c->origin, size, 0, 1, v);
    } else {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->win);
        const int *w = (const int *)(const void *)c->memory;
        for (long i = 0; i < size / 4; i++) {
            int want = acc_base(size, i) + acc_addend(size, i);
            if (w[i] != want && v->errors++ == 0) {
                v->message = 0;
                v->offset = i * 4;
                v->expected = want;
                v->got = w[i];
            }
        }
        MPI_Win_unlock(1, c->win);
    }
}

/* One untimed epoch of `op` under `sync`, verified where its data lands; rank
 * 0 prints its SENTINEL_VERIFY line and the first wrong value if any. */
static void verify(const context *c, const options *o, int op, int sync, long size)
{
    sb_verdict v = {0, -1, -1, 0, 0};
    int checker = op == OP_GET ? 0 : 1; /* the rank whose memory the data lands in */
    if (c->rank == 1)
        target_prepare(c, o, op, size);
    else
        origin_prepare(c, o, op, size);
    epochs(c, op, sync, size, 1, 1);
    if (c->rank == checker)
        check(c, op, size, &v);
    long found[3] = {v.errors, v.offset, 0};
    int vals[2] = {v.expected, v.got};
    if (checker == 1) {
        if (c->rank == 1) {
            MPI_Send(found, 3, MPI_LONG, 0, 20, c->comm);
            MPI_Send(vals, 2, MPI_INT, 0, 21, c->comm);
            return;
        }
        MPI_Recv(found, 3, MPI_LONG, 1, 20, c->comm, MPI_STATUS_IGNORE);
        MPI_Recv(vals, 2, MPI_INT, 1, 21, c->comm, MPI_STATUS_IGNORE);
    } else if (c->rank == 1) {
        return;
    }
    printf("SENTINEL_VERIFY op=%s sync=%s bytes=%ld errors=%ld\n", op_names[op],
           sync_names[sync], size, found[0]);
    if (found[0])
        printf("SENTINEL_CORRUPT op=%s sync=%s bytes=%ld from=%d to=%d offset=%ld "
               "expected=0x%x got=0x%x errors=%ld unit=%s\n", op_names[op], sync_names[sync],
               size, 1 - checker, checker, found[1], (unsigned)vals[0], (unsigned)vals[1],
               found[0], op == OP_ACC ? "int" : "byte");
    fflush(stdout);
}

static int setup(context *c, const options *o)
{
    size_t bytes = (size_t)o->max_size;
    int ok = posix_memalign((void **)&c->memory, 4096, bytes) == 0 &&
             posix_memalign((void **)&c->origin, 4096, bytes) == 0;
    if (ok) { /* touched before any timing: no page fault in a timed region */
        memset(c->memory, 0, bytes);
        memset(c->origin, 1, bytes);
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c->comm);
    if (!ok)
        return -1;
    MPI_Win_create(c->memory, (MPI_Aint)bytes, 1, MPI_INFO_NULL, c->comm, &c->win);
    c->win_made = 1;
    MPI_Group all;
    int other = 1 - c->rank;
    MPI_Comm_group(c->comm, &all);
    MPI_Group_incl(all, 1, &other, &c->peer);
    MPI_Group_free(&all);
    return 0;
}

static void teardown(context *c)
{
    if (c->win_made) {
        MPI_Win_free(&c->win);
        MPI_Group_free(&c->peer);
    }
    free(c->memory);
    free(c->origin);
}

/* Ranks 0 and 1: every operation, synchronisation and size. */
static int run(MPI_Comm pair, int rank, const void *opts)
{
    const options *o = opts;
    context c = {.comm = pair, .rank = rank};
    double *samples = malloc((size_t)o->s.repetitions * sizeof(double));
    int ok = samples != NULL;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, pair);
    if (!ok || setup(&c, o) != 0) {
        char err[256];
        snprintf(err, sizeof err, "cannot allocate two buffers of %ld bytes", o->max_size);
        sb_error(c.comm, PROGRAM, err);
        teardown(&c);
        free(samples);
        return 3;
    }
    if (c.rank == 0) {
        printf("SENTINEL_WINDOW model=%s\n", memory_model(c.win));
        fflush(stdout);
    }
    for (int op = 0; op < NOP; op++)
        for (int sync = 0; sync < NSYNC; sync++) {
            if (!(o->ops & (1u << op)) || !(o->syncs & (1u << sync)))
                continue;
            for (long size = o->min_size; size <= o->max_size; size *= 2) {
                for (int m = 0; m < NMETRIC; m++)
                    if (o->metrics & (1u << m))
                        measure(&c, o, op, sync, m, size, samples);
                verify(&c, o, op, sync, size);
            }
        }
    teardown(&c);
    free(samples);
    return 0;
}

int main(int argc, char **argv)
{
    static const sb_pair_bench bench = {PROGRAM, parse_options, NULL, print_config, run};
    options o;
    return sb_pair_main(argc, argv, &bench, &o);
}
