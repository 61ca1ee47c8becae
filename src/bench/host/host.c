/* The node itself, without MPI or the network: what every MPI figure of a
 * job rests on, measured in the job before its launches.
 *
 *   roundtrip: a cache line's round trip between two threads pinned to two
 *              CPUs (what a shared-memory ping-pong's small-message latency
 *              rests on; it moves when the CPUs are throttled, shared with
 *              another process, or, on a VM, moved between cores);
 *   copy:      the bandwidth of a memcpy past the caches on the first CPU
 *              (what a large on-node message rests on; it moves with the
 *              memory's speed and with another process streaming).
 *
 * Usage: host [--cpus A,B] [--batches N] [--trips N] [--copy-mib N]
 *             [--quiet-roundtrip-ns N] [--quiet-copy-mbs N] [--quiet-wait-s S]
 * With --quiet-wait-s, a node outside the quiet thresholds (a round trip
 * above N ns, a copy below N MB/s: the bands of the node's own nights) is
 * measured again every 2 s until it is within them or S seconds passed: a
 * failure measured again is measured on a quiet node where the node's
 * disturbance was passing; the line then says how long it waited
 * (waited_s, tries) and whether the node was quiet at the end (quiet).
 * Without --cpus, the first two CPUs this process may run on; a process
 * given one CPU (a job of one rank per node and one CPU per rank) measures
 * the copy alone, and its SENTINEL_HOST line says why it has no round trip
 * (roundtrip=one_cpu).
 *
 * Output: SENTINEL_CONFIG, one SENTINEL_HOST line with each figure's median
 * over the batches and its distribution-free 95 % interval, SENTINEL_DONE.
 * Not an MPI program: it never initialises MPI (it links the suite's
 * helpers, which the MPI wrapper builds). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/bench_common.h"

enum { MAX_BATCHES = 1000 };
/* Seconds each copy batch spans at least: several scheduler time slices. */
#define COPY_BATCH_S 0.015

static _Alignas(64) atomic_long ball;
/* The partner's start: 0 while it pins itself, 1 pinned, -1 it could not. */
static atomic_int partner_ready;

typedef struct {
    int cpu;
    long rounds;
} partner_args;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The partner: answers every odd value with the next even one. */
static void *partner(void *arg)
{
    partner_args *p = arg;
    if (pin(p->cpu) != 0) {
        atomic_store(&partner_ready, -1);
        return NULL;
    }
    atomic_store(&partner_ready, 1);
    for (long i = 0; i < p->rounds; i++) {
        long want = 2 * i + 1;
        while (atomic_load_explicit(&ball, memory_order_acquire) != want)
            ;
        atomic_store_explicit(&ball, want + 1, memory_order_release);
    }
    return NULL;
}

/* The first two CPUs of this process's affinity into cpus[]; how many it has
 * of them (0 when the affinity cannot be read). */
static int first_two_cpus(long cpus[2])
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    int found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &set))
            cpus[found++] = c;
    return found;
}

/* Round-trip times (ns) of each batch into out[]; -1 when a CPU cannot be taken. */
static int round_trips(const long cpus[2], long batches, long trips, double *out)
{
    atomic_store(&ball, 0);
    atomic_store(&partner_ready, 0);
    if (pin((int)cpus[0]) != 0) {
        fprintf(stderr, "host: cannot pin to CPU %ld\n", cpus[0]);
        return -1;
    }
    partner_args args = {(int)cpus[1], batches * trips};
    pthread_t thread;
    if (pthread_create(&thread, NULL, partner, &args) != 0) {
        fprintf(stderr, "host: cannot start the partner thread\n");
        return -1;
    }
    int ready;
    while ((ready = atomic_load(&partner_ready)) == 0)
        ;
    if (ready < 0) {
        pthread_join(thread, NULL);
        fprintf(stderr, "host: cannot pin the partner thread to CPU %ld\n", cpus[1]);
        return -1;
    }
    long value = 0;
    for (long k = 0; k < batches; k++) {
        double t0 = now();
        for (long i = 0; i < trips; i++) {
            atomic_store_explicit(&ball, ++value, memory_order_release);
            ++value;
            while (atomic_load_explicit(&ball, memory_order_acquire) != value)
                ;
        }
        out[k] = (now() - t0) / (double)trips * 1e9;
    }
    pthread_join(thread, NULL);
    return 0;
}

/* Copy bandwidths (GB/s) of each batch into out[]; -1 when memory is short. */
static int copies(long batches, size_t bytes, double *out)
{
    char *src = malloc(bytes), *dst = malloc(bytes);
    if (src == NULL || dst == NULL) {
        fprintf(stderr, "host: cannot allocate 2 x %zu bytes\n", bytes);
        free(src);
        free(dst);
        return -1;
    }
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    for (long k = 0; k < batches; k++) {
        /* Copies until the batch spans COPY_BATCH_S: a batch shorter than the
         * scheduler's time slice runs whole in the probe's own slices, and a
         * CPU shared with another process would not move its median. */
        double t0 = now(), t;
        long copies_done = 0;
        do {
            memcpy(dst, src, bytes);
            src[copies_done % (long)bytes] = dst[bytes - 1]; /* the copy is used */
            copies_done++;
        } while ((t = now() - t0) < COPY_BATCH_S);
        out[k] = (double)bytes * (double)copies_done / t / 1e9;
    }
    free(src);
    free(dst);
    return 0;
}

typedef struct {
    long roundtrip_ns, copy_mbs, wait_s; /* 0: no threshold, no wait */
} quiet_limits;

typedef struct {
    double trip_ns[MAX_BATCHES], copy_gbs[MAX_BATCHES];
} probe_batches;

/* One measurement of both figures into b; 0, or -1 (said on stderr). */
static int measure(const long pair[2], int have, long batches, long trips, size_t bytes,
                   probe_batches *b)
{
    if (have == 2 && round_trips(pair, batches, trips, b->trip_ns) != 0)
        return -1;
    if (have == 1 && pin((int)pair[0]) != 0) {
        fprintf(stderr, "host: cannot pin to CPU %ld\n", pair[0]);
        return -1;
    }
    return copies(batches, bytes, b->copy_gbs);
}

/* Whether the medians of b are within the quiet limits (a limit of 0 holds). */
static int is_quiet(probe_batches *b, int have, long batches, const quiet_limits *q)
{
    double copy = sb_median(b->copy_gbs, (int)batches) * 1000.0;
    if (q->copy_mbs > 0 && copy < (double)q->copy_mbs)
        return 0;
    return have < 2 || q->roundtrip_ns <= 0
           || sb_median(b->trip_ns, (int)batches) <= (double)q->roundtrip_ns;
}

static void pause_seconds(long s)
{
    struct timespec ts = {.tv_sec = s, .tv_nsec = 0};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    sb_int_list cpus = {.count = 0};
    long batches = 15, trips = 20000, copy_mib = 32;
    quiet_limits q = {0, 0, 0};
    const sb_option table[] = {
        SB_OPTION_LIST("--cpus", &cpus, 0, CPU_SETSIZE - 1),
        SB_OPTION_LONG("--batches", &batches, 9, MAX_BATCHES),
        SB_OPTION_LONG("--trips", &trips, 100, 100000000),
        SB_OPTION_LONG("--copy-mib", &copy_mib, 1, 65536),
        SB_OPTION_LONG("--quiet-roundtrip-ns", &q.roundtrip_ns, 1, 100000000),
        SB_OPTION_LONG("--quiet-copy-mbs", &q.copy_mbs, 1, 100000000),
        SB_OPTION_LONG("--quiet-wait-s", &q.wait_s, 1, 86400),
        SB_OPTION_HELP("--help"),
    };
    char err[2048] = "";
    const char *usage = "usage: host [--cpus A,B] [--batches N>=9] [--trips N] [--copy-mib N]\n"
                        "            [--quiet-roundtrip-ns N] [--quiet-copy-mbs N] "
                        "[--quiet-wait-s S]\n";
    if (sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, sizeof err) != 0) {
        fprintf(stderr, "host: %s\n", err);
        return 2;
    }
    if (q.wait_s > 0 && q.roundtrip_ns == 0 && q.copy_mbs == 0) {
        fprintf(stderr, "host: --quiet-wait-s needs --quiet-roundtrip-ns or --quiet-copy-mbs\n");
        return 2;
    }
    long pair[2] = {-1, -1};
    int have = 2;
    if (cpus.count == 0 && (have = first_two_cpus(pair)) == 0) {
        fprintf(stderr, "host: cannot read this process's CPU affinity\n");
        return 2;
    }
    if (cpus.count != 0 && (cpus.count != 2 || cpus.values[0] == cpus.values[1])) {
        fprintf(stderr, "host: --cpus takes two different CPUs, A,B\n");
        return 2;
    }
    if (cpus.count == 2) {
        pair[0] = cpus.values[0];
        pair[1] = cpus.values[1];
    }
    static probe_batches b;
    double started = now();
    int tries = 0, quiet;
    for (;;) {
        tries++;
        if (measure(pair, have, batches, trips, (size_t)copy_mib << 20, &b) != 0)
            return 2;
        quiet = is_quiet(&b, have, batches, &q);
        if (quiet || q.wait_s == 0 || now() - started + 2.0 > (double)q.wait_s)
            break;
        pause_seconds(2);
    }
    double waited = now() - started;
    double copy_lo, copy_hi;
    sb_median_interval(b.copy_gbs, (int)batches, &copy_lo, &copy_hi);
    printf("SENTINEL_CONFIG bench=host cpu_a=%ld cpu_b=%ld batches=%ld trips=%ld copy_mib=%ld\n",
           pair[0], pair[1], batches, trips, copy_mib);
    if (have == 2) {
        double trip_lo, trip_hi;
        sb_median_interval(b.trip_ns, (int)batches, &trip_lo, &trip_hi);
        printf("SENTINEL_HOST roundtrip_ns=%.1f roundtrip_lo=%.1f roundtrip_hi=%.1f ",
               sb_median(b.trip_ns, (int)batches), trip_lo, trip_hi);
    } else {
        printf("SENTINEL_HOST roundtrip=one_cpu ");
    }
    printf("copy_gbs=%.3f copy_lo=%.3f copy_hi=%.3f", sb_median(b.copy_gbs, (int)batches),
           copy_lo, copy_hi);
    if (q.wait_s > 0)
        printf(" waited_s=%.1f tries=%d quiet=%d", waited, tries, quiet);
    printf("\n");
    printf("SENTINEL_DONE bench=host\n");
    return 0;
}
