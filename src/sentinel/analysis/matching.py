"""From the matching benchmark's records to fits and performance values."""

from __future__ import annotations

from dataclasses import dataclass

from sentinel.analysis.fits import MatchFit, fit_matching, queue_model
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput, Record


@dataclass(frozen=True)
class CaseKey:
    """One sweep over batch sizes: algorithm, pattern and message size."""

    algorithm: str
    pattern: str
    nbytes: int


def sweeps(out: BenchOutput) -> dict[CaseKey, list[Record]]:
    """Group SENTINEL_MATCH records by (algorithm, pattern, bytes), n ascending."""
    groups: dict[CaseKey, list[Record]] = {}
    for rec in out.of("MATCH"):
        key = CaseKey(rec.text("algorithm"), rec.text("pattern"), rec.integer("bytes"))
        groups.setdefault(key, []).append(rec)
    for recs in groups.values():
        recs.sort(key=lambda r: r.integer("n"))
    return groups


def fit_sweep(recs: list[Record]) -> MatchFit:
    """Fit M over one sweep's batch sizes."""
    legs = recs[0].integer("legs")
    return fit_matching([r.integer("n") for r in recs],
                        [r.number("diff_us") for r in recs], legs)


def metric_name(algorithm: str, pattern: str, what: str = "match_time") -> str:
    """Performance-variable name: 'match_time_tag', 'match_time_umq_comm', ..."""
    return f"{what}_{algorithm}" if pattern == "pingpong" else f"{what}_{pattern}_{algorithm}"


@dataclass
class MatchingResult:
    """Everything a check reports from one matching run."""

    values: dict[str, tuple[float, str]]
    queue_model: str


def analyse(out: BenchOutput, checkpoint: int, reference_bytes: int) -> MatchingResult:
    """Fits per sweep, checkpoint values and the inferred queue model."""
    groups = sweeps(out)
    if not groups:
        raise SentinelError("benchmark output has no SENTINEL_MATCH result line")
    values: dict[str, tuple[float, str]] = {}
    fits: dict[str, MatchFit] = {}
    for key, recs in groups.items():
        fit = fit_sweep(recs)
        if key.nbytes == reference_bytes:
            fits[metric_name(key.algorithm, key.pattern)] = fit
            values[metric_name(key.algorithm, key.pattern)] = (fit.m_us, "us")
            values[metric_name(key.algorithm, key.pattern, "match_r2")] = (fit.r2, "1")
            if key.pattern == "pingpong":
                _checkpoint_values(values, key.algorithm, recs, checkpoint)
        elif key.pattern == "pingpong":
            values[f"match_time_{key.algorithm}_{key.nbytes}B"] = (fit.m_us, "us")
    model = "not measured"
    if "match_time_tag" in fits and "match_time_comm" in fits:
        tag, comm = fits["match_time_tag"], fits["match_time_comm"]
        model = queue_model(tag, comm)
        if tag.m_us != 0:
            values["queue_ratio"] = (comm.m_us / tag.m_us, "1")
    return MatchingResult(values, model)


def _checkpoint_values(values: dict[str, tuple[float, str]], algorithm: str,
                       recs: list[Record], checkpoint: int) -> None:
    at = [r for r in recs if r.integer("n") == checkpoint]
    if not at:
        raise SentinelError(f"no result for the check-point n={checkpoint}")
    for field in ("iot", "rot", "diff"):
        values[f"{field}_{algorithm}"] = (at[0].number(f"{field}_us"), "us")


#: Names :func:`analyse` can produce, with their units (for reference validation).
METRICS: tuple[tuple[str, str], ...] = (
    (r"match_time(_(umq|prq))?_(tag|comm)", "us"),
    (r"match_time_(tag|comm)_\d+B", "us"),
    (r"match_r2(_(umq|prq))?_(tag|comm)", "1"),
    (r"(iot|rot|diff)_(tag|comm)", "us"),
    (r"queue_ratio", "1"),
)
