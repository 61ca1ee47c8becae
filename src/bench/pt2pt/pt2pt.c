/* Point-to-point characterisation between ranks 0 and 1 (the methods of Qian 2004).
 *
 * Metrics (--metrics):
 *   latency     ping-pong, half round trip, per send mode (--modes):
 *               standard, synchronous, buffered, ready, diffbuf (standard mode
 *               cycling through 16 buffers)
 *   unilatency  rank 0 sends a batch back to back, rank 1 acknowledges once
 *   bw          windowed unidirectional bandwidth: rank 0 posts a window of
 *               nonblocking sends, rank 1 acknowledges each window once
 *   bibw        windowed bidirectional bandwidth (bytes of both directions)
 *   logp        parameterised LogP inputs: g(0) by saturation with zero-byte
 *               sends, o_s(m) (time in MPI_Send), o_r(m) (time in MPI_Recv of
 *               a message that has already arrived)
 * Every value is the median of --repetitions samples, each the mean over
 * --iterations operations (--windows windows for bw and bibw), printed with
 * the min and max of the samples.
 *
 * --buffers device puts every buffer handed to MPI in the timed loops in GPU
 * memory (a GPU build: make pt2pt GPU=cuda|rocm, and a GPU-aware MPI); the
 * MPI_Bsend attach buffer stays in host memory, MPI copies into it.
 *
 * --verify N: after each size's samples, N untimed ping-pongs whose every
 * payload carries a pattern of its own (size, message, direction) and is
 * checked byte by byte on arrival, the receive buffer poisoned before each
 * receive (a message that never landed is caught too): one SENTINEL_VERIFY
 * line per size, and a SENTINEL_CORRUPT line for the first wrong byte of
 * each direction. --corrupt-at SIZE flips one byte of rank 0's first
 * verified message of that size after its pattern is written: what a link
 * that delivers a wrong byte does (a test of the verdict, never a site's). */
#include "../common/bench_common.h"
#include "../common/bench_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "pt2pt"
#define NBUF 16

enum { M_LATENCY, M_UNILATENCY, M_BW, M_BIBW, M_LOGP, NMETRIC };
enum { MODE_STANDARD, MODE_SYNC, MODE_BUFFERED, MODE_READY, MODE_DIFFBUF, NMODE };
static const char *const metric_names[NMETRIC] = {"latency", "unilatency", "bw", "bibw", "logp"};
static const char *const mode_names[NMODE] = {"standard", "synchronous", "buffered",
                                              "ready", "diffbuf"};

typedef struct {
    long min_size, max_size;
    sb_samples s; /* the sample counts */
    unsigned metrics, modes;
    long verify, corrupt_at; /* --verify messages per size; --corrupt-at size (0: none) */
    int buffers;     /* sb_buf_kind */
    sb_gpu_info gpu; /* --buffers device: this rank's GPU (prepare) */
} options;

typedef struct {
    MPI_Comm comm;
    int rank, peer;
    sb_buf_kind kind; /* where buf[] lives (--buffers) */
    char *buf[NBUF];  /* max_size + 1 bytes each (host: page-aligned): [0] receives, [1] sends */
    MPI_Request *reqs;
    MPI_Status *stats;
    char *bsend;     /* attached buffer for MPI_Bsend (host memory) */
    int attached;    /* bsend is attached */
} context;

static const char usage[] =
    "usage: pt2pt [--metrics latency,unilatency,bw,bibw,logp]\n"
    "             [--modes standard,synchronous,buffered,ready,diffbuf]\n"
    "             [--min-size B] [--max-size B] [--iterations N] [--iterations-large N]\n"
    "             [--windows N] [--windows-large N] [--repetitions R] [--warmup W]\n"
    "             [--window W] [--buffers host|device] [--verify N] [--corrupt-at B]\n"
    "  sizes are 0 (when --min-size is 0) and the powers of two up to --max-size\n"
    "  (default 4194304); per sample --iterations (1000) operations up to 64 KiB,\n"
    "  --iterations-large (100) above, and --windows (100) / --windows-large (20)\n"
    "  windows of --window (64) messages for bw and bibw; --repetitions samples (10)\n"
    "  per value; --warmup (100) untimed operations per size before the samples,\n"
    "  scaled by the sample's count over --iterations (10 before 20 windows);\n"
    "  --verify N (0) untimed ping-pongs per size, every byte checked (host buffers);\n"
    "  --corrupt-at B flips a byte of the first verified message of B bytes (tests)\n"
    SB_BUFFERS_USAGE;

static int parse_options(int argc, char **argv, void *opts, char *err, size_t errlen)
{
    options *o = opts;
    *o = (options){0, 4194304, {1000, 100, 100, 20, 10, 100, 64},
                   (1u << NMETRIC) - 1, (1u << NMODE) - 1, 0, 0, SB_BUF_HOST, {0, 0, ""}};
    const sb_option table[] = {
        SB_OPTION_NAMES("--metrics", &o->metrics, metric_names, NMETRIC),
        SB_OPTION_NAMES("--modes", &o->modes, mode_names, NMODE),
        SB_OPTION_LONG("--min-size", &o->min_size, 0, 1L << 30),
        SB_OPTION_LONG("--max-size", &o->max_size, 1, 1L << 30),
        SB_SAMPLE_OPTIONS(&o->s),
        SB_OPTION_NAME("--buffers", &o->buffers, sb_buf_kind_names, SB_NBUF_KIND),
        SB_OPTION_LONG("--verify", &o->verify, 0, 100000000),
        SB_OPTION_LONG("--corrupt-at", &o->corrupt_at, 0, 1L << 30),
    };
    if (sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, errlen) != 0)
        return -1;
    if (o->verify && o->buffers == SB_BUF_DEVICE) {
        snprintf(err, errlen, "--verify checks payloads in host memory: not with --buffers device");
        return -1;
    }
    if (o->corrupt_at && !o->verify) {
        snprintf(err, errlen, "--corrupt-at %ld corrupts a verified message: it needs --verify",
                 o->corrupt_at);
        return -1;
    }
    return sb_check_size_range(o->min_size, o->max_size, err, errlen);
}

/* --buffers device: every rank takes its GPU before anything is printed. */
static int prepare(void *opts)
{
    options *o = opts;
    if (o->buffers != SB_BUF_DEVICE)
        return 0;
    return sb_gpu_setup(MPI_COMM_WORLD, PROGRAM, &o->gpu) == 0 ? 0 : 2;
}

static void print_config(const void *opts, int world)
{
    const options *o = opts;
    printf("SENTINEL_CONFIG bench=pt2pt ranks=%d min_size=%ld max_size=%ld", world,
           o->min_size, o->max_size);
    sb_print_samples(&o->s);
    printf(" buffers=%s verify=%ld", sb_buf_kind_names[o->buffers], o->verify);
    if (o->corrupt_at)
        printf(" corrupt_at=%ld", o->corrupt_at);
    if (o->buffers == SB_BUF_DEVICE) /* rank 0's device */
        printf(" gpu_runtime=%s gpu_name=%s gpu_count=%d gpu_device=%d", sb_gpu_runtime(),
               o->gpu.name, o->gpu.count, o->gpu.device);
    printf("\n");
}

/* A blocking send in the standard, synchronous or buffered mode. */
static void send_in_mode(int mode, char *b, int n, int dest, int tag, MPI_Comm comm)
{
    if (mode == MODE_SYNC)
        MPI_Ssend(b, n, MPI_CHAR, dest, tag, comm);
    else if (mode == MODE_BUFFERED)
        MPI_Bsend(b, n, MPI_CHAR, dest, tag, comm);
    else
        MPI_Send(b, n, MPI_CHAR, dest, tag, comm);
}

/* One ping-pong of `size` bytes in `mode`; i selects the buffer (diffbuf). */
static void pingpong(context *c, int mode, long size, long i, int last)
{
    /* Receive into one buffer, send from another, as OSU does; diffbuf
     * cycles through all of them for both. */
    char *rb = c->buf[mode == MODE_DIFFBUF ? i % NBUF : 0];
    char *sb = mode == MODE_DIFFBUF ? rb : c->buf[1];
    int n = (int)size;
    if (mode == MODE_READY) {
        /* Each side posts its receive before the message that makes the
         * other side send: the matching receive always exists in time. */
        if (c->rank == 0) {
            MPI_Irecv(rb, n, MPI_CHAR, 1, 1, c->comm, &c->reqs[0]);
            MPI_Rsend(sb, n, MPI_CHAR, 1, 0, c->comm);
            MPI_Wait(&c->reqs[0], &c->stats[0]);
        } else {
            MPI_Wait(&c->reqs[1], &c->stats[1]);
            if (!last)
                MPI_Irecv(rb, n, MPI_CHAR, 0, 0, c->comm, &c->reqs[1]);
            MPI_Rsend(sb, n, MPI_CHAR, 0, 1, c->comm);
        }
        return;
    }
    if (c->rank == 0) {
        send_in_mode(mode, sb, n, 1, 0, c->comm);
        MPI_Recv(rb, n, MPI_CHAR, 1, 1, c->comm, &c->stats[0]);
    } else {
        MPI_Recv(rb, n, MPI_CHAR, 0, 0, c->comm, &c->stats[0]);
        send_in_mode(mode, sb, n, 0, 1, c->comm);
    }
}

/* Run `count` ping-pongs; returns the mean half round trip in seconds. */
static double pingpong_batch(context *c, int mode, long size, long count)
{
    if (mode == MODE_READY && c->rank == 1)
        MPI_Irecv(c->buf[0], (int)size, MPI_CHAR, 0, 0, c->comm, &c->reqs[1]);
    MPI_Barrier(c->comm);
    double t0 = MPI_Wtime();
    for (long i = 0; i < count; i++)
        pingpong(c, mode, size, i, i == count - 1);
    return (MPI_Wtime() - t0) / (2.0 * (double)count);
}

/* Rank 1 tells rank 0 that everything sent so far has arrived. */
static void acknowledge(context *c)
{
    if (c->rank == 1)
        MPI_Send(NULL, 0, MPI_CHAR, 0, 3, c->comm);
    else
        MPI_Recv(NULL, 0, MPI_CHAR, 1, 3, c->comm, &c->stats[0]);
}

/* Rank 0 streams `count` messages (unilatency: one zero-byte acknowledgement
 * closes the batch) or `count` windows (bw, bibw: each window is acknowledged,
 * so windows never overlap). Returns seconds per message. */
static double stream_batch(context *c, int metric, long size, long count, long window)
{
    int n = (int)size;
    MPI_Barrier(c->comm);
    double t0 = MPI_Wtime();
    if (metric == M_UNILATENCY) {
        for (long i = 0; i < count; i++) {
            if (c->rank == 0)
                MPI_Send(c->buf[0], n, MPI_CHAR, 1, 0, c->comm);
            else
                MPI_Recv(c->buf[0], n, MPI_CHAR, 0, 0, c->comm, &c->stats[0]);
        }
    } else {
        for (long i = 0; i < count; i++) {
            int k = 0;
            /* One receive and one send buffer for the whole window, as OSU
             * does: bandwidth, not the cache footprint of 2 x window buffers. */
            for (long w = 0; w < window; w++) {
                if (c->rank == 1 || metric == M_BIBW)
                    MPI_Irecv(c->buf[0], n, MPI_CHAR, c->peer, 2, c->comm, &c->reqs[k++]);
                if (c->rank == 0 || metric == M_BIBW)
                    MPI_Isend(c->buf[1], n, MPI_CHAR, c->peer, 2, c->comm, &c->reqs[k++]);
            }
            MPI_Waitall(k, c->reqs, c->stats);
            acknowledge(c);
        }
    }
    if (metric == M_UNILATENCY)
        acknowledge(c);
    double per = metric == M_UNILATENCY ? (double)count : (double)(count * window);
    return (MPI_Wtime() - t0) / per;
}

static void busy_wait(double seconds)
{
    double until = MPI_Wtime() + seconds;
    while (MPI_Wtime() < until) {
    }
}

/* LogP overheads: mean seconds rank 0 spends in MPI_Send (which=0) or in
 * MPI_Recv of a message that has already arrived (which=1). */
static double overhead_batch(context *c, long size, long count, int which, double delay)
{
    int n = (int)size;
    double spent = 0.0;
    MPI_Barrier(c->comm);
    for (long i = 0; i < count; i++) {
        if (which == 0) {
            if (c->rank == 0) {
                double t = MPI_Wtime();
                MPI_Send(c->buf[0], n, MPI_CHAR, 1, 4, c->comm);
                spent += MPI_Wtime() - t;
                MPI_Recv(NULL, 0, MPI_CHAR, 1, 5, c->comm, &c->stats[0]);
            } else {
                MPI_Recv(c->buf[0], n, MPI_CHAR, 0, 4, c->comm, &c->stats[0]);
                MPI_Send(NULL, 0, MPI_CHAR, 0, 5, c->comm);
            }
        } else {
            if (c->rank == 0) {
                MPI_Send(NULL, 0, MPI_CHAR, 1, 6, c->comm);
                busy_wait(delay);
                double t = MPI_Wtime();
                MPI_Recv(c->buf[0], n, MPI_CHAR, 1, 7, c->comm, &c->stats[0]);
                spent += MPI_Wtime() - t;
            } else {
                MPI_Recv(NULL, 0, MPI_CHAR, 0, 6, c->comm, &c->stats[0]);
                MPI_Send(c->buf[0], n, MPI_CHAR, 0, 7, c->comm);
            }
        }
    }
    return spent / (double)count;
}

/* Print one result line from rank 0: median, min and max of the samples. */
static void report(const context *c, const char *metric, const char *mode, long size,
                   double *samples, long nsamples, int bandwidth, long bytes_per_op)
{
    if (c->rank != 0)
        return;
    double lo = sb_min(samples, (int)nsamples), hi = samples[0];
    for (long i = 1; i < nsamples; i++)
        if (samples[i] > hi)
            hi = samples[i];
    double med = sb_median(samples, (int)nsamples);
    if (bandwidth) { /* seconds per op -> MB/s; the slowest sample is the min rate */
        double b = (double)bytes_per_op / 1e6;
        printf("SENTINEL_PT2PT metric=%s mode=%s bytes=%ld samples=%ld median_mbs=%.2f "
               "min_mbs=%.2f max_mbs=%.2f\n", metric, mode, size, nsamples,
               b / med, b / hi, b / lo);
    } else {
        printf("SENTINEL_PT2PT metric=%s mode=%s bytes=%ld samples=%ld median_us=%.4f "
               "min_us=%.4f max_us=%.4f\n", metric, mode, size, nsamples, med * 1e6,
               lo * 1e6, hi * 1e6);
    }
    fflush(stdout);
}

typedef double (*batch_fn)(context *, int, long, long, long);

static double run_latency(context *c, int mode, long size, long count, long unused)
{
    (void)unused;
    return pingpong_batch(c, mode, size, count);
}

static double run_stream(context *c, int metric, long size, long count, long window)
{
    return stream_batch(c, metric, size, count, window);
}

/* Warm up, take --repetitions samples of `fn` and report them. */
static void measure(context *c, const options *o, batch_fn fn, int which, long size,
                    const char *metric, const char *mode, int bandwidth, long bytes_per_op,
                    double *samples)
{
    long count = sb_sample_count(&o->s, bandwidth, size);
    long warmup = sb_warmup_count(&o->s, count);
    if (warmup)
        fn(c, which, size, warmup, o->s.window);
    for (long r = 0; r < o->s.repetitions; r++)
        samples[r] = fn(c, which, size, count, o->s.window);
    report(c, metric, mode, size, samples, o->s.repetitions, bandwidth, bytes_per_op);
}

static void measure_logp(context *c, const options *o, long size, double *samples)
{
    long count = sb_sample_count(&o->s, 0, size);
    /* Wait long enough for the message to arrive before timing MPI_Recv. */
    double rtt = 2.0 * pingpong_batch(c, MODE_STANDARD, size, count < 10 ? count : 10);
    MPI_Bcast(&rtt, 1, MPI_DOUBLE, 0, c->comm);
    for (long r = 0; r < o->s.repetitions; r++)
        samples[r] = overhead_batch(c, size, count, 0, 0.0);
    report(c, "logp_os", "standard", size, samples, o->s.repetitions, 0, 0);
    for (long r = 0; r < o->s.repetitions; r++)
        samples[r] = overhead_batch(c, size, count, 1, 2.0 * rtt + 1e-6);
    report(c, "logp_or", "standard", size, samples, o->s.repetitions, 0, 0);
}

/* --verify: untimed ping-pongs of `size` bytes, every payload checked where it
 * lands. Rank 0 prints the size's line and, for each direction that went
 * wrong, its first wrong byte. */
static void verify_size(context *c, const options *o, long size)
{
    sb_verdict mine = {0, -1, -1, 0, 0};
    char *rb = c->buf[0], *sb = c->buf[1];
    int n = (int)size, peer = c->peer;
    MPI_Barrier(c->comm);
    for (long i = 0; i < o->verify; i++) {
        memset(rb, 0x5a ^ (int)(i & 0xff), (size_t)size); /* poison: a stale buffer fails */
        if (c->rank == 0) {
            sb_pattern_fill(sb, size, i, 0);
            if (i == 0 && o->corrupt_at == size)
                sb[size / 2] = (char)(sb[size / 2] ^ 0x01);
            MPI_Send(sb, n, MPI_CHAR, peer, 8, c->comm);
            MPI_Recv(rb, n, MPI_CHAR, peer, 9, c->comm, &c->stats[0]);
            sb_pattern_check(rb, size, i, 1, &mine);
        } else {
            MPI_Recv(rb, n, MPI_CHAR, peer, 8, c->comm, &c->stats[0]);
            sb_pattern_check(rb, size, i, 0, &mine);
            sb_pattern_fill(sb, size, i, 1);
            MPI_Send(sb, n, MPI_CHAR, peer, 9, c->comm);
        }
    }
    long theirs[3] = {0, -1, -1};
    int bytes[2] = {0, 0};
    if (c->rank == 1) {
        long sent[3] = {mine.errors, mine.message, mine.offset};
        int vals[2] = {mine.expected, mine.got};
        MPI_Send(sent, 3, MPI_LONG, 0, 10, c->comm);
        MPI_Send(vals, 2, MPI_INT, 0, 11, c->comm);
        return;
    }
    MPI_Recv(theirs, 3, MPI_LONG, 1, 10, c->comm, &c->stats[0]);
    MPI_Recv(bytes, 2, MPI_INT, 1, 11, c->comm, &c->stats[0]);
    printf("SENTINEL_VERIFY bytes=%ld messages=%ld errors=%ld\n", size, 2 * o->verify,
           mine.errors + theirs[0]);
    if (theirs[0]) /* rank 1 received wrong bytes from rank 0 */
        printf("SENTINEL_CORRUPT bytes=%ld from=0 to=1 message=%ld offset=%ld expected=0x%02x "
               "got=0x%02x errors=%ld\n", size, theirs[1], theirs[2], bytes[0], bytes[1],
               theirs[0]);
    if (mine.errors)
        printf("SENTINEL_CORRUPT bytes=%ld from=1 to=0 message=%ld offset=%ld expected=0x%02x "
               "got=0x%02x errors=%ld\n", size, mine.message, mine.offset, mine.expected,
               mine.got, mine.errors);
    fflush(stdout);
}

static void run_size(context *c, const options *o, long size, double *samples)
{
    if (o->metrics & (1u << M_LATENCY))
        for (int m = 0; m < NMODE; m++)
            if (o->modes & (1u << m))
                measure(c, o, run_latency, m, size, "latency", mode_names[m], 0, 0, samples);
    if (o->metrics & (1u << M_UNILATENCY))
        measure(c, o, run_stream, M_UNILATENCY, size, "unilatency", "standard", 0, 0, samples);
    if (size > 0 && (o->metrics & (1u << M_BW)))
        measure(c, o, run_stream, M_BW, size, "bw", "standard", 1, size, samples);
    if (size > 0 && (o->metrics & (1u << M_BIBW)))
        measure(c, o, run_stream, M_BIBW, size, "bibw", "standard", 1, 2 * size, samples);
    if (o->metrics & (1u << M_LOGP)) {
        if (size == 0) /* g(0): back-to-back zero-byte sends saturate the path */
            measure(c, o, run_stream, M_UNILATENCY, 0, "logp_g0", "standard", 0, 0, samples);
        measure_logp(c, o, size, samples);
    }
    if (o->verify && size > 0)
        verify_size(c, o, size);
}

/* Allocates the buffers; 0, or -1 after writing this rank's problem (if it
 * had one) to err. */
static int setup(context *c, const options *o, char *err, size_t errlen)
{
    int ok = 1;
    for (int i = 0; i < NBUF; i++) {
        /* Host buffers page-aligned as OSU's, and touched so that no page
         * fault lands in a timed region; device buffers set by the runtime's
         * memset (host code never touches them). */
        void *p = NULL;
        if (ok && (p = sb_buf_alloc(c->kind, (size_t)o->max_size + 1, err, errlen)) == NULL)
            ok = 0;
        c->buf[i] = p;
        if (p && sb_buf_set(c->kind, p, 'a' + i, (size_t)o->max_size + 1, err, errlen) != 0)
            ok = 0;
    }
    c->reqs = malloc((size_t)(2 * o->s.window + 2) * sizeof(MPI_Request));
    c->stats = malloc((size_t)(2 * o->s.window + 2) * sizeof(MPI_Status));
    int bsize = 0;
    MPI_Pack_size((int)o->max_size, MPI_CHAR, c->comm, &bsize);
    bsize += MPI_BSEND_OVERHEAD;
    c->bsend = malloc((size_t)bsize);
    ok = ok && c->reqs && c->stats && c->bsend;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c->comm);
    if (ok)
        c->attached = MPI_Buffer_attach(c->bsend, bsize) == MPI_SUCCESS;
    return ok ? 0 : -1;
}

static void teardown(context *c)
{
    void *b;
    int size;
    if (c->attached) /* not when setup failed before attaching */
        MPI_Buffer_detach(&b, &size);
    for (int i = 0; i < NBUF; i++)
        sb_buf_free(c->kind, c->buf[i]);
    free(c->reqs);
    free(c->stats);
    free(c->bsend);
}

/* Ranks 0 and 1: every size. */
static int run(MPI_Comm pair, int rank, const void *opts)
{
    const options *o = opts;
    context c = {.comm = pair, .rank = rank, .peer = 1 - rank, .kind = o->buffers};
    int rc = 0;
    char why[256] = "";
    double *samples = malloc((size_t)o->s.repetitions * sizeof(double));
    if (samples == NULL || setup(&c, o, why, sizeof why) != 0) {
        char err[512];
        if (c.kind == SB_BUF_HOST)
            snprintf(err, sizeof err, "cannot allocate %d buffers of %ld bytes", NBUF,
                     o->max_size);
        else
            snprintf(err, sizeof err, "cannot allocate %d device buffers of %ld bytes%s%s%s",
                     NBUF, o->max_size, why[0] ? " (rank 0: " : "", why, why[0] ? ")" : "");
        sb_error(c.comm, PROGRAM, err);
        rc = 3;
    } else {
        if (o->min_size == 0)
            run_size(&c, o, 0, samples);
        for (long size = 1; size <= o->max_size; size *= 2)
            if (size >= o->min_size)
                run_size(&c, o, size, samples);
    }
    teardown(&c);
    free(samples);
    return rc;
}

int main(int argc, char **argv)
{
    static const sb_pair_bench bench = {PROGRAM, parse_options, prepare, print_config, run};
    options o;
    return sb_pair_main(argc, argv, &bench, &o);
}
