"""Performance values from the standard suites' outputs (IMB; OSU)."""

from __future__ import annotations

from sentinel.fits import hockney_fit, switch_points
from sentinel.parsers.imb import ImbOutput

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
