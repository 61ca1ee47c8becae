/* Fabric: every node pair, concurrent pairs, latency under load, permutation traffic.
 *
 * Run with one rank per node for --mode pairs, aggregate and loaded (rank i
 * stands for its node; SENTINEL_AFFINITY names it), any placement for
 * --mode patterns (each pair is counted on-node or off-node by the hosts
 * the ranks report).
 *
 *   pairs      every node pair, in matchings: sets of pairs that share no
 *              node (--rounds all: the circle method's N-1 matchings, N for
 *              an odd N, hold every pair once; --rounds neighbours: the 2
 *              (odd N: 3) that hold the ring neighbours i, i+1). In each
 *              matching, two steps: the lower rank of every pair streams
 *              --iterations messages of --size bytes to the higher, then the
 *              other way; the receiver times them (bandwidth), and then the
 *              pair ping-pongs --latency-iterations 8-byte messages (one-way
 *              latency). Each is the median of --repetitions, which are
 *              passes over the whole sweep (a pair's samples are spread
 *              over its wall time); per directed pair:
 *                SENTINEL_FABRIC_PAIR step=s src=S dst=D bytes=B bw_mbs=X latency_us=L
 *              and the sweep's steps and the wall time of its passes:
 *                SENTINEL_FABRIC_SWEEP steps=n seconds=T
 *              With --confirm K > 0, the suspect links are then measured
 *              again alone, the other ranks idle (see suspects()): the K
 *              most suspect, each pair one way, the medians of
 *              --repetitions, and how many were suspect:
 *                SENTINEL_FABRIC_CONFIRM src=S dst=D bytes=B bw_mbs=X latency_us=L
 *                SENTINEL_FABRIC_CONFIRMS suspects=c confirmed=k seconds=T
 *   aggregate  k = 1 ... N/2 concurrent pairs, rank i streaming to rank
 *              i + N/2 (i < k); the summed bandwidth of the k pairs, the
 *              median of --repetitions and its interval:
 *                SENTINEL_FABRIC_AGGREGATE pairs=k bytes=B bw_mbs=X bw_lo_mbs=L
 *                  bw_hi_mbs=H
 *   loaded     8-byte ping-pong between ranks 0 and 1, first with the other
 *              ranks idle, then while ranks 2,3 4,5 ... stream --size
 *              messages both ways (N >= 4); the median of --repetitions and
 *              its interval:
 *                SENTINEL_FABRIC_LATENCY state=idle|loaded streams=P latency_us=L
 *                  latency_lo_us=A latency_hi_us=B
 *   patterns   the permutations of the Queen's study over the largest power
 *              of two of ranks (bit-reversal, butterfly, complement,
 *              transpose, shuffle, neighbour, cube, baseline) and a random
 *              one: every rank sends --size bytes to its destination while
 *              receiving from its source; accepted bandwidth per rank,
 *              averaged over the ranks whose destination is on their node
 *              and over the others, in each of --repetitions; the median
 *              of those means and its interval (_lo, _hi):
 *                SENTINEL_FABRIC_PATTERN pattern=P ranks=N bytes=B onnode_ranks=a
 *                  onnode_mbs=X onnode_lo_mbs=L onnode_hi_mbs=H offnode_ranks=b
 *                  offnode_mbs=Y offnode_lo_mbs=L offnode_hi_mbs=H
 *              (a mean of none is printed as -, not as a number).
 *   With --verify V > 0 (pairs), after the sweep's passes, every directed
 *   pair of the sweep carries V more messages of --size bytes, untimed, each
 *   with a pattern of its own (step, message, sender) checked byte by byte
 *   where it lands (the receive slots poisoned first):
 *                SENTINEL_VERIFY bytes=B messages=M errors=E
 *                SENTINEL_CORRUPT bytes=B from=S to=D message=K offset=O
 *                  expected=0xXX got=0xYY errors=e   (each receiver that saw one)
 *   --corrupt-link S:D flips one byte of the first verified message from
 *   rank S to rank D after its pattern is written (a test of the verdict).
 * Nothing is printed inside a timed region; rank 0 prints after gathering. */
#include "../common/bench_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "fabric"

enum { M_PAIRS, M_AGGREGATE, M_LOADED, M_PATTERNS, NMODE };
static const char *const mode_names[NMODE] = {"pairs", "aggregate", "loaded", "patterns"};
enum { R_ALL, R_NEIGHBOURS, NROUNDS };
static const char *const round_names[NROUNDS] = {"all", "neighbours"};

enum { P_BITREV, P_BUTTERFLY, P_COMPLEMENT, P_TRANSPOSE, P_SHUFFLE, P_NEIGHBOUR, P_CUBE,
       P_BASELINE, P_RANDOM, NPATTERN };
static const char *const pattern_names[NPATTERN] = {
    "bitrev", "butterfly", "complement", "transpose", "shuffle", "neighbour", "cube",
    "baseline", "random"};

#define TAG_DATA 1
#define TAG_PING 2
#define TAG_STOP 3
#define TAG_VERIFY 4

typedef struct {
    unsigned mode, rounds;
    long bytes, iterations, latency_iterations, repetitions, confirm, verify;
    double bw_factor, latency_factor;
    int corrupt_src, corrupt_dst; /* --corrupt-link S:D; -1: none */
} options;

static const char usage[] =
    "usage: fabric --mode pairs|aggregate|loaded|patterns [--rounds all|neighbours]\n"
    "              [--size B] [--iterations I] [--latency-iterations L] [--repetitions R]\n"
    "  --size (1048576) bytes of the bandwidth messages; --iterations (20) of them per\n"
    "  measurement; --latency-iterations (1000) 8-byte messages per latency; --repetitions\n"
    "  (3) per pair (the median is printed); --rounds (all): every pair, or neighbours\n"
    "  [--confirm K] [--bw-factor F] [--latency-factor F]  (pairs) measure again alone\n"
    "  up to K (0) links whose bandwidth is F (2) times below the partition's level or\n"
    "  latency F (3) times above it, between nodes that are not slow as a whole\n"
    "  [--verify V] (pairs only) V (0) untimed messages per directed pair, every byte checked\n"
    "  (at most --iterations); [--corrupt-link S:D|none] flips a byte from S to D (tests)\n";

/* A list-of-names option that takes exactly one name: its index in *target. */
static int one_name(const char *option, const char *val, const char *const *names, int n,
                    unsigned *target, char *err, size_t errlen)
{
    unsigned mask = 0;
    if (sb_parse_name_list(option, val, names, n, &mask, err, errlen) != 0)
        return -1;
    if (mask == 0 || (mask & (mask - 1))) {
        snprintf(err, errlen, "%s takes one name, got '%s'", option, val);
        return -1;
    }
    for (*target = 0; !(mask & (1u << *target)); (*target)++)
        ;
    return 0;
}

static int parse_mode(const sb_option *opt, const char *val, char *err, size_t errlen)
{
    return one_name(opt->name, val, mode_names, NMODE, opt->target.custom, err, errlen);
}

static int parse_rounds(const sb_option *opt, const char *val, char *err, size_t errlen)
{
    return one_name(opt->name, val, round_names, NROUNDS, opt->target.custom, err, errlen);
}

/* A factor: a number above 1. */
static int parse_factor(const sb_option *opt, const char *val, char *err, size_t errlen)
{
    char *end = NULL;
    double x = strtod(val, &end);
    if (end == val || *end != '\0' || !(x > 1.0 && x < 1e6)) {
        snprintf(err, errlen, "%s: '%s' is not a factor above 1", opt->name, val);
        return -1;
    }
    *(double *)opt->target.custom = x;
    return 0;
}

/* --corrupt-link S:D (two ranks) or none. */
static int parse_link(const sb_option *opt, const char *val, char *err, size_t errlen)
{
    int *link = opt->target.custom, src = -1, dst = -1, used = 0;
    if (strcmp(val, "none") == 0) {
        link[0] = link[1] = -1;
        return 0;
    }
    if (sscanf(val, "%d:%d%n", &src, &dst, &used) != 2 || val[used] != '\0' || src < 0 ||
        dst < 0 || src == dst) {
        snprintf(err, errlen, "%s: '%s' is not two different ranks S:D (or none)", opt->name,
                 val);
        return -1;
    }
    link[0] = src;
    link[1] = dst;
    return 0;
}

static int parse(int argc, char **argv, options *o, char *err, size_t errlen)
{
    *o = (options){.mode = NMODE, .rounds = R_ALL, .bytes = 1048576, .iterations = 20,
                   .latency_iterations = 1000, .repetitions = 3, .confirm = 0,
                   .verify = 0, .bw_factor = 2.0, .latency_factor = 3.0,
                   .corrupt_src = -1, .corrupt_dst = -1};
    int link[2] = {-1, -1};
    const sb_option table[] = {
        SB_OPTION_HELP("--help"),
        SB_OPTION_CUSTOM("--mode", &o->mode, parse_mode),
        SB_OPTION_CUSTOM("--rounds", &o->rounds, parse_rounds),
        SB_OPTION_LONG("--size", &o->bytes, 8, 1L << 30),
        SB_OPTION_LONG("--iterations", &o->iterations, 1, 1000000),
        SB_OPTION_LONG("--latency-iterations", &o->latency_iterations, 1, 100000000),
        SB_OPTION_LONG("--repetitions", &o->repetitions, 1, 1000),
        SB_OPTION_LONG("--confirm", &o->confirm, 0, 100000),
        SB_OPTION_CUSTOM("--bw-factor", &o->bw_factor, parse_factor),
        SB_OPTION_CUSTOM("--latency-factor", &o->latency_factor, parse_factor),
        SB_OPTION_LONG("--verify", &o->verify, 0, 1000000),
        SB_OPTION_CUSTOM("--corrupt-link", link, parse_link),
    };
    if (sb_parse_options(argc, argv, table, SB_COUNT(table), usage, err, errlen) != 0)
        return -1;
    o->corrupt_src = link[0];
    o->corrupt_dst = link[1];
    if (o->verify > o->iterations) {
        snprintf(err, errlen, "--verify %ld: at most --iterations (%ld) messages a pair "
                 "(the receive window's slots)", o->verify, o->iterations);
        return -1;
    }
    if (o->corrupt_src >= 0 && o->verify == 0) {
        snprintf(err, errlen, "--corrupt-link corrupts a verified message: it needs --verify");
        return -1;
    }
    if (o->mode == NMODE) {
        snprintf(err, errlen, "--mode is required\n%s", usage);
        return -1;
    }
    if ((o->verify > 0 || o->corrupt_src >= 0) && o->mode != M_PAIRS) {
        snprintf(err, errlen, "--verify and --corrupt-link check the pairs sweep's links: "
                 "--mode pairs only, not %s", mode_names[o->mode]);
        return -1;
    }
    return 0;
}

typedef struct {
    int rank, size;
    char *send, *recv;
    char (*hosts)[SB_HOST];
} fabric;

/* Seconds until `count` messages of `bytes` from src have arrived, while as
 * many go to dst (either may be MPI_PROC_NULL), timed on this rank. The whole
 * window is posted at once and only the receives are timed, so a slow link
 * slows the flow over it alone, not every rank of a ring in lock-step. */
static double exchange(const fabric *f, int dst, int src, long bytes, long count)
{
    MPI_Request *req = malloc(2 * (size_t)count * sizeof *req);
    MPI_Status *status = malloc(2 * (size_t)count * sizeof *status); /* GCC 12 vs MPICH's
                                                                        STATUSES_IGNORE */
    if (req == NULL || status == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    double t0 = MPI_Wtime();
    for (long i = 0; i < count; i++)
        MPI_Irecv(f->recv + (size_t)i * (size_t)bytes, (int)bytes, MPI_BYTE, src, TAG_DATA,
                  MPI_COMM_WORLD, &req[i]);
    for (long i = 0; i < count; i++)
        MPI_Isend(f->send, (int)bytes, MPI_BYTE, dst, TAG_DATA, MPI_COMM_WORLD,
                  &req[count + i]);
    MPI_Waitall((int)count, req, status);
    double t = MPI_Wtime() - t0;
    MPI_Waitall((int)count, req + count, status + count);
    free(req);
    free(status);
    return t;
}

/* The median of n values and its order-statistics interval (values is reordered). */
typedef struct {
    double median, lo, hi;
} spread;

static spread spread_of(double *values, long n)
{
    spread out;
    out.median = sb_median(values, (int)n);
    sb_median_interval(values, (int)n, &out.lo, &out.hi);
    return out;
}

/* Matchings of the pairs sweep. Every rank is in at most one pair of a
 * matching, so the pairs of one step share no node and a slow node slows
 * its own pair alone (in a shifted ring every node sends and receives at
 * once, and a node stalled on its link holds up its neighbours' protocol
 * traffic too: the slowness spreads along the ring). */
static int matchings(int n, unsigned rounds)
{
    if (rounds == R_ALL)
        return n % 2 ? n : n - 1;
    return n == 2 ? 1 : n % 2 ? 3 : 2;
}

/* The circle method: n - 1 matchings (n odd: n, each with one rank idle)
 * that hold every unordered pair once. Position m - 1 stays; the others
 * turn; in matching j, j meets m - 1 and j + i meets j - i. */
static int circle_peer(int r, int n, int j)
{
    int m = n % 2 ? n + 1 : n, last = m - 1;
    int peer = r == last ? j : r == j ? last : ((2 * j - r) % last + last) % last;
    return peer >= n ? -1 : peer;
}

/* The ring's edges {i, i + 1}, coloured so no rank is in two of a colour:
 * even and odd edges, and for an odd n the closing edge alone. */
static int edge_colour(int edge, int n)
{
    return n % 2 && edge == n - 1 ? 2 : edge % 2;
}

static int neighbour_peer(int r, int n, int j)
{
    if (n == 2)
        return 1 - r;
    if (edge_colour(r, n) == j)
        return (r + 1) % n;
    int before = (r + n - 1) % n;
    return edge_colour(before, n) == j ? before : -1;
}

/* 8-byte ping-pong with peer, this rank first when `first`: one-way
 * microseconds, the median of the repetitions. */
static double pingpong(int peer, int first, const options *o, double *reps)
{
    char byte8[8] = {0};
    for (long rep = 0; rep < o->repetitions; rep++) {
        double t0 = MPI_Wtime();
        for (long i = 0; i < o->latency_iterations; i++) {
            if (first)
                MPI_Send(byte8, 8, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD);
            MPI_Recv(byte8, 8, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!first)
                MPI_Send(byte8, 8, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD);
        }
        reps[rep] = (MPI_Wtime() - t0) * 1e6 / (2.0 * (double)o->latency_iterations);
    }
    return sb_median(reps, (int)o->repetitions);
}

/* One measurement of one step: each pair's lower rank sends (way 0) or
 * receives (way 1); the receiver times the stream (MB/s), then the pair
 * ping-pongs (one-way us). Ranks without a pair take part in the barriers
 * only. `warm`: the first pass over this step, which first moves a message
 * and a tenth of the ping-pongs untimed (connection, registration). */
static void measure(const fabric *f, const options *o, int peer, int way, int warm,
                    double *bw, double *latency)
{
    int sends = peer >= 0 && (way == 0) == (f->rank < peer);
    int receives = peer >= 0 && !sends;
    int to = sends ? peer : MPI_PROC_NULL, from = receives ? peer : MPI_PROC_NULL;
    if (warm)
        exchange(f, to, from, o->bytes, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = exchange(f, to, from, o->bytes, o->iterations);
    *bw = receives ? (double)o->bytes * (double)o->iterations / t / 1e6 : 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    *latency = 0.0;
    if (peer >= 0) {
        double scratch;
        options once = *o;
        once.repetitions = 1;
        if (warm) {
            options few = once;
            few.latency_iterations = o->latency_iterations / 10 + 1;
            pingpong(peer, sends, &few, &scratch);
        }
        *latency = pingpong(peer, sends, &once, &scratch);
    }
}

/* This rank's peer in matching j of the sweep, -1 when it has none. */
static int sweep_peer(const fabric *f, const options *o, int j)
{
    return o->rounds == R_ALL ? circle_peer(f->rank, f->size, j)
                              : neighbour_peer(f->rank, f->size, j);
}

/* A directed pair to measure again alone, and by how much it is suspect. */
typedef struct {
    int src, dst;
    double excess;
} suspect;

/* Each node's median of `bad` (log figures, larger is worse; NAN: not
 * measured) over its pairs both ways, leaving out its pairs with its `trim`
 * worst peers (one peer kept at least): with up to a third of the nodes
 * slow, a healthy node's pairs with them are not its own slowness. */
static void node_levels(const double *bad, int n, int trim, double *level)
{
    double *peer = malloc((size_t)n * sizeof *peer), *kept = malloc(2 * (size_t)n * sizeof *kept);
    if (peer == NULL || kept == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    for (int a = 0; a < n; a++) {
        int peers = 0;
        for (int b = 0; b < n; b++) {
            double x = bad[a * n + b], y = bad[b * n + a];
            int both = !isnan(x) && !isnan(y);
            peer[b] = both ? 0.5 * (x + y) : !isnan(x) ? x : y; /* NAN when neither */
            peers += !isnan(peer[b]);
        }
        int drop = trim < peers - 1 ? trim : peers - 1, count = 0;
        for (int d = 0; d < drop; d++) { /* the worst peer left: out */
            int worst = -1;
            for (int b = 0; b < n; b++)
                if (!isnan(peer[b]) && (worst < 0 || peer[b] > peer[worst]))
                    worst = b;
            peer[worst] = NAN;
        }
        for (int b = 0; b < n; b++) {
            if (isnan(peer[b]))
                continue;
            if (!isnan(bad[a * n + b]))
                kept[count++] = bad[a * n + b];
            if (!isnan(bad[b * n + a]))
                kept[count++] = bad[b * n + a];
        }
        level[a] = count ? sb_median(kept, count) : NAN;
    }
    free(peer);
    free(kept);
}

/* How far each directed pair is past the partition's level, in factors
 * (1: `factor` times worse), into excess[]; NAN for a pair of a node slow
 * as a whole (it is that node's, which the analysis names) or not measured.
 * The level is the median of the node levels (node_levels, a third of the
 * nodes trimmed), as the analysis (sentinel.analysis.fabric) takes it. */
static void excess_of(const double *bad, int n, double factor, double *excess)
{
    double *level = malloc((size_t)n * sizeof *level), *levels = malloc((size_t)n * sizeof *levels);
    if (level == NULL || levels == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    node_levels(bad, n, n / 3 > 1 ? n / 3 : 1, level);
    int count = 0;
    for (int a = 0; a < n; a++)
        if (!isnan(level[a]))
            levels[count++] = level[a];
    double mid = count ? sb_median(levels, count) : NAN, w = log(factor);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            double x = bad[a * n + b];
            int whole = level[a] - mid >= w || level[b] - mid >= w;
            excess[a * n + b] = isnan(x) || whole ? NAN : (x - mid) / w;
        }
    free(level);
    free(levels);
}

/* The suspect links of the sweep's medians (bw, latency: n x n, src-major;
 * NAN not measured), the most suspect first; their count. A link is suspect
 * when its bandwidth or latency is past half the factor (in logs) of the
 * partition's level and neither of its nodes is slow as a whole: the links
 * the analysis may name (past the whole factor), with a margin. */
static int suspects(const double *bw, const double *latency, int n, const options *o,
                    suspect *out)
{
    size_t nn = (size_t)n * (size_t)n;
    double *bad = calloc(2 * nn, sizeof *bad), *excess = malloc(2 * nn * sizeof *excess);
    if (bad == NULL || excess == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    for (size_t i = 0; i < nn; i++) {
        bad[i] = bw[i] > 0.0 ? -log(bw[i]) : NAN;
        bad[nn + i] = latency[i] > 0.0 ? log(latency[i]) : NAN;
    }
    excess_of(bad, n, o->bw_factor, excess);
    excess_of(bad + nn, n, o->latency_factor, excess + nn);
    int count = 0;
    for (size_t i = 0; i < nn; i++) {
        double e = isnan(excess[i]) ? excess[nn + i]
                   : isnan(excess[nn + i]) || excess[i] > excess[nn + i] ? excess[i]
                                                                         : excess[nn + i];
        if (e >= 0.5)
            out[count++] = (suspect){(int)(i / (size_t)n), (int)(i % (size_t)n), e};
    }
    for (int i = 1; i < count; i++) /* insertion sort, most suspect first */
        for (int j = i; j > 0 && out[j].excess > out[j - 1].excess; j--) {
            suspect t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    free(bad);
    free(excess);
    return count;
}

/* The first `count` suspect links measured again, one at a time with every
 * other rank idle in a barrier: a link slow in its step only because of the
 * step's other pairs (a path they share, or on shared hosts their CPUs)
 * is then as fast as the others, and a bad link is still slow. */
static void confirm(const fabric *f, const options *o, const suspect *links, int count,
                    int found)
{
    double *mine = calloc(2 * (size_t)count + 1, sizeof *mine);
    double *all = calloc(2 * (size_t)count + 1, sizeof *all);
    double *reps = malloc((size_t)o->repetitions * sizeof *reps);
    if (mine == NULL || all == NULL || reps == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    double t0 = MPI_Wtime();
    for (int k = 0; k < count; k++) {
        int src = links[k].src, dst = links[k].dst;
        MPI_Barrier(MPI_COMM_WORLD);
        if (f->rank != src && f->rank != dst)
            continue;
        int sends = f->rank == src, peer = sends ? dst : src;
        int to = sends ? dst : MPI_PROC_NULL, from = sends ? MPI_PROC_NULL : src;
        exchange(f, to, from, o->bytes, 1);
        for (long rep = 0; rep < o->repetitions; rep++)
            reps[rep] = (double)o->bytes * (double)o->iterations /
                        exchange(f, to, from, o->bytes, o->iterations) / 1e6;
        double bw = sb_median(reps, (int)o->repetitions);
        options few = *o;
        few.repetitions = 1;
        few.latency_iterations = o->latency_iterations / 10 + 1;
        pingpong(peer, sends, &few, reps);
        double latency = pingpong(peer, sends, o, reps);
        if (!sends) {
            mine[2 * k] = bw;
            mine[2 * k + 1] = latency;
        }
    }
    mine[2 * count] = MPI_Wtime() - t0;
    MPI_Reduce(mine, all, 2 * count + 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    for (int k = 0; f->rank == 0 && k < count; k++)
        printf("SENTINEL_FABRIC_CONFIRM src=%d dst=%d bytes=%ld bw_mbs=%.2f latency_us=%.3f\n",
               links[k].src, links[k].dst, o->bytes, all[2 * k], all[2 * k + 1]);
    if (f->rank == 0)
        printf("SENTINEL_FABRIC_CONFIRMS suspects=%d confirmed=%d seconds=%.3f\n", found, count,
               all[2 * count]);
    free(mine);
    free(all);
    free(reps);
}

/* Rank 0 finds the suspect links of the sweep's medians; every rank then
 * measures its part of the --confirm most suspect again. */
static void confirm_suspects(const fabric *f, const options *o, const double *bw,
                             const double *latency)
{
    int n = f->size, head[2] = {0, 0};
    suspect *links = malloc((size_t)n * (size_t)n * sizeof *links);
    int *ends = malloc(2 * (size_t)n * (size_t)n * sizeof *ends);
    if (links == NULL || ends == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    if (f->rank == 0) {
        head[0] = suspects(bw, latency, n, o, links);
        head[1] = head[0] < o->confirm ? head[0] : (int)o->confirm;
        for (int k = 0; k < head[1]; k++) {
            ends[2 * k] = links[k].src;
            ends[2 * k + 1] = links[k].dst;
        }
    }
    MPI_Bcast(head, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(ends, 2 * head[1], MPI_INT, 0, MPI_COMM_WORLD);
    for (int k = 0; k < head[1]; k++)
        links[k] = (suspect){ends[2 * k], ends[2 * k + 1], 0.0};
    confirm(f, o, links, head[1], head[0]);
    free(links);
    free(ends);
}

/* --verify: every directed pair of the sweep, step by step, carries
 * o->verify untimed messages whose every byte is checked where it lands.
 * Rank 0 prints the total and each receiver's first wrong byte. */
static void verify_pairs(const fabric *f, const options *o)
{
    int steps = 2 * matchings(f->size, o->rounds);
    long v = o->verify, checked = 0;
    size_t bytes = (size_t)o->bytes;
    sb_verdict mine = {0, -1, -1, 0, 0};
    int bad_from = -1;
    MPI_Request *req = malloc((size_t)v * sizeof *req);
    MPI_Status *status = malloc((size_t)v * sizeof *status); /* as in exchange() */
    if (req == NULL || status == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    for (int s = 0; s < steps; s++) {
        int peer = sweep_peer(f, o, s / 2);
        int sends = peer >= 0 && (s % 2 == 0) == (f->rank < peer);
        int receives = peer >= 0 && !sends;
        if (receives) {
            memset(f->recv, 0x5a ^ (s & 0xff), bytes * (size_t)v); /* poison */
            for (long i = 0; i < v; i++)
                MPI_Irecv(f->recv + (size_t)i * bytes, (int)bytes, MPI_BYTE, peer, TAG_VERIFY,
                          MPI_COMM_WORLD, &req[i]);
        }
        for (long i = 0; sends && i < v; i++) {
            sb_pattern_fill(f->send, o->bytes, (long)s * v + i, f->rank);
            if (i == 0 && f->rank == o->corrupt_src && peer == o->corrupt_dst)
                f->send[bytes / 2] = (char)(f->send[bytes / 2] ^ 0x01);
            MPI_Send(f->send, (int)bytes, MPI_BYTE, peer, TAG_VERIFY, MPI_COMM_WORLD);
        }
        if (receives) {
            MPI_Waitall((int)v, req, status);
            long before = mine.errors;
            for (long i = 0; i < v; i++)
                sb_pattern_check(f->recv + (size_t)i * bytes, o->bytes, (long)s * v + i, peer,
                                 &mine);
            if (before == 0 && mine.errors)
                bad_from = peer;
            checked += v;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(req);
    free(status);
    long me[7] = {checked, mine.errors, bad_from, mine.message, mine.offset, mine.expected,
                  mine.got};
    long *all = f->rank == 0 ? malloc(7 * (size_t)f->size * sizeof *all) : NULL;
    if (f->rank == 0 && all == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    MPI_Gather(me, 7, MPI_LONG, all, 7, MPI_LONG, 0, MPI_COMM_WORLD);
    if (f->rank != 0)
        return;
    long total = 0, errors = 0;
    for (int r = 0; r < f->size; r++) {
        total += all[7 * r];
        errors += all[7 * r + 1];
    }
    printf("SENTINEL_VERIFY bytes=%ld messages=%ld errors=%ld\n", o->bytes, total, errors);
    for (int r = 0; r < f->size; r++) {
        const long *x = &all[7 * r];
        if (x[1])
            printf("SENTINEL_CORRUPT bytes=%ld from=%ld to=%d message=%ld offset=%ld "
                   "expected=0x%02lx got=0x%02lx errors=%ld\n", o->bytes, x[2], r, x[3] % v,
                   x[4], (unsigned long)x[5], (unsigned long)x[6], x[1]);
    }
    fflush(stdout);
    free(all);
}

/* The pairs sweep: every directed pair of the matchings, one way at a time.
 * The repetitions are passes over the whole sweep, not back-to-back
 * measurements of one step: a pair's median then comes from samples spread
 * over the sweep's wall time, so a burst of load from elsewhere on a node
 * (a daemon, a neighbour's job) that lasts less than half the sweep is
 * outvoted in every pair, and one that lasts longer moves every pair alike:
 * neither makes one pair look like a slow link. */
static void pairs(const fabric *f, const options *o)
{
    int n = matchings(f->size, o->rounds), steps = 2 * n;
    long reps = o->repetitions;
    double *bw = malloc((size_t)steps * (size_t)reps * sizeof *bw);
    double *latency = malloc((size_t)steps * (size_t)reps * sizeof *latency);
    double *all = malloc(3 * (size_t)f->size * sizeof *all);
    if (bw == NULL || latency == NULL || all == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long rep = 0; rep < reps; rep++)
        for (int s = 0; s < steps; s++) {
            measure(f, o, sweep_peer(f, o, s / 2), s % 2, rep == 0, &bw[s * reps + rep],
                    &latency[s * reps + rep]);
        }
    double seconds = MPI_Wtime() - t0;
    size_t nn = (size_t)f->size * (size_t)f->size;
    double *bw_of = malloc(nn * sizeof *bw_of), *latency_of = malloc(nn * sizeof *latency_of);
    if (bw_of == NULL || latency_of == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    for (size_t i = 0; i < nn; i++)
        bw_of[i] = latency_of[i] = NAN;
    for (int s = 0; s < steps; s++) {
        int peer = sweep_peer(f, o, s / 2);
        int receives = peer >= 0 && (s % 2 == 0) != (f->rank < peer);
        double mine[3] = {receives ? peer : -1, sb_median(&bw[s * reps], (int)reps),
                          peer >= 0 ? sb_median(&latency[s * reps], (int)reps) : 0.0};
        MPI_Gather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        for (int r = 0; f->rank == 0 && r < f->size; r++)
            if (all[3 * r] >= 0.0) {
                int src = (int)all[3 * r];
                bw_of[src * f->size + r] = all[3 * r + 1];
                latency_of[src * f->size + r] = all[3 * r + 2];
                printf("SENTINEL_FABRIC_PAIR step=%d src=%d dst=%d bytes=%ld bw_mbs=%.2f "
                       "latency_us=%.3f\n", s + 1, src, r, o->bytes, all[3 * r + 1],
                       all[3 * r + 2]);
            }
    }
    if (f->rank == 0)
        printf("SENTINEL_FABRIC_SWEEP steps=%d seconds=%.3f\n", steps, seconds);
    if (o->confirm > 0)
        confirm_suspects(f, o, bw_of, latency_of);
    if (o->verify > 0)
        verify_pairs(f, o);
    free(bw_of);
    free(latency_of);
    free(bw);
    free(latency);
    free(all);
}

/* k = 1 ... N/2 pairs (i, i + N/2), i < k, each streaming one way; the
 * summed bandwidth of each repetition, their median and its interval. */
static void aggregate(const fabric *f, const options *o)
{
    int half = f->size / 2;
    double *sums = malloc((size_t)o->repetitions * sizeof *sums);
    if (sums == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    for (int k = 1; k <= half; k++) {
        int sender = f->rank < k, receiver = f->rank >= half && f->rank - half < k;
        int dst = sender ? f->rank + half : MPI_PROC_NULL;
        int src = receiver ? f->rank - half : MPI_PROC_NULL;
        exchange(f, dst, src, o->bytes, 1);
        for (long rep = 0; rep < o->repetitions; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            exchange(f, dst, src, o->bytes, o->iterations);
            double mine = MPI_Wtime() - t0, slowest;
            if (!receiver)
                mine = 0.0;
            MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            sums[rep] = (double)k * (double)o->bytes * (double)o->iterations / slowest / 1e6;
        }
        spread bw = spread_of(sums, o->repetitions);
        if (f->rank == 0)
            printf("SENTINEL_FABRIC_AGGREGATE pairs=%d bytes=%ld bw_mbs=%.2f bw_lo_mbs=%.2f "
                   "bw_hi_mbs=%.2f\n", k, o->bytes, bw.median, bw.lo, bw.hi);
    }
    free(sums);
}

/* Ranks 2, 3, ... stream to their partner until rank 0 says stop; partners
 * agree on stopping each step, so neither waits for a message never sent. */
static void stream(const fabric *f, const options *o)
{
    int partner = f->rank % 2 ? f->rank - 1 : f->rank + 1;
    if (partner >= f->size)
        partner = MPI_PROC_NULL;
    int stop = 0, flag = 0;
    MPI_Request stop_req;
    MPI_Irecv(&stop, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD, &stop_req);
    while (!flag) {
        exchange(f, partner, partner, o->bytes, 1);
        int mine = 0, either = 0;
        MPI_Test(&stop_req, &mine, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&mine, 1, MPI_INT, partner, TAG_STOP, &either, 1, MPI_INT, partner,
                     TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        flag = mine || either;
    }
    if (!stop)
        MPI_Wait(&stop_req, MPI_STATUS_IGNORE);
}

static void loaded(const fabric *f, const options *o)
{
    double *reps = malloc((size_t)o->repetitions * sizeof *reps);
    if (reps == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    spread idle = {0.0, 0.0, 0.0}, busy = idle;
    MPI_Barrier(MPI_COMM_WORLD);
    if (f->rank < 2) {
        pingpong(1 - f->rank, f->rank == 0, o, reps);
        idle = spread_of(reps, o->repetitions);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (f->rank < 2) {
        pingpong(1 - f->rank, f->rank == 0, o, reps);
        busy = spread_of(reps, o->repetitions);
        int stop = 1;
        for (int r = 2; f->rank == 0 && r < f->size; r++)
            MPI_Send(&stop, 1, MPI_INT, r, TAG_STOP, MPI_COMM_WORLD);
    } else {
        stream(f, o);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (f->rank == 0) {
        printf("SENTINEL_FABRIC_LATENCY state=idle streams=0 latency_us=%.3f "
               "latency_lo_us=%.3f latency_hi_us=%.3f\n", idle.median, idle.lo, idle.hi);
        printf("SENTINEL_FABRIC_LATENCY state=loaded streams=%d latency_us=%.3f "
               "latency_lo_us=%.3f latency_hi_us=%.3f\n", (f->size - 2) / 2 * 2, busy.median,
               busy.lo, busy.hi);
    }
    free(reps);
}

/* Destination of rank r (of n = 2^bits ranks) in a pattern. */
static int destination(int pattern, int r, int bits, const int *shuffled)
{
    int n = 1 << bits, top = bits - 1, half = bits / 2, out = 0;
    switch (pattern) {
    case P_BITREV:
        for (int b = 0; b < bits; b++)
            out |= ((r >> b) & 1) << (top - b);
        return out;
    case P_BUTTERFLY: /* swap the highest bit and bit 0 */
        return (r & ~(1 << top) & ~1) | ((r & 1) << top) | ((r >> top) & 1);
    case P_COMPLEMENT:
        return ~r & (n - 1);
    case P_TRANSPOSE: /* swap the high and low halves of the bits */
        return bits % 2 ? r : ((r & ((1 << half) - 1)) << half) | (r >> half);
    case P_SHUFFLE: /* rotate left */
        return ((r << 1) | (r >> top)) & (n - 1);
    case P_NEIGHBOUR:
        return r ^ 1;
    case P_CUBE: /* flip the highest bit */
        return r ^ (1 << top);
    case P_BASELINE: /* rotate all bits right */
        return (r >> 1) | ((r & 1) << top);
    default:
        return shuffled[r];
    }
}

/* A fixed pseudo-random permutation of n ranks (the same on every rank). */
static void random_permutation(int *perm, int n)
{
    unsigned long long state = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        int j = (int)((state >> 33) % (unsigned long long)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* "X lo=L hi=H" of the per-repetition means, or "- lo=- hi=-" where no rank
 * sent to such a destination. */
static void format_spread(char *out, size_t len, const char *where, double *means, long reps,
                          int count)
{
    if (!count) {
        snprintf(out, len, "%s_mbs=- %s_lo_mbs=- %s_hi_mbs=-", where, where, where);
        return;
    }
    spread bw = spread_of(means, reps);
    snprintf(out, len, "%s_mbs=%.2f %s_lo_mbs=%.2f %s_hi_mbs=%.2f", where, bw.median, where,
             bw.lo, where, bw.hi);
}

/* Rank 0: the mean rate of the ranks whose destination is on (0) and off (1)
 * their node, of one repetition; their counts. */
static void mean_rates(const fabric *f, const double *rates, int p, int bits, const int *perm,
                       double mean[2], int count[2])
{
    double sum[2] = {0.0, 0.0};
    count[0] = count[1] = 0;
    for (int r = 0; r < 1 << bits; r++) {
        if (rates[r] < 0.0)
            continue; /* a fixed point sends nothing */
        int off = strcmp(f->hosts[r], f->hosts[destination(p, r, bits, perm)]) != 0;
        sum[off] += rates[r];
        count[off]++;
    }
    for (int w = 0; w < 2; w++)
        mean[w] = count[w] ? sum[w] / count[w] : 0.0;
}

static void patterns(const fabric *f, const options *o)
{
    int bits = 0;
    while ((2 << bits) <= f->size)
        bits++;
    int n = 1 << bits;
    long reps = o->repetitions;
    int *perm = malloc((size_t)n * sizeof *perm), *from = malloc((size_t)n * sizeof *from);
    double *rates = malloc((size_t)f->size * sizeof *rates);
    double *means = malloc(2 * (size_t)reps * sizeof *means);
    if (perm == NULL || from == NULL || rates == NULL || means == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    random_permutation(perm, n);
    for (int p = 0; p < NPATTERN; p++) {
        for (int r = 0; r < n; r++)
            from[destination(p, r, bits, perm)] = r;
        int in = f->rank < n, dst = in ? destination(p, f->rank, bits, perm) : f->rank;
        int src = in ? from[f->rank] : f->rank;
        int moves = in && dst != f->rank;
        int to = moves ? dst : MPI_PROC_NULL, at = in && src != f->rank ? src : MPI_PROC_NULL;
        int count[2] = {0, 0};
        exchange(f, to, at, o->bytes, 1);
        for (long rep = 0; rep < reps; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = exchange(f, to, at, o->bytes, o->iterations);
            double rate = moves ? (double)o->bytes * (double)o->iterations / t / 1e6 : -1.0;
            MPI_Gather(&rate, 1, MPI_DOUBLE, rates, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            double mean[2];
            if (f->rank == 0) {
                mean_rates(f, rates, p, bits, perm, mean, count);
                means[rep] = mean[0];
                means[reps + rep] = mean[1];
            }
        }
        if (f->rank != 0)
            continue;
        char on[96], off[96];
        format_spread(on, sizeof on, "onnode", means, reps, count[0]);
        format_spread(off, sizeof off, "offnode", means + reps, reps, count[1]);
        printf("SENTINEL_FABRIC_PATTERN pattern=%s ranks=%d bytes=%ld onnode_ranks=%d %s "
               "offnode_ranks=%d %s\n", pattern_names[p], n, o->bytes, count[0], on, count[1],
               off);
    }
    free(perm);
    free(from);
    free(rates);
    free(means);
}

int main(int argc, char **argv)
{
    char err[2048] = "";
    options o;
    int parsed = parse(argc, argv, &o, err, sizeof err);
    MPI_Init(&argc, &argv);
    fabric f = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &f.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &f.size);
    int needed = parsed == 0 && o.mode == M_LOADED ? 4 : 2;
    int rc = sb_check_start(PROGRAM, parsed, err, needed);
    if (rc != 0)
        return rc;
    if (f.rank == 0)
        printf("SENTINEL_CONFIG bench=%s ranks=%d mode=%s rounds=%s bytes=%ld iterations=%ld "
               "latency_iterations=%ld repetitions=%ld confirm=%ld verify=%ld\n", PROGRAM,
               f.size, mode_names[o.mode], round_names[o.rounds], o.bytes, o.iterations,
               o.latency_iterations, o.repetitions, o.confirm, o.verify);
    rc = sb_report_environment(MPI_COMM_WORLD) == 0 ? 0 : 3;
    f.send = malloc((size_t)o.bytes);
    /* a window of receives, each into its own slot */
    size_t window = (size_t)o.bytes * (size_t)o.iterations;
    if (window < 8 * (size_t)o.latency_iterations)
        window = 8 * (size_t)o.latency_iterations;
    f.recv = malloc(window);
    f.hosts = calloc((size_t)f.size, sizeof *f.hosts);
    if (f.send == NULL || f.recv == NULL || f.hosts == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);
    memset(f.send, 1, (size_t)o.bytes);
    char host[SB_HOST];
    sb_host_name(host);
    MPI_Allgather(host, SB_HOST, MPI_CHAR, f.hosts, SB_HOST, MPI_CHAR, MPI_COMM_WORLD);
    if (rc == 0) {
        void (*run[NMODE])(const fabric *, const options *) = {pairs, aggregate, loaded,
                                                               patterns};
        run[o.mode](&f, &o);
    }
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (f.rank == 0 && rc == 0)
        printf("SENTINEL_DONE bench=%s\n", PROGRAM);
    free(f.send);
    free(f.recv);
    free(f.hosts);
    sb_finalize(PROGRAM);
    return rc;
}
