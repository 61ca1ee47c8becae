"""Performance values from the standard suites' outputs (IMB; OSU)."""

from __future__ import annotations

from sentinel.analysis.fits import hockney_fit, switch_points
from sentinel.parsers.imb import ImbOutput
from sentinel.parsers.osu import OsuOutput

#: IMB-MPI1 benchmarks the suite runs, point-to-point first.
IMB_BENCHMARKS = ("PingPong", "PingPing", "Sendrecv", "Exchange",
                  "Allreduce", "Alltoall", "Bcast", "Barrier")

#: Reference-validation patterns for ImbCheck: (metric-name regex, unit).
IMB_METRICS: tuple[tuple[str, str], ...] = (
    (r"(pingpong|pingping|sendrecv|exchange|allreduce|alltoall|bcast)_latency_\d+B", "us"),
    (r"(pingpong|pingping|sendrecv|exchange)_bw_peak", "MB/s"),
    (r"pingpong_bw_\d+B", "MB/s"),
    (r"pingpong_fit_lambda", "us"),
    (r"pingpong_fit_bw", "MB/s"),
    (r"barrier_latency", "us"),
)

Values = dict[str, tuple[float, str]]


def imb_values(out: ImbOutput, benchmarks: list[str]) -> tuple[Values, list[int]]:
    """Performance values of every benchmark; also PingPong's protocol switch sizes."""
    values: Values = {}
    switches: list[int] = []
    for bench in benchmarks:
        table = out.table(bench)
        name = bench.lower()
        times = table.column(table.time_column)
        if bench == "Barrier":
            values["barrier_latency"] = (times[0], "us")
            continue
        sizes = sorted(times)
        for size in {8, sizes[-1]} & set(sizes):
            values[f"{name}_latency_{size}B"] = (times[size], "us")
        if "Mbytes/sec" in table.columns:
            values[f"{name}_bw_peak"] = (max(table.column("Mbytes/sec").values()), "MB/s")
        if bench == "PingPong":
            switches = _pingpong_curve(values, times, table.column("Mbytes/sec"))
    return values, switches


def _pingpong_curve(values: Values, times: dict[int, float],
                    bandwidth: dict[int, float]) -> list[int]:
    for size, t in times.items():
        values[f"pingpong_latency_{size}B"] = (t, "us")
        if size:
            values[f"pingpong_bw_{size}B"] = (bandwidth[size], "MB/s")
    fit = hockney_fit(times)
    values["pingpong_fit_lambda"] = (fit.lambda_us, "us")
    values["pingpong_fit_bw"] = (fit.b_mbs, "MB/s")
    return switch_points(times, fit)


#: OSU benchmarks the suite runs: (program, what it measures).
OSU_BENCHMARKS: tuple[tuple[str, str], ...] = (
    ("osu_latency", "latency"),
    ("osu_bw", "bandwidth"),
    ("osu_bibw", "bandwidth"),
    ("osu_mbw_mr", "bandwidth"),
    ("osu_allreduce", "latency"),
    ("osu_bcast", "latency"),
    ("osu_alltoall", "latency"),
    ("osu_barrier", "latency"),
)

#: OSU's own maximum size of the point-to-point benchmarks (every version).
OSU_PT2PT_MAX = 4194304
#: Programs whose size range can be set with -m in OSU 5.x as well as 7.x
#: (5.x's point-to-point programs have a fixed range and no -m).
OSU_SIZE_OPTION = frozenset({"osu_allreduce", "osu_bcast", "osu_alltoall"})
#: Programs without -i/-x in OSU 5.x.
OSU_NO_ITERATION_OPTIONS = frozenset({"osu_mbw_mr", "osu_barrier"})


def osu_options(program: str, max_size: int, max_size_collective: int, iterations: int,
                warmup: int) -> list[str]:
    """Command-line options that every OSU version from 5.3 on accepts."""
    opts: list[str] = []
    if program in OSU_SIZE_OPTION:
        opts += ["-m", str(max_size_collective)]
    elif program != "osu_barrier" and max_size != OSU_PT2PT_MAX:
        opts += ["-m", str(max_size)]  # OSU >= 5.4 only
    if program not in OSU_NO_ITERATION_OPTIONS:
        opts += ["-i", str(iterations)] if iterations else []
        opts += ["-x", str(warmup)] if warmup else []
    return opts


#: Reference-validation patterns for OsuCheck: (metric-name regex, unit).
OSU_METRICS: tuple[tuple[str, str], ...] = (
    (r"latency(_\d+B)?", "us"),
    (r"bw_peak|bw_\d+B|fit_bw", "MB/s"),
    (r"fit_lambda", "us"),
    (r"msg_rate_peak", "messages/s"),
)


def osu_values(out: OsuOutput, program: str) -> tuple[Values, list[int]]:
    """Performance values of one OSU benchmark; also the latency switch sizes."""
    values: Values = {}
    if program == "osu_barrier":
        values["latency"] = (out.column("Avg Latency")[0], "us")
        return values, []
    kind = dict(OSU_BENCHMARKS)[program]
    if kind == "latency":
        times = out.column("Avg Latency" if program != "osu_latency" else "Latency")
        sizes = sorted(times)
        for size in {8, sizes[-1]} & set(sizes):
            values[f"latency_{size}B"] = (times[size], "us")
        if program == "osu_latency":
            return values, _latency_curve(values, times)
        return values, []
    bw = out.column("MB/s" if program == "osu_mbw_mr" else "Bandwidth")
    values["bw_peak"] = (max(bw.values()), "MB/s")
    if program == "osu_mbw_mr":
        values["msg_rate_peak"] = (max(out.column("Messages/s").values()), "messages/s")
    if program == "osu_bw":
        values.update({f"bw_{s}B": (v, "MB/s") for s, v in bw.items()})
    return values, []


def _latency_curve(values: Values, times: dict[int, float]) -> list[int]:
    values.update({f"latency_{s}B": (t, "us") for s, t in times.items()})
    fit = hockney_fit(times)
    values["fit_lambda"] = (fit.lambda_us, "us")
    values["fit_bw"] = (fit.b_mbs, "MB/s")
    return switch_points(times, fit)
