"""The mixed-mode micro-benchmarks' results as performance variables."""

from __future__ import annotations

from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput

Values = dict[str, tuple[float, str]]

#: The benchmark's modes and benchmarks.
MODES = ("serial", "funnelled", "multiple")
BENCHMARKS = ("barrier", "halo", "pingpong", "pingping")

#: Reference-validation patterns for HybridCheck: (metric-name regex, unit).
METRICS: tuple[tuple[str, str], ...] = (
    (r"barrier|(halo|pingpong|pingping)_\d+B", "s"),
)


def values(out: BenchOutput, stdout: str, benchmarks: list[str]) -> Values:
    """Seconds per iteration: ``barrier`` and ``<benchmark>_<message bytes>B``.

    Every requested benchmark must have reported, and no data may be wrong.
    """
    found: Values = {}
    for rec in out.of("HYBRID"):
        if rec.integer("wrong"):
            raise SentinelError(f"{stdout}:{rec.line}: {rec.text('bench')} at "
                                f"{rec.integer('bytes')} B received {rec.integer('wrong')} "
                                "wrong elements")
        bench = rec.text("bench")
        name = bench if bench == "barrier" else f"{bench}_{rec.integer('bytes')}B"
        found[name] = (rec.number("time_s"), "s")
    missing = [b for b in benchmarks
               if not any(k == b or k.startswith(f"{b}_") for k in found)]
    if missing:
        raise SentinelError(f"{stdout}: no results for {', '.join(missing)}")
    return found
