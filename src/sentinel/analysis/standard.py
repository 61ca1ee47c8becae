"""Performance values from the standard suites' outputs (IMB; OSU)."""

from __future__ import annotations

from dataclasses import replace

from sentinel.analysis.fits import hockney_fit, switch_points
from sentinel.analysis.variables import HIGHER, LOWER, CheckSpec, Level, PerfVar, Values
from sentinel.parsers.imb import ImbOutput
from sentinel.parsers.osu import OsuOutput

#: IMB-MPI1 benchmarks the suite runs, point-to-point first.
IMB_BENCHMARKS = ("PingPong", "PingPing", "Sendrecv", "Exchange",
                  "Allreduce", "Alltoall", "Bcast", "Barrier")

_IMB_TIMED = tuple(b.lower() for b in IMB_BENCHMARKS if b not in ("PingPong", "Barrier"))
#: IMB's collectives among them: a small and a large size of each is judged.
_IMB_COLLECTIVES = ("allreduce", "alltoall", "bcast")

#: What ImbCheck (and its variants on other builds of IMB) reports.
IMB_SPEC = CheckSpec(
    checks=("ImbCheck", "ImbSourceCheck", "ImbSpackCheck"),
    figures="curves",
    variables=(
        PerfVar("pingpong_latency_{size}B", "us", LOWER, "PingPong half round trip (t[usec])",
                headline={"size": "8"}, curve="latency"),
        PerfVar("{bench}_latency_{size}B", "us", LOWER,
                "time per operation (t[usec] point-to-point, t_avg collectives)",
                choices={"bench": _IMB_TIMED},
                headline={"bench": _IMB_COLLECTIVES, "size": ("8", "1048576")}),
        PerfVar("{bench}_bw_peak", "MB/s", HIGHER, "largest bandwidth IMB reports over sizes",
                choices={"bench": ("pingpong", "pingping", "sendrecv", "exchange")},
                headline={"bench": "pingpong"}),
        PerfVar("pingpong_bw_{size}B", "MB/s", HIGHER, "PingPong bandwidth curve", curve="bw"),
        PerfVar("pingpong_fit_lambda", "us", LOWER, "PingPong fit t = lambda + size/b"),
        PerfVar("pingpong_fit_bw", "MB/s", HIGHER, "PingPong fit: b from the slope"),
        PerfVar("barrier_latency", "us", LOWER, "time of one barrier (t_avg)", headline={}),
    ),
)


def imb_values(out: ImbOutput, benchmarks: list[str]) -> tuple[Values, list[int]]:
    """Performance values of every benchmark; also PingPong's protocol switch sizes."""
    values = Values(IMB_SPEC)
    switches: list[int] = []
    for bench in benchmarks:
        table = out.table(bench)
        name = bench.lower()
        times = table.column(table.time_column)
        if bench == "Barrier":
            values.put("barrier_latency", times[0])
            continue
        sizes = sorted(times)
        for size in {8, sizes[-1]} & set(sizes):
            if bench != "PingPong":  # its whole curve is below
                values.put("{bench}_latency_{size}B", times[size], bench=name, size=size)
        if "Mbytes/sec" in table.columns:
            values.put("{bench}_bw_peak", max(table.column("Mbytes/sec").values()), bench=name)
        if bench == "PingPong":
            switches = _pingpong_curve(values, times, table.column("Mbytes/sec"))
    return values, switches


def _pingpong_curve(values: Values, times: dict[int, float],
                    bandwidth: dict[int, float]) -> list[int]:
    for size, t in times.items():
        values.put("pingpong_latency_{size}B", t, size=size)
        if size:
            values.put("pingpong_bw_{size}B", bandwidth[size], size=size)
    fit = hockney_fit(times)
    values.put("pingpong_fit_lambda", fit.lambda_us)
    values.put("pingpong_fit_bw", fit.b_mbs)
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
OSU_SIZE_OPTION = frozenset({"osu_allreduce", "osu_bcast", "osu_alltoall", "osu_alltoallv",
                             "osu_scatter", "osu_gather", "osu_reduce"})
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


#: What OsuCheck (and its variants on other builds of OSU) reports; its
#: references have one more level, the benchmark.
OSU_SPEC = CheckSpec(
    checks=("OsuCheck", "OsuSourceCheck", "OsuSpackCheck"),
    figures="curves",
    variables=(
        PerfVar("latency_{size}B", "us", LOWER, "average latency (osu_latency: one way)",
                headline={"size": ("8", "1048576")}, curve="latency"),
        PerfVar("latency", "us", LOWER, "osu_barrier: average time of one barrier",
                headline={}),
        PerfVar("bw_peak", "MB/s", HIGHER, "largest bandwidth over sizes", headline={}),
        PerfVar("bw_{size}B", "MB/s", HIGHER, "osu_bw bandwidth curve", curve="bw"),
        PerfVar("fit_lambda", "us", LOWER, "osu_latency fit t = lambda + size/b",
                followed={}),
        PerfVar("fit_bw", "MB/s", HIGHER, "osu_latency fit: b from the slope", followed={}),
        PerfVar("msg_rate_peak", "messages/s", HIGHER, "osu_mbw_mr: largest message rate",
                headline={}),
    ),
    levels=(Level("benchmark", tuple(name for name, _ in OSU_BENCHMARKS)),),
)


#: OSU's point-to-point programs that take a buffer location per rank.
OSU_GPU_BENCHMARKS = tuple(b for b in OSU_BENCHMARKS
                           if b[0] in ("osu_latency", "osu_bw", "osu_bibw"))

#: Where OsuGpuCheck puts the buffers of ranks 0 and 1 (OSU's ``D D``, ``H D``, ``D H``).
OSU_BUFFERS = {"device": ("D", "D"), "host-device": ("H", "D"), "device-host": ("D", "H")}

#: What OsuGpuCheck reports: OsuCheck's variables, indexed by the buffers too.
OSU_GPU_SPEC = replace(OSU_SPEC, checks=("OsuGpuCheck",),
                       levels=(Level("benchmark", tuple(b for b, _ in OSU_GPU_BENCHMARKS)),
                               Level("buffers", tuple(OSU_BUFFERS))))


def osu_gpu_options(runtime: str, buffers: str) -> list[str]:
    """OSU's ``-d cuda D D``: the GPU runtime and where each rank's buffers live."""
    return ["-d", runtime, *OSU_BUFFERS[buffers]]


def osu_values(out: OsuOutput, program: str) -> tuple[Values, list[int]]:
    """Performance values of one OSU benchmark; also the latency switch sizes."""
    values = Values(OSU_SPEC)
    if program == "osu_barrier":
        values.put("latency", out.column("Avg Latency")[0])
        return values, []
    kind = dict(OSU_BENCHMARKS)[program]
    if kind == "latency":
        times = out.column("Avg Latency" if program != "osu_latency" else "Latency")
        sizes = sorted(times)
        for size in {8, sizes[-1]} & set(sizes):
            values.put("latency_{size}B", times[size], size=size)
        if program == "osu_latency":
            return values, _latency_curve(values, times)
        return values, []
    bw = out.column("MB/s" if program == "osu_mbw_mr" else "Bandwidth")
    values.put("bw_peak", max(bw.values()))
    if program == "osu_mbw_mr":
        values.put("msg_rate_peak", max(out.column("Messages/s").values()))
    if program == "osu_bw":
        for size, v in bw.items():
            values.put("bw_{size}B", v, size=size)
    return values, []


def _latency_curve(values: Values, times: dict[int, float]) -> list[int]:
    for size, t in times.items():
        values.put("latency_{size}B", t, size=size)
    fit = hockney_fit(times)
    values.put("fit_lambda", fit.lambda_us)
    values.put("fit_bw", fit.b_mbs)
    return switch_points(times, fit)
