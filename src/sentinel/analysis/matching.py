"""From the matching benchmark's records to fits and performance values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sentinel.analysis.fits import MatchFit, fit_matching, queue_model
from sentinel.analysis.variables import HIGHER, LOWER, NEUTRAL, CheckSpec, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput, Record

_ALG = {"alg": ("tag", "comm")}
_QUEUE = {"queue": ("umq", "prq"), **_ALG}

#: What MatchingCheck reports.
SPEC = CheckSpec(
    checks=("MatchingCheck",),
    variables=(
        PerfVar("match_time_{alg}", "us", LOWER,
                "M: time of one unsuccessful match, fitted over the batch sizes",
                choices=_ALG, headline={}),
        PerfVar("match_time_{queue}_{alg}", "us", LOWER,
                "M of one queue alone (unexpected messages, posted receives)", choices=_QUEUE),
        PerfVar("match_time_{alg}_{size}B", "us", LOWER, "M at another message size",
                choices=_ALG),
        PerfVar("match_r2_{alg}", "1", HIGHER, "R^2 of the fit of M", choices=_ALG),
        PerfVar("match_r2_{queue}_{alg}", "1", HIGHER, "R^2 of one queue's fit",
                choices=_QUEUE),
        PerfVar("{point}_{alg}", "us", LOWER,
                "in-order and reverse-order time at the check-point n",
                choices={"point": ("iot", "rot"), **_ALG}),
        PerfVar("diff_{alg}", "us", LOWER,
                "reverse-order minus in-order time at the check-point n", choices=_ALG,
                signed=True),
        PerfVar("queue_ratio", "1", NEUTRAL, "M(comm) / M(tag): about 1 for a shared queue"),
    ),
)


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


def _put(values: Values, what: str, key: CaseKey, value: float) -> None:
    """Record ``what`` (``match_time``, ``match_r2``) of one sweep's pattern."""
    if key.pattern == "pingpong":
        values.put(f"{what}_{{alg}}", value, alg=key.algorithm)
    else:
        values.put(f"{what}_{{queue}}_{{alg}}", value, queue=key.pattern, alg=key.algorithm)


def expected(lengths: Sequence[int], algorithms: Sequence[str],
             patterns: Sequence[str]) -> list[str]:
    """Every variable a complete run with these parameters reports.

    ``queue_ratio`` is left out: it exists only where both algorithms' M are.
    """
    names: list[str] = []
    for alg in algorithms:
        for pattern in patterns:
            if pattern == "pingpong":
                names += [f"match_time_{alg}", f"match_r2_{alg}"]
                names += [f"{point}_{alg}" for point in ("iot", "rot", "diff")]
                names += [f"match_time_{alg}_{n * 8}B" for n in lengths[1:]]
            else:
                names += [f"match_time_{pattern}_{alg}", f"match_r2_{pattern}_{alg}"]
    return names


@dataclass
class MatchingResult:
    """Everything a check reports from one matching run."""

    values: Values
    queue_model: str


def analyse(out: BenchOutput, checkpoint: int, reference_bytes: int) -> MatchingResult:
    """Fits per sweep, checkpoint values and the inferred queue model."""
    groups = sweeps(out)
    if not groups:
        raise SentinelError("benchmark output has no SENTINEL_MATCH result line")
    values = Values(SPEC)
    seed_fits: dict[str, MatchFit] = {}
    for key, recs in groups.items():
        fit = fit_sweep(recs)
        if key.nbytes == reference_bytes:
            _put(values, "match_time", key, fit.m_us)
            _put(values, "match_r2", key, fit.r2)
            if key.pattern == "pingpong":
                seed_fits[key.algorithm] = fit
                _checkpoint_values(values, key.algorithm, recs, checkpoint)
        elif key.pattern == "pingpong":
            values.put("match_time_{alg}_{size}B", fit.m_us, alg=key.algorithm,
                       size=key.nbytes)
    model = "not measured"
    if "tag" in seed_fits and "comm" in seed_fits:
        tag, comm = seed_fits["tag"], seed_fits["comm"]
        model = queue_model(tag, comm)
        if tag.m_us != 0:
            values.put("queue_ratio", comm.m_us / tag.m_us)
    return MatchingResult(values, model)


def _checkpoint_values(values: Values, algorithm: str, recs: list[Record],
                       checkpoint: int) -> None:
    at = [r for r in recs if r.integer("n") == checkpoint]
    if not at:
        raise SentinelError(f"no result for the check-point n={checkpoint}")
    for point in ("iot", "rot"):
        values.put("{point}_{alg}", at[0].number(f"{point}_us"), point=point, alg=algorithm)
    values.put("diff_{alg}", at[0].number("diff_us"), alg=algorithm)
