"""Prometheus names of the suite's quantities: base units, bounded reason labels.

Prometheus wants base units in the metric name (``_seconds``,
``_bytes_per_second``) and values converted to them; each declared unit of
the suite (:mod:`sentinel.analysis.variables`) maps to one. A label's values
must stay few at a site's scale: a failure's or a skip's reason is free
text, so it becomes one of a fixed set of reasons (:func:`reason_of`), the
text staying in the run report and the HTML report.
"""

from __future__ import annotations

import re

from sentinel.errors import SentinelError

#: Declared unit -> (suffix of the metric name, factor to that base unit).
BASE_UNITS: dict[str, tuple[str, float]] = {
    "ns": ("seconds", 1e-9),
    "us": ("seconds", 1e-6),
    "ms": ("seconds", 1e-3),
    "s": ("seconds", 1.0),
    "MB/s": ("bytes_per_second", 1e6),
    "GB/s": ("bytes_per_second", 1e9),
    "MLUP/s": ("lattice_updates_per_second", 1e6),
    "messages/s": ("messages_per_second", 1.0),
    "1": ("ratio", 1.0),
}


def base_unit(unit: str) -> tuple[str, float]:
    """The metric-name suffix and conversion factor of a declared unit."""
    try:
        return BASE_UNITS[unit]
    except KeyError:
        raise SentinelError(f"unit {unit!r} has no Prometheus base unit in "
                            f"sentinel.results.metrics.names.BASE_UNITS "
                            f"({', '.join(sorted(BASE_UNITS))})") from None


#: A failure's reason, first match wins: the suite's own messages, then ReFrame's.
FAIL_REASONS: tuple[tuple[str, str], ...] = (
    ("linkage", r"MPI linkage of"),
    ("transport", r"transport \S+ not verified|carries traffic within a node only"),
    ("placement", r"placement \S+ not honoured|not honoured: "),
    ("world_size", r"ran in a world of"),
    ("node_slowed", r"slowed as a whole|host probe"),
    ("timeout", r"time limit|timed out|TIMEOUT|timeout"),
    ("job_end", r"ended abnormally|was cancelled|Killed|crashed|could not start|"
                r"refused to run"),
    ("reference", r"failed to meet reference"),
    ("unresolved", r"unresolved"),
    ("missing_values", r"missing from the results|output .* is truncated|incomplete"),
    ("node_outlier", r"^node \S+: |node\(s\) named"),
    ("dependency", r"dependenc"),
)

#: A skip's reason.
SKIP_REASONS: tuple[tuple[str, str], ...] = (
    ("not_offered", r"offers no|is not in \S+\.transports|not offered|not among"),
    ("shared_memory", r"shared memory|cannot carry traffic between nodes|carries no traffic"),
    ("mapping", r"mapping \S+ needs|needs \d+ (nodes|sockets)|only, not"),
    ("deferred", r"night|deferred|rotation"),
    ("thread_level", r"thread level|MPI_THREAD"),
    ("dependency", r"depends on|dependenc"),
    ("gpu", r"GPU|gpu|device"),
)

#: An unresolved value's reason.
UNRESOLVED_REASONS: tuple[tuple[str, str], ...] = (
    ("interval_reaches_zero", r"interval|resolution|reaches"),
    ("not_positive", r"not positive"),
    ("implausible", r"plausible"),
)


def reason_of(text: str, kinds: tuple[tuple[str, str], ...]) -> str:
    """The first of ``kinds`` whose pattern ``text`` matches; ``other`` when none does."""
    for name, pattern in kinds:
        if re.search(pattern, text or ""):
            return name
    return "other"
