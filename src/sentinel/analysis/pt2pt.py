"""From the pt2pt benchmark's records to curves, fits and LogP parameters.

Parameterised LogP (Kielmann et al., as Qian 2004 measures it), with RTT(m) twice the
standard-mode half round trip:
``L = RTT(0)/2 - g(0)``, ``g(m) = RTT(m) - RTT(0) + g(0)``; classic LogP:
``L_classic = L + g(1) - o_s(1) - o_r(1)``, ``o = (o_s(1) + o_r(1)) / 2``,
``g = g(1)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sentinel.analysis.fits import hockney_fit, switch_points
from sentinel.analysis.variables import HIGHER, LOWER, CheckSpec, Level, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput

#: No MPI message between two processes takes under 10 ns (a cache line moving
#: between cores takes longer) ...
LATENCY_RANGE = (0.01, None)
#: ... and none moves more than 10 TB/s (beyond any memory system or link).
BANDWIDTH_RANGE = (None, 1.0e7)

#: What Pt2ptCheck reports.
SPEC = CheckSpec(
    checks=("Pt2ptCheck",),
    figures="curves",
    variables=(
        PerfVar("latency_{size}B", "us", LOWER,
                "standard-mode half round trip, median of the samples",
                headline={"size": "8"}, curve="latency", plausible=LATENCY_RANGE),
        PerfVar("latency_{mode}_8B", "us", LOWER, "8 B half round trip in another send mode",
                choices={"mode": ("synchronous", "buffered", "ready", "diffbuf")}),
        PerfVar("latency_8B_spread", "1", LOWER, "(max - min) / median of the 8 B samples"),
        PerfVar("unilatency_8B", "us", LOWER, "8 B one-way time of a batch acknowledged once"),
        PerfVar("bw_{size}B", "MB/s", HIGHER, "unidirectional bandwidth, a window in flight",
                curve="bw", plausible=BANDWIDTH_RANGE),
        PerfVar("bw_peak", "MB/s", HIGHER, "largest unidirectional bandwidth over sizes",
                headline={}, plausible=BANDWIDTH_RANGE),
        PerfVar("bibw_peak", "MB/s", HIGHER, "largest bidirectional bandwidth over sizes",
                followed={}, plausible=BANDWIDTH_RANGE),
        PerfVar("fit_lambda", "us", LOWER, "fit t = lambda + size/b: mean latency of 0-16 B",
                followed={}),
        PerfVar("fit_bw", "MB/s", HIGHER, "fit t = lambda + size/b: b from the slope",
                followed={}),
        PerfVar("logp_{param}", "us", LOWER, "parameterised and classic LogP parameters",
                choices={"param": ("L", "g0", "L_classic", "o", "g")}),
        PerfVar("logp_{side}_8B", "us", LOWER, "LogP send / receive overhead at 8 B",
                choices={"side": ("os", "or")}),
    ),
)

#: Where the message buffers of the GPU variant live: host memory, or the
#: GPU's (``pt2pt --buffers device``, a CUDA-aware or ROCm-aware MPI).
BUFFERS = ("host", "device")

#: What Pt2ptGpuCheck reports: Pt2ptCheck's variables, indexed by the buffers too.
GPU_SPEC = replace(SPEC, checks=("Pt2ptGpuCheck",), levels=(Level("buffers", BUFFERS),))


def curves(out: BenchOutput) -> dict[tuple[str, str], dict[int, float]]:
    """(metric, mode) -> size -> median (us, or MB/s for bw and bibw)."""
    table: dict[tuple[str, str], dict[int, float]] = {}
    for rec in out.of("PT2PT"):
        metric = rec.text("metric")
        key = "median_mbs" if metric in ("bw", "bibw") else "median_us"
        table.setdefault((metric, rec.text("mode")), {})[rec.integer("bytes")] = rec.number(key)
    return table


def ranges(out: BenchOutput) -> dict[tuple[str, str], dict[int, tuple[float, float]]]:
    """(metric, mode) -> size -> (smallest, largest) of the samples, in the curve's unit.

    The range of n samples covers their median with probability 1 - 2^(1-n)
    (99.8 % for the default 10 repetitions, 93.75 % for the quick mode's 5;
    :func:`range_coverage`): the interval of each median.
    """
    table: dict[tuple[str, str], dict[int, tuple[float, float]]] = {}
    for rec in out.of("PT2PT"):
        metric = rec.text("metric")
        unit = "mbs" if metric in ("bw", "bibw") else "us"
        table.setdefault((metric, rec.text("mode")), {})[rec.integer("bytes")] = (
            rec.number(f"min_{unit}"), rec.number(f"max_{unit}"))
    return table


def range_coverage(out: BenchOutput) -> float:
    """How often the range of the run's ``repetitions`` samples covers their median.

    (Of any benchmark whose ``SENTINEL_CONFIG`` gives its ``repetitions``:
    pt2pt's, rma's.)
    """
    configs = out.of("CONFIG")
    n = configs[0].integer("repetitions") if configs else 0
    if n < 2:
        raise SentinelError(f"SENTINEL_CONFIG of {out.bench} gives no repetitions >= 2: the "
                            "intervals of the medians have no coverage")
    return 1 - 2.0 ** (1 - n)


def _spread(out: BenchOutput, size: int) -> float:
    for rec in out.of("PT2PT"):
        if (rec.text("metric"), rec.text("mode"), rec.integer("bytes")) == \
                ("latency", "standard", size):
            return (rec.number("max_us") - rec.number("min_us")) / rec.number("median_us")
    raise SentinelError(f"no standard-mode latency at {size} B")


def analyse(out: BenchOutput) -> tuple[Values, list[int]]:
    """Performance values; also the latency curve's protocol switch sizes."""
    table, spans = curves(out), ranges(out)
    # the range of n samples covers their median with probability 1 - 2^(1-n)
    coverage = range_coverage(out)
    values = Values(SPEC)
    switches: list[int] = []
    lat = table.get(("latency", "standard"))
    if lat:
        lat_spans = spans[("latency", "standard")]
        for size, t in lat.items():
            values.put("latency_{size}B", t, lat_spans[size], coverage, size=size)
        if 8 in lat:
            values.put("latency_8B_spread", _spread(out, 8))
        fit = hockney_fit(lat)
        values.put("fit_lambda", fit.lambda_us, fit.lambda_interval_us)
        if fit.b_interval_mbs is None:
            values.unresolve("fit_bw", f"the latency curve up to {max(lat)} B does not bound "
                                       "b from above: its slope's interval reaches 0")
        else:
            values.put("fit_bw", fit.b_mbs, fit.b_interval_mbs)
        switches = switch_points(lat, fit)
    for (metric, mode), curve in table.items():
        if metric == "latency" and mode != "standard" and 8 in curve:
            values.put("latency_{mode}_8B", curve[8], mode=mode)
        elif metric == "unilatency" and 8 in curve:
            values.put("unilatency_8B", curve[8])
        elif metric in ("bw", "bibw"):
            peak = max(curve, key=curve.__getitem__)
            values.put(f"{metric}_peak", curve[peak], spans[(metric, mode)][peak], coverage)
            if metric == "bw":
                for size, v in curve.items():
                    values.put("bw_{size}B", v, spans[(metric, mode)][size], coverage,
                               size=size)
    if ("logp_g0", "standard") in table:
        values.merge(logp(table))
    return values, switches


def sizes(max_size: int) -> list[int]:
    """The message sizes the benchmark measures: 0 and powers of two up to ``max_size``."""
    return [0, *(1 << k for k in range(max_size.bit_length()) if 1 << k <= max_size)]


def expected(max_size: int, modes: Sequence[str]) -> list[str]:
    """Every variable a complete run with these parameters reports."""
    all_sizes = sizes(max_size)
    names: list[str] = []
    if "standard" in modes:
        names += [SPEC.var("latency_{size}B").name(size=s) for s in all_sizes]
        names += ["fit_lambda", "fit_bw"]
        if max_size >= 1:
            names += [f"logp_{p}" for p in ("L", "g0", "L_classic", "o", "g")]
        if max_size >= 8:
            names.append("latency_8B_spread")
    if max_size >= 8:
        names += [f"latency_{m}_8B" for m in modes if m != "standard"]
        names += ["unilatency_8B", "logp_os_8B", "logp_or_8B"]
    if max_size >= 1:
        names += [SPEC.var("bw_{size}B").name(size=s) for s in all_sizes if s]
        names += ["bw_peak", "bibw_peak"]
    return names


def logp(table: dict[tuple[str, str], dict[int, float]]) -> Values:
    """Parameterised and classic LogP from the latency, g(0) and overhead curves."""
    try:
        g0 = table[("logp_g0", "standard")][0]
        rtt = {s: 2 * t for s, t in table[("latency", "standard")].items()}
        os_, or_ = table[("logp_os", "standard")], table[("logp_or", "standard")]
        big_l = rtt[0] / 2 - g0
        g1 = rtt[1] - rtt[0] + g0
        params = {"g0": g0, "L": big_l, "L_classic": big_l + g1 - os_[1] - or_[1],
                  "o": (os_[1] + or_[1]) / 2, "g": g1}
    except KeyError as missing:
        raise SentinelError(f"LogP needs sizes 0 and 1 of latency, logp_os and logp_or "
                            f"(missing {missing})") from None
    values = Values(SPEC)
    for param, value in params.items():
        values.put("logp_{param}", value, param=param)
    if 8 in os_ and 8 in or_:
        values.put("logp_{side}_8B", os_[8], side="os")
        values.put("logp_{side}_8B", or_[8], side="or")
    return values
