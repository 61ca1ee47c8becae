"""From the congestion benchmark's records to the victims' figures and the congestion impact.

For each congestor pattern the benchmark measures the victims (8-byte round
trips pooled over their pairs, and a stream on each pair) quiet and loaded,
alternately, ``repetitions`` times: each ``SENTINEL_CONGESTION`` line is one
pattern and state, the medians of the repetitions' 50th and 99th latency
percentiles and bandwidth with the order-statistics intervals of the
medians; each ``SENTINEL_CONGESTION_IMPACT`` line the medians of the
repetitions' own ratios (loaded over quiet for the latencies, quiet over
loaded for the bandwidth: larger is worse for all, 1 is no impact), paired
so that a drift of the fabric over the run cancels. The congestion impact
is what a fabric without congestion control loses (GPCNeT's congestion
impact factor, Chunduri et al., 2019): the verdict.

The victims and the congestors must be on nodes of their own (one rank a
node), each victim pair across two nodes, and the congestors must have
delivered bytes while the victims measured: otherwise the run measured no
congestion and says so, naming the ranks, nodes or pattern.
"""

from __future__ import annotations

from collections.abc import Sequence

from sentinel.analysis.fits import median_coverage
from sentinel.analysis.variables import HIGHER, LOWER, CheckSpec, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput, Record

#: The congestor patterns of the benchmark (``--patterns``).
PATTERNS = ("alltoall", "incast", "bcast")
#: The victims' latency percentiles.
PERCENTILES = ("p50", "p99")
#: The victims' states.
STATES = ("quiet", "loaded")
#: The figures whose impact is reported: the latency percentiles and the bandwidth.
FIGURES = ("latency_p50", "latency_p99", "bw")

#: What CongestionCheck reports. Judged: the congestion impact of every
#: pattern on every figure. Followed: the quiet victim's own figures.
SPEC = CheckSpec(
    checks=("CongestionCheck",),
    variables=(
        PerfVar("{pattern}_latency_{percentile}_{state}", "us", LOWER,
                "the victims' one-way 8-byte latency at this percentile of their round "
                "trips, pooled over the victim pairs, with the congestors idle (quiet) or "
                "running the pattern (loaded); median of the repetitions",
                choices={"pattern": PATTERNS, "percentile": PERCENTILES, "state": STATES},
                followed={"state": "quiet"}),
        PerfVar("{pattern}_bw_{state}", "MB/s", HIGHER,
                "the victim pairs' mean stream bandwidth, congestors idle or running the "
                "pattern; median of the repetitions",
                choices={"pattern": PATTERNS, "state": STATES}, followed={"state": "quiet"}),
        PerfVar("{pattern}_impact_{figure}", "1", LOWER,
                "congestion impact: the victims' figure loaded over quiet (latency) or "
                "quiet over loaded (bandwidth), median of the repetitions' ratios; 1 is "
                "none", choices={"pattern": PATTERNS, "figure": FIGURES}, headline={}),
        PerfVar("{pattern}_congestor_bw", "MB/s", HIGHER,
                "bytes the congestors delivered per second while they ran the pattern, all "
                "of them together; median of the repetitions", choices={"pattern": PATTERNS}),
    ),
)


def expected(patterns: Sequence[str]) -> list[str]:
    """Every variable a complete run of these patterns reports."""
    return [name for p in patterns for name in (
        *(f"{p}_latency_{q}_{s}" for q in PERCENTILES for s in STATES),
        *(f"{p}_bw_{s}" for s in STATES),
        *(f"{p}_impact_{f}" for f in FIGURES), f"{p}_congestor_bw")]


def placement_problems(out: BenchOutput) -> list[str]:
    """Where the victims and the congestors do not stand as the measurement needs.

    Each victim pair across two nodes, and no node holding both a victim and
    a congestor (they would share its CPUs and its link, not the fabric).
    """
    config = out.of("CONFIG")[0]
    victims = config.integer("victims")
    hosts = {r.integer("rank"): r.text("host") for r in out.of("AFFINITY")}
    half = victims // 2
    problems = [f"victim ranks {i} and {i + half} are both on {hosts[i]}"
                for i in range(half) if hosts.get(i) is not None
                and hosts.get(i) == hosts.get(i + half)]
    victim_hosts = {hosts[r] for r in hosts if r < victims}
    shared = sorted({hosts[r] for r in hosts if r >= victims} & victim_hosts)
    if shared:
        problems.append(f"node(s) {', '.join(shared)} hold both victims and congestors")
    return problems


def _congested(rec: Record, stdout: str) -> None:
    """The loaded line's congestors ran and delivered bytes, or the run measured nothing."""
    pattern = rec.text("pattern")
    if rec.number("congestor_mbs") <= 0 or rec.integer("bursts") < 1:
        raise SentinelError(
            f"{stdout}: the {pattern} congestors delivered {rec.number('congestor_mbs'):g} "
            f"MB/s in {rec.integer('bursts')} burst(s) while the victims measured: no "
            f"congestion was measured")


def values(out: BenchOutput, stdout: str, patterns: Sequence[str]) -> Values:
    """Every pattern's quiet and loaded figures, its congestor bandwidth and its impact."""
    found = Values(SPEC)
    problems = placement_problems(out)
    if problems:
        raise SentinelError(f"{stdout}: congestion not measured between nodes of their own: "
                            + "; ".join(problems))
    coverage = median_coverage(out.of("CONFIG")[0].integer("repetitions"))
    states = {(r.text("pattern"), r.text("state")): r for r in out.of("CONGESTION")}
    impacts = {r.text("pattern"): r for r in out.of("CONGESTION_IMPACT")}
    missing = [p for p in patterns if p not in impacts
               or any((p, s) not in states for s in STATES)]
    if missing:
        raise SentinelError(f"{stdout}: no result for congestor pattern(s) "
                            f"{', '.join(missing)}")
    for pattern in patterns:
        for state in STATES:
            rec = states[(pattern, state)]
            for q in PERCENTILES:
                found.put("{pattern}_latency_{percentile}_{state}", *rec.spread(q, "us"),
                          coverage, pattern=pattern, percentile=q, state=state)
            found.put("{pattern}_bw_{state}", *rec.spread("bw", "mbs"), coverage,
                      pattern=pattern, state=state)
        loaded = states[(pattern, "loaded")]
        _congested(loaded, stdout)
        found.put("{pattern}_congestor_bw", *loaded.spread("congestor", "mbs"), coverage,
                  pattern=pattern)
        for figure, key in zip(FIGURES, ("p50", "p99", "bw")):
            found.put("{pattern}_impact_{figure}", *impacts[pattern].spread(key), coverage,
                      pattern=pattern, figure=figure)
    return found
