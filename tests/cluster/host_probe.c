/* The host's own speed, without MPI or the network, for the detection test.
 *
 * Prints one line: "HOST_PROBE roundtrip_ns=R copy_gbs=C", where
 *   R: the median time of a cache line's round trip between two threads
 *      pinned to CPUs a and b (what a shared-memory ping-pong's small-message
 *      latency rests on; on a VM it changes when the hypervisor moves vCPUs
 *      between cores, caches or sockets);
 *   C: the median bandwidth of a 32 MiB memcpy on CPU a (past the caches).
 *
 * Usage: host_probe CPU_A CPU_B
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TRIPS = 20000, BATCHES = 15, COPY_BYTES = 32 << 20 };

static _Alignas(64) atomic_int ball;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

/* The partner: returns every odd value as the next even one. */
static void *partner(void *arg)
{
    if (pin(*(int *)arg) != 0)
        return (void *)1;
    for (int i = 0; i < BATCHES * TRIPS; i++) {
        int want = 2 * i + 1;
        while (atomic_load_explicit(&ball, memory_order_acquire) != want)
            ;
        atomic_store_explicit(&ball, want + 1, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s CPU_A CPU_B\n", argv[0]);
        return 2;
    }
    int a = atoi(argv[1]), b = atoi(argv[2]);
    if (a == b) {
        /* two spinning threads on one CPU trade it once a time slice */
        fprintf(stderr, "host_probe: CPU_A and CPU_B must differ (both are %d)\n", a);
        return 2;
    }
    if (pin(a) != 0) {
        fprintf(stderr, "host_probe: cannot pin to CPU %d\n", a);
        return 2;
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, partner, &b) != 0) {
        fprintf(stderr, "host_probe: cannot start the partner thread\n");
        return 2;
    }
    double trips[BATCHES], copies[BATCHES];
    int value = 0;
    for (int k = 0; k < BATCHES; k++) {
        double t0 = now();
        for (int i = 0; i < TRIPS; i++) {
            atomic_store_explicit(&ball, ++value, memory_order_release);
            ++value;
            while (atomic_load_explicit(&ball, memory_order_acquire) != value)
                ;
        }
        trips[k] = (now() - t0) / TRIPS * 1e9;
    }
    void *ret = NULL;
    pthread_join(thread, &ret);
    if (ret != NULL) {
        fprintf(stderr, "host_probe: cannot pin the partner to CPU %d\n", b);
        return 2;
    }
    char *src = malloc(COPY_BYTES), *dst = malloc(COPY_BYTES);
    if (src == NULL || dst == NULL) {
        fprintf(stderr, "host_probe: cannot allocate 2 x %d bytes\n", COPY_BYTES);
        return 2;
    }
    memset(src, 1, COPY_BYTES);
    memset(dst, 0, COPY_BYTES);
    for (int k = 0; k < BATCHES; k++) {
        double t0 = now();
        memcpy(dst, src, COPY_BYTES);
        copies[k] = COPY_BYTES / (now() - t0) / 1e9;
        src[k] = dst[COPY_BYTES - 1 - k]; /* the copy is used: not optimised away */
    }
    printf("HOST_PROBE roundtrip_ns=%.1f copy_gbs=%.2f\n", median(trips, BATCHES),
           median(copies, BATCHES));
    free(src);
    free(dst);
    return 0;
}
