"""From the pt2pt benchmark's records to curves, fits and LogP parameters.

Parameterised LogP (Kielmann et al., seed 001), with RTT(m) twice the
standard-mode half round trip:
``L = RTT(0)/2 - g(0)``, ``g(m) = RTT(m) - RTT(0) + g(0)``; classic LogP:
``L_classic = L + g(1) - o_s(1) - o_r(1)``, ``o = (o_s(1) + o_r(1)) / 2``,
``g = g(1)``.
"""

from __future__ import annotations

from sentinel.analysis.fits import hockney_fit, switch_points
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput

Values = dict[str, tuple[float, str]]

#: Reference-validation patterns for Pt2ptCheck: (metric-name regex, unit).
METRICS: tuple[tuple[str, str], ...] = (
    (r"latency(_(synchronous|buffered|ready|diffbuf))?_\d+B", "us"),
    (r"unilatency_\d+B|fit_lambda|logp_(L|o|g|g0|L_classic|os_\d+B|or_\d+B)", "us"),
    (r"latency_8B_spread", "1"),
    (r"bw_peak|bibw_peak|bw_\d+B|fit_bw", "MB/s"),
)


def curves(out: BenchOutput) -> dict[tuple[str, str], dict[int, float]]:
    """(metric, mode) -> size -> median (us, or MB/s for bw and bibw)."""
    table: dict[tuple[str, str], dict[int, float]] = {}
    for rec in out.of("PT2PT"):
        metric = rec.text("metric")
        key = "median_mbs" if metric in ("bw", "bibw") else "median_us"
        table.setdefault((metric, rec.text("mode")), {})[rec.integer("bytes")] = rec.number(key)
    return table


def _spread(out: BenchOutput, size: int) -> float:
    for rec in out.of("PT2PT"):
        if (rec.text("metric"), rec.text("mode"), rec.integer("bytes")) == \
                ("latency", "standard", size):
            return (rec.number("max_us") - rec.number("min_us")) / rec.number("median_us")
    raise SentinelError(f"no standard-mode latency at {size} B")


def analyse(out: BenchOutput) -> tuple[Values, list[int]]:
    """Performance values; also the latency curve's protocol switch sizes."""
    table = curves(out)
    values: Values = {}
    switches: list[int] = []
    lat = table.get(("latency", "standard"))
    if lat:
        values.update({f"latency_{s}B": (t, "us") for s, t in lat.items()})
        if 8 in lat:
            values["latency_8B_spread"] = (_spread(out, 8), "1")
        fit = hockney_fit(lat)
        values["fit_lambda"] = (fit.lambda_us, "us")
        values["fit_bw"] = (fit.b_mbs, "MB/s")
        switches = switch_points(lat, fit)
    for (metric, mode), curve in table.items():
        if metric == "latency" and mode != "standard" and 8 in curve:
            values[f"latency_{mode}_8B"] = (curve[8], "us")
        elif metric == "unilatency" and 8 in curve:
            values["unilatency_8B"] = (curve[8], "us")
        elif metric in ("bw", "bibw"):
            values[f"{metric}_peak"] = (max(curve.values()), "MB/s")
            if metric == "bw":
                values.update({f"bw_{s}B": (v, "MB/s") for s, v in curve.items()})
    if ("logp_g0", "standard") in table:
        values.update(logp(table))
    return values, switches


def logp(table: dict[tuple[str, str], dict[int, float]]) -> Values:
    """Parameterised and classic LogP from the latency, g(0) and overhead curves."""
    try:
        g0 = table[("logp_g0", "standard")][0]
        rtt = {s: 2 * t for s, t in table[("latency", "standard")].items()}
        os_, or_ = table[("logp_os", "standard")], table[("logp_or", "standard")]
        big_l = rtt[0] / 2 - g0
        g1 = rtt[1] - rtt[0] + g0
        values = {
            "logp_g0": (g0, "us"),
            "logp_L": (big_l, "us"),
            "logp_L_classic": (big_l + g1 - os_[1] - or_[1], "us"),
            "logp_o": ((os_[1] + or_[1]) / 2, "us"),
            "logp_g": (g1, "us"),
        }
    except KeyError as missing:
        raise SentinelError(f"LogP needs sizes 0 and 1 of latency, logp_os and logp_or "
                            f"(missing {missing})") from None
    if 8 in os_ and 8 in or_:
        values["logp_os_8B"] = (os_[8], "us")
        values["logp_or_8B"] = (or_[8], "us")
    return values
