/* 3-D 7-point Jacobi relaxation on a Cartesian process grid, MPI + OpenMP
 * (after Stathopoulos 2010; the model of Banerjee 2022 is evaluated by the check).
 *
 * Each iteration: halo swap (one face per neighbour), jacobi (every interior
 * point from its 6 neighbours, into the other of two arrays), delta (local
 * sum of squared changes, then MPI_Allreduce). Modes (--mode):
 *   pure       one thread per rank (MPI_THREAD_SINGLE)
 *   master     OpenMP on the loops; MPI outside parallel regions (FUNNELED)
 *   funnelled  one parallel region: the master thread swaps the halo while
 *              the other threads update the inner points (FUNNELED)
 *   multiple   each thread swaps the halo of its own slab (MULTIPLE)
 * Threads split the first dimension into slabs, so ranks x threads constant
 * keeps the problem the same.
 *
 * Sizes: --local L (weak scaling: L^3 points per rank) or --global G (strong
 * scaling: G^3 points over all ranks; G divisible by the process grid).
 * Output: one SENTINEL_JACOBI line per repetition (per-phase seconds and
 * MLUP/s), one SENTINEL_JACOBI_RESULT line (checksum of the final field, the
 * same for every mode and decomposition of one global problem) and the
 * rank and thread placement. */
#define _GNU_SOURCE /* sched_getcpu, sched_getaffinity */
#include "../common/bench_common.h"
#include "../common/bench_omp.h"

#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define PROGRAM "jacobi"

enum { MODE_PURE, MODE_MASTER, MODE_FUNNELLED, MODE_MULTIPLE, NMODE };
static const char *const mode_names[NMODE] = {"pure", "master", "funnelled", "multiple"};
static const int mode_level[NMODE] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED,
                                      MPI_THREAD_FUNNELED, MPI_THREAD_MULTIPLE};

typedef struct {
    int mode;
    long local, global, iterations, repetitions;
    sb_int_list dims;
} options;

/* Faces: 2*d is the low side of dimension d, 2*d+1 the high side. */
typedef struct {
    MPI_Comm cart;
    int rank, size, threads, k;
    int dims[3], coords[3], nbr[6];
    int n[3];             /* local interior points per dimension (x = first) */
    size_t sy, sx;        /* strides of j and i (k is contiguous) */
    double *u[2];
    double *sbuf[6], *rbuf[6];
} grid;

static const char usage[] =
    "usage: jacobi --mode pure|master|funnelled|multiple (--local L | --global G)\n"
    "              [--iterations N] [--repetitions R] [--dims a,b,c]\n"
    "  --local L: L^3 points per rank (weak scaling); --global G: G^3 points over all\n"
    "  ranks (strong scaling); --iterations (20) sweeps per repetition; --repetitions (3);\n"
    "  --dims the process grid (default MPI_Dims_create); threads: OMP_NUM_THREADS\n";

static int parse_options(int argc, char **argv, options *o, char *err, size_t errlen)
{
    *o = (options){.mode = -1, .iterations = 20, .repetitions = 3};
    const sb_option table[] = {
        SB_OPTION_NAME("--mode", &o->mode, mode_names, NMODE),
        SB_OPTION_LONG("--local", &o->local, 1, 4096),
        SB_OPTION_LONG("--global", &o->global, 1, 65536),
        SB_OPTION_LONG("--iterations", &o->iterations, 1, 1000000),
        SB_OPTION_LONG("--repetitions", &o->repetitions, 1, 1000),
        SB_OPTION_LIST("--dims", &o->dims, 1, 1 << 20),
    };
    if (sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, errlen) != 0)
        return -1;
    if (o->mode < 0) {
        snprintf(err, errlen, "--mode is required\n%s", usage);
        return -1;
    }
    if ((o->local > 0) == (o->global > 0)) {
        snprintf(err, errlen, "give exactly one of --local and --global\n%s", usage);
        return -1;
    }
    if (o->dims.count != 0 && o->dims.count != 3) {
        snprintf(err, errlen, "--dims needs 3 values, got %d", o->dims.count);
        return -1;
    }
    return 0;
}

#define IDX(g, i, j, k) ((size_t)(i) * (g)->sx + (size_t)(j) * (g)->sy + (size_t)(k))

/* The process grid, local sizes and buffers; returns 0 or writes err. */
static int setup(grid *g, const options *o, char *err, size_t errlen)
{
    int world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0};
    if (o->dims.count == 3) {
        long prod = 1;
        for (int d = 0; d < 3; d++) {
            dims[d] = (int)o->dims.values[d];
            prod *= dims[d];
        }
        if (prod != world) {
            snprintf(err, errlen, "--dims %d,%d,%d has %ld processes, the run has %d", dims[0],
                     dims[1], dims[2], prod, world);
            return -1;
        }
    } else {
        MPI_Dims_create(world, 3, dims);
    }
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &g->cart);
    MPI_Comm_rank(g->cart, &g->rank);
    MPI_Comm_size(g->cart, &g->size);
    MPI_Cart_coords(g->cart, g->rank, 3, g->coords);
    g->k = 0;
    for (int d = 0; d < 3; d++) {
        g->dims[d] = dims[d];
        g->k += dims[d] > 1;
        MPI_Cart_shift(g->cart, d, 1, &g->nbr[2 * d], &g->nbr[2 * d + 1]);
        if (o->global > 0 && o->global % dims[d] != 0) {
            snprintf(err, errlen, "--global %ld is not divisible by the process grid %d,%d,%d",
                     o->global, dims[0], dims[1], dims[2]);
            return -1;
        }
        g->n[d] = (int)(o->local > 0 ? o->local : o->global / dims[d]);
    }
    if (g->n[0] < g->threads) {
        snprintf(err, errlen, "%d points along the first dimension cannot be split over %d "
                 "threads", g->n[0], g->threads);
        return -1;
    }
    g->sy = (size_t)g->n[2] + 2;
    g->sx = g->sy * ((size_t)g->n[1] + 2);
    size_t points = g->sx * ((size_t)g->n[0] + 2);
    int ok = 1;
    for (int a = 0; a < 2; a++)
        ok = ok && (g->u[a] = malloc(points * sizeof(double))) != NULL;
    size_t face[3] = {(size_t)g->n[1] * g->n[2], (size_t)g->n[0] * g->n[2],
                      (size_t)g->n[0] * g->n[1]};
    for (int f = 0; f < 6; f++) {
        ok = ok && (g->sbuf[f] = malloc(face[f / 2] * sizeof(double))) != NULL;
        ok = ok && (g->rbuf[f] = malloc(face[f / 2] * sizeof(double))) != NULL;
    }
    if (!ok) {
        snprintf(err, errlen, "cannot allocate the %dx%dx%d local grid", g->n[0], g->n[1],
                 g->n[2]);
        return -1;
    }
    return 0;
}

/* Deterministic start values from global coordinates; the boundary stays 0. */
static void initialise(grid *g)
{
    for (int a = 0; a < 2; a++) {
        double *u = g->u[a];
#pragma omp parallel for num_threads(g->threads) schedule(static)
        for (int i = 0; i < g->n[0] + 2; i++)
            for (int j = 0; j < g->n[1] + 2; j++)
                for (int k = 0; k < g->n[2] + 2; k++) {
                    int interior = i && j && k && i <= g->n[0] && j <= g->n[1] && k <= g->n[2];
                    long gx = (long)g->coords[0] * g->n[0] + i, gy = (long)g->coords[1] * g->n[1] + j,
                         gz = (long)g->coords[2] * g->n[2] + k;
                    u[IDX(g, i, j, k)] = interior ? (double)((gx * 7 + gy * 13 + gz * 17) % 23) / 23.0
                                                  : 0.0;
                }
    }
}

/* Copy face f of rows i0..i1-1 between the grid and a buffer (pack=1: to
 * the buffer). The x faces (f 0, 1) ignore the row range. Buffers of the y
 * and z faces are laid out row by row, so a slab is one contiguous part. */
static void copy_face(grid *g, double *u, int f, int i0, int i1, int pack)
{
    int d = f / 2, high = f % 2;
    double *b = pack ? g->sbuf[f] : g->rbuf[f];
    /* pack reads the first/last interior layer; unpack writes the halo. */
    int layer = pack ? (high ? g->n[d] : 1) : (high ? g->n[d] + 1 : 0);
    size_t off = 0;
    if (d == 0) {
        for (int j = 1; j <= g->n[1]; j++)
            for (int k = 1; k <= g->n[2]; k++, off++) {
                double *p = &u[IDX(g, layer, j, k)];
                if (pack) b[off] = *p; else *p = b[off];
            }
        return;
    }
    off = (size_t)(i0 - 1) * (size_t)(d == 1 ? g->n[2] : g->n[1]);
    for (int i = i0; i < i1; i++) {
        if (d == 1) {
            for (int k = 1; k <= g->n[2]; k++, off++) {
                double *p = &u[IDX(g, i, layer, k)];
                if (pack) b[off] = *p; else *p = b[off];
            }
        } else {
            for (int j = 1; j <= g->n[1]; j++, off++) {
                double *p = &u[IDX(g, i, j, layer)];
                if (pack) b[off] = *p; else *p = b[off];
            }
        }
    }
}

#define X_FACES 0x03
#define YZ_FACES 0x3c
#define ALL_FACES 0x3f

/* Swap the faces in mask (bit f: face f) with message tag `tag`, for rows
 * i0..i1-1 of the y and z faces (the x faces are whole planes); every rank
 * calls it with the same rows and tags. */
static void halo_part(grid *g, double *u, int i0, int i1, int mask, int tag)
{
    MPI_Request req[12];
    MPI_Status st[12]; /* not MPI_STATUSES_IGNORE: GCC flags MPICH's definition of it */
    int nreq = 0;
    for (int f = 0; f < 6; f++) {
        if (g->nbr[f] == MPI_PROC_NULL || !(mask & (1 << f)))
            continue;
        int d = f / 2;
        size_t row = d == 0 ? 0 : (size_t)(d == 1 ? g->n[2] : g->n[1]);
        int count = d == 0 ? g->n[1] * g->n[2] : (int)(row * (size_t)(i1 - i0));
        size_t off = d == 0 ? 0 : row * (size_t)(i0 - 1);
        copy_face(g, u, f, i0, i1, 1);
        /* A message from the neighbour's opposite face carries tag*6 + f^1. */
        MPI_Irecv(g->rbuf[f] + off, count, MPI_DOUBLE, g->nbr[f], tag * 6 + f, g->cart,
                  &req[nreq++]);
        MPI_Isend(g->sbuf[f] + off, count, MPI_DOUBLE, g->nbr[f], tag * 6 + (f ^ 1), g->cart,
                  &req[nreq++]);
    }
    MPI_Waitall(nreq, req, st);
    for (int f = 0; f < 6; f++)
        if (g->nbr[f] != MPI_PROC_NULL && (mask & (1 << f)))
            copy_face(g, u, f, i0, i1, 0);
}

/* Update the points of rows i0..i1-1, columns j0..j1-1, k0..k1-1. */
static void sweep(const grid *g, const double *u, double *v, int i0, int i1, int j0, int j1,
                  int k0, int k1)
{
    for (int i = i0; i < i1; i++)
        for (int j = j0; j < j1; j++)
            for (int k = k0; k < k1; k++) {
                size_t c = IDX(g, i, j, k);
                v[c] = (u[c - g->sx] + u[c + g->sx] + u[c - g->sy] + u[c + g->sy] + u[c - 1] +
                        u[c + 1]) / 6.0;
            }
}

/* The layer of points next to the halo (they need the swapped values). */
static void sweep_shell_row(const grid *g, const double *u, double *v, int i)
{
    int nx = g->n[0], ny = g->n[1], nz = g->n[2];
    if (i == 1 || i == nx) {
        sweep(g, u, v, i, i + 1, 1, ny + 1, 1, nz + 1);
        return;
    }
    sweep(g, u, v, i, i + 1, 1, 2, 1, nz + 1);
    if (ny > 1)
        sweep(g, u, v, i, i + 1, ny, ny + 1, 1, nz + 1);
    for (int j = 2; j < ny; j++) {
        sweep(g, u, v, i, i + 1, j, j + 1, 1, 2);
        if (nz > 1)
            sweep(g, u, v, i, i + 1, j, j + 1, nz, nz + 1);
    }
}

static void slab(int t, int nt, int lo, int hi, int *i0, int *i1)
{
    int n = hi - lo;
    *i0 = lo + (int)((long)n * t / nt);
    *i1 = lo + (int)((long)n * (t + 1) / nt);
}

typedef struct {
    double jacobi, halo, delta, total, change;
} phases;

/* One iteration from u to v in the given mode, accumulating phase times. */
static void iterate(grid *g, int mode, double *u, double *v, phases *p)
{
    int nx = g->n[0], ny = g->n[1], nz = g->n[2], nt = g->threads;
    double t0 = MPI_Wtime(), t_halo = t0;
    if (mode == MODE_PURE || mode == MODE_MASTER) {
        halo_part(g, u, 1, nx + 1, ALL_FACES, 0);
        t_halo = MPI_Wtime();
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int i = 1; i <= nx; i++)
            sweep(g, u, v, i, i + 1, 1, ny + 1, 1, nz + 1);
    } else if (mode == MODE_FUNNELLED) {
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num();
            if (t == 0) {
                halo_part(g, u, 1, nx + 1, ALL_FACES, 0);
                t_halo = MPI_Wtime();
            }
            /* Inner points by the other threads (by the master alone if it is alone). */
            if (nt == 1 || t > 0) {
                int i0, i1;
                slab(nt == 1 ? 0 : t - 1, nt == 1 ? 1 : nt - 1, 2, nx > 2 ? nx : 2, &i0, &i1);
                if (ny > 2 && nz > 2)
                    sweep(g, u, v, i0, i1, 2, ny, 2, nz);
            }
#pragma omp barrier
#pragma omp for schedule(static)
            for (int i = 1; i <= nx; i++)
                sweep_shell_row(g, u, v, i);
        }
    } else {
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), i0, i1;
            slab(t, nt, 1, nx + 1, &i0, &i1);
            halo_part(g, u, i0, i1, YZ_FACES, t + 1);
            if (t == 0)
                halo_part(g, u, 1, nx + 1, X_FACES, 0); /* whole planes, by one thread */
#pragma omp barrier
#pragma omp master
            t_halo = MPI_Wtime();
            sweep(g, u, v, i0, i1, 1, ny + 1, 1, nz + 1);
        }
    }
    double t1 = MPI_Wtime(), local = 0.0, global = 0.0;
#pragma omp parallel for num_threads(nt) reduction(+ : local) schedule(static)
    for (int i = 1; i <= nx; i++)
        for (int j = 1; j <= ny; j++)
            for (int k = 1; k <= nz; k++) {
                double d = v[IDX(g, i, j, k)] - u[IDX(g, i, j, k)];
                local += d * d;
            }
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, g->cart);
    double t2 = MPI_Wtime();
    p->halo += t_halo - t0;
    p->jacobi += t1 - t_halo;
    p->delta += t2 - t1;
    p->change = global;
}

/* One repetition: fresh start values, `iterations` sweeps; prints its line. */
static void repetition(grid *g, const options *o, int rep)
{
    phases p = {0};
    initialise(g);
    MPI_Barrier(g->cart);
    double start = MPI_Wtime();
    for (long it = 0; it < o->iterations; it++)
        iterate(g, o->mode, g->u[it % 2], g->u[(it + 1) % 2], &p);
    double total = MPI_Wtime() - start, slowest = 0.0;
    /* Phases: the mean over ranks; time and MLUP/s: the slowest rank. */
    double mine[4] = {p.jacobi, p.halo, p.delta, total - p.jacobi - p.halo - p.delta}, sum[4];
    MPI_Reduce(mine, sum, 4, MPI_DOUBLE, MPI_SUM, 0, g->cart);
    MPI_Reduce(&total, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, g->cart);
    if (g->rank != 0)
        return;
    double points = (double)g->n[0] * g->n[1] * g->n[2] * g->size;
    printf("SENTINEL_JACOBI rep=%d iterations=%ld time_s=%.6e jacobi_s=%.6e halo_s=%.6e "
           "delta_s=%.6e other_s=%.6e sweep_s=%.6e mlups=%.4f change=%.9e\n", rep,
           o->iterations, slowest, sum[0] / g->size, sum[1] / g->size, sum[2] / g->size,
           sum[3] / g->size, slowest / (double)o->iterations,
           points * (double)o->iterations / slowest / 1e6, p.change);
    fflush(stdout);
}

/* Sum and maximum of the final field over every rank. */
static void report_result(grid *g, const options *o)
{
    const double *u = g->u[o->iterations % 2];
    double mine[2] = {0.0, 0.0}, all[2];
    for (int i = 1; i <= g->n[0]; i++)
        for (int j = 1; j <= g->n[1]; j++)
            for (int k = 1; k <= g->n[2]; k++) {
                double x = u[IDX(g, i, j, k)];
                mine[0] += x;
                mine[1] = fabs(x) > mine[1] ? fabs(x) : mine[1];
            }
    MPI_Reduce(&mine[0], &all[0], 1, MPI_DOUBLE, MPI_SUM, 0, g->cart);
    MPI_Reduce(&mine[1], &all[1], 1, MPI_DOUBLE, MPI_MAX, 0, g->cart);
    if (g->rank == 0)
        printf("SENTINEL_JACOBI_RESULT checksum=%.15e max=%.15e\n", all[0], all[1]);
}

int main(int argc, char **argv)
{
    options o;
    char err[2048] = "";
    int parsed = parse_options(argc, argv, &o, err, sizeof err);
    int required = parsed == 0 ? mode_level[o.mode] : MPI_THREAD_SINGLE, provided;
    int rc = sb_start_threaded(&argc, &argv, PROGRAM, parsed, err, 1,
                               parsed == 0 ? mode_names[o.mode] : NULL, required, &provided);
    if (rc != 0)
        return rc;
    grid g = {.threads = o.mode != MODE_PURE ? omp_get_max_threads() : 1};
    rc = setup(&g, &o, err, sizeof err);
    int failed = rc != 0;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (failed) {
        if (rc != 0)
            fprintf(stderr, "%s: error: %s\n", PROGRAM, err);
        MPI_Finalize();
        return 3;
    }
    if (g.rank == 0)
        printf("SENTINEL_CONFIG bench=jacobi ranks=%d threads=%d mode=%s required=%s "
               "provided=%s dims=%d,%d,%d local=%d,%d,%d global=%ld,%ld,%ld scaling=%s k=%d "
               "iterations=%ld repetitions=%ld\n", g.size, g.threads, mode_names[o.mode],
               sb_thread_level_name(required), sb_thread_level_name(provided), g.dims[0],
               g.dims[1], g.dims[2],
               g.n[0], g.n[1], g.n[2], (long)g.n[0] * g.dims[0], (long)g.n[1] * g.dims[1],
               (long)g.n[2] * g.dims[2], o.local > 0 ? "weak" : "strong", g.k, o.iterations,
               o.repetitions);
    if (sb_report_environment(g.cart) != 0 || sb_report_threads(g.cart, g.threads) != 0) {
        MPI_Finalize();
        return 3;
    }
    for (long r = 0; r < o.repetitions; r++)
        repetition(&g, &o, (int)r);
    report_result(&g, &o);
    if (g.rank == 0)
        printf("SENTINEL_DONE bench=jacobi\n");
    for (int a = 0; a < 2; a++)
        free(g.u[a]);
    for (int f = 0; f < 6; f++) {
        free(g.sbuf[f]);
        free(g.rbuf[f]);
    }
    MPI_Comm_free(&g.cart);
    sb_finalize(PROGRAM);
    return 0;
}
