"""Collectives over a process-count series (IMB-MPI1 ``-npmin``): one value per count.

Each operation's time per call (IMB's ``t_avg``, the mean over ranks of each
rank's mean over repetitions) is a variable per message size and process
count, ``<op>_latency_<size>B_P<procs>`` (``barrier_latency_P<procs>``). One
variable per count, rather than one variable with the count as a reference
index level: ReFrame's references, thresholds, perflogs and
``--performance-compare`` all work per variable, so each count gets its own
reference band and its own line in every history, with no machinery of ours.
"""

from __future__ import annotations

from sentinel.analysis.variables import LOWER, CheckSpec, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.parsers.imb import ImbOutput, ImbTable
from sentinel.parsers.osu import OsuOutput

#: The collectives the series measures (IMB-MPI1 benchmark names): those of
#: the Queen's interconnect study (Lyons 2005), in IMB's spelling.
OPERATIONS = ("Barrier", "Bcast", "Scatter", "Gather", "Alltoall", "Alltoallv",
              "Reduce", "Allreduce")

_SIZED = tuple(op.lower() for op in OPERATIONS if op != "Barrier")

_VARIABLES = (
    PerfVar("{op}_latency_{size}B_P{procs}", "us", LOWER,
            "time of one call at this message size and process count (IMB t_avg, OSU "
            "Avg Latency)", choices={"op": _SIZED}, headline={"size": ("8", "65536")},
            scaling="procs"),
    PerfVar("barrier_latency_P{procs}", "us", LOWER,
            "time of one barrier at this process count (IMB t_avg, OSU Avg Latency)",
            headline={}, scaling="procs"),
)

#: What CollectivesCheck (and its variants on other builds of IMB) reports.
SPEC = CheckSpec(
    checks=("CollectivesCheck", "CollectivesSourceCheck", "CollectivesSpackCheck"),
    variables=_VARIABLES,
    figures="scaling",
)

#: OSU's collective programs and the operation each measures.
OSU_PROGRAMS = {"osu_barrier": "barrier", "osu_bcast": "bcast", "osu_scatter": "scatter",
                "osu_gather": "gather", "osu_alltoall": "alltoall",
                "osu_alltoallv": "alltoallv", "osu_reduce": "reduce",
                "osu_allreduce": "allreduce"}

#: What OsuCollectivesCheck reports: the same variables, one program per test.
OSU_SPEC = CheckSpec(
    checks=("OsuCollectivesCheck", "OsuCollectivesSourceCheck", "OsuCollectivesSpackCheck"),
    variables=_VARIABLES,
    figures="scaling",
)


def expected(operations: list[str], sizes: list[int], counts: list[int]) -> list[str]:
    """Every variable a complete series reports."""
    out = []
    for op in operations:
        for procs in counts:
            if op == "Barrier":
                out.append(f"barrier_latency_P{procs}")
            else:
                out += [f"{op.lower()}_latency_{size}B_P{procs}" for size in sizes]
    return out


def osu_expected(program: str, sizes: list[int], counts: list[int]) -> list[str]:
    """Every variable a complete OSU series of ``program`` reports."""
    op = OSU_PROGRAMS[program]
    return expected(["Barrier" if op == "barrier" else op], sizes, counts)


def osu_values(outs: dict[int, OsuOutput], program: str, sizes: list[int]) -> Values:
    """One value per size and process count, from one OSU table per launch."""
    op = OSU_PROGRAMS[program]
    result = Values(OSU_SPEC)
    for procs, out in outs.items():
        times = out.column("Avg Latency")
        if op == "barrier":
            result.put("barrier_latency_P{procs}", times[0], procs=procs)
            continue
        for size in sizes:
            if size in times:
                result.put("{op}_latency_{size}B_P{procs}", times[size], op=op, size=size,
                           procs=procs)
    return result


def counts_of(out: ImbOutput, operation: str) -> list[int]:
    """The process counts IMB ran ``operation`` at, in order."""
    return sorted(t.processes for t in out.tables if t.benchmark == operation)


def require_counts(out: ImbOutput, operations: list[str], counts: list[int],
                   source: str) -> None:
    """Fail unless every operation ran at exactly the series' process counts."""
    for op in operations:
        got = counts_of(out, op)
        if got != sorted(counts):
            raise SentinelError(f"{source}: IMB ran {op} at {got or 'no'} process counts, "
                                f"the series is {sorted(counts)} (wrong -npmin, or ranks "
                                "missing from the launch?)")


def values(out: ImbOutput, operations: list[str], sizes: list[int],
           time_per_size: float) -> Values:
    """One value per operation, size and process count.

    A size IMB stopped timing (its ``-time`` budget per size spent) is
    unresolved, saying so: the run was too slow to measure it, not fast.
    """
    result = Values(SPEC)
    for table in out.tables:
        if table.benchmark in operations:
            _table_values(result, table, sizes, time_per_size)
    return result


def _table_values(result: Values, table: ImbTable, sizes: list[int],
                  time_per_size: float) -> None:
    times = table.column("t_avg[usec]")
    procs = table.processes
    if table.benchmark == "Barrier":
        if times:
            result.put("barrier_latency_P{procs}", times[0], procs=procs)
        else:
            result.unresolved[f"barrier_latency_P{procs}"] = _cut(table, time_per_size)
        return
    op = table.benchmark.lower()
    for size in sizes:
        name = f"{op}_latency_{size}B_P{procs}"
        if size in times:
            result.put("{op}_latency_{size}B_P{procs}", times[size], op=op, size=size,
                       procs=procs)
        elif table.cut_at is not None and size >= table.cut_at:
            result.unresolved[name] = _cut(table, time_per_size)


def _cut(table: ImbTable, time_per_size: float) -> str:
    return (f"IMB stopped timing {table.benchmark} at {table.processes} processes from "
            f"{table.cut_at} B on: its time budget (-time {time_per_size:g} s per size) "
            "was spent, so the time per call is above what that budget allows")
