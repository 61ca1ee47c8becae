"""From the matching benchmark's records to fits and performance values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sentinel.analysis.fits import MatchFit, fit_matching, median_coverage, queue_model
from sentinel.analysis.variables import HIGHER, LOWER, NEUTRAL, CheckSpec, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput, Record

_ALG = {"alg": ("tag", "comm")}
_QUEUE = {"queue": ("umq", "prq"), **_ALG}

#: What MatchingCheck reports.
SPEC = CheckSpec(
    checks=("MatchingCheck",),
    figures="matching",
    variables=(
        PerfVar("match_time_{alg}", "ns", LOWER,
                "M: time of one unsuccessful match, fitted over the batch sizes",
                choices=_ALG, headline={}),
        PerfVar("match_time_{queue}_{alg}", "ns", LOWER,
                "M of one queue alone (unexpected messages, posted receives)", choices=_QUEUE),
        PerfVar("match_time_{alg}_{size}B", "ns", LOWER, "M at another message size",
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
        PerfVar("queue_ratio", "1", NEUTRAL, "M(comm) / M(tag): about 1 for a shared queue",
                signed=True),
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


def _name(what: str, key: CaseKey) -> tuple[str, dict[str, object]]:
    """The template and fields of ``what`` (``match_time``, ``match_r2``) of one sweep."""
    if key.pattern == "pingpong":
        return f"{what}_{{alg}}", {"alg": key.algorithm}
    return f"{what}_{{queue}}_{{alg}}", {"queue": key.pattern, "alg": key.algorithm}


def _put_fit(values: Values, template: str, fields: dict[str, object], fit: MatchFit) -> None:
    """M in ns with its interval; a fit whose R^2 is poor leaves M unresolved."""
    if not fit.resolved:
        values.unresolve(values.spec.var(template).name(**fields), fit.unresolved_why())
        return
    lo, hi = (1e3 * v for v in fit.interval_us)
    values.put(template, 1e3 * fit.m_us, (lo, hi), **fields)


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


#: What the queue models are inferred from, by pattern.
QUEUES = {"pingpong": "both queues (ping-pong)", "umq": "unexpected messages",
          "prq": "posted receives"}


@dataclass
class MatchingResult:
    """Everything a check reports from one matching run."""

    values: Values
    #: One line: the model of each queue measured (``umq: shared; prq: ...``).
    queue_model: str
    #: Per pattern (``pingpong``, ``umq``, ``prq``): the model and its evidence.
    queue_evidence: dict[str, str]


def analyse(out: BenchOutput, checkpoint: int, reference_bytes: int) -> MatchingResult:
    """Fits per sweep, checkpoint values and the inferred model of each queue."""
    groups = sweeps(out)
    if not groups:
        raise SentinelError("benchmark output has no SENTINEL_MATCH result line")
    values = Values(SPEC)
    fits: dict[tuple[str, str], MatchFit] = {}
    for key, recs in groups.items():
        fit = fit_sweep(recs)
        if key.nbytes == reference_bytes:
            template, fields = _name("match_time", key)
            _put_fit(values, template, fields, fit)
            template, fields = _name("match_r2", key)
            values.put(template, fit.r2, **fields)
            fits[(key.pattern, key.algorithm)] = fit
            if key.pattern == "pingpong":
                _checkpoint_values(values, key.algorithm, recs, checkpoint)
        elif key.pattern == "pingpong":
            _put_fit(values, "match_time_{alg}_{size}B",
                     {"alg": key.algorithm, "size": key.nbytes}, fit)
    _queue_ratio(values, fits.get(("pingpong", "tag")), fits.get(("pingpong", "comm")))
    evidence, models = {}, []
    for pattern in QUEUES:
        tag = fits.get((pattern, "tag"))
        if tag is None:
            continue
        model, why = queue_model(tag, fits.get((pattern, "comm")))
        evidence[pattern] = f"{model}: {why}{_sweep_note(out, pattern, reference_bytes)}"
        models.append(f"{pattern}: {model}")
    return MatchingResult(values, "; ".join(models) or "not measured", evidence)


def _queue_ratio(values: Values, tag: MatchFit | None, comm: MatchFit | None) -> None:
    """M(comm) / M(tag) where the tag M is resolved; else unresolved: a ratio of noise."""
    if tag is None or comm is None:
        return
    if not tag.resolved:
        values.unresolve("queue_ratio", f"{tag.describe('tag')}: no ratio to an unresolved M")
        return
    lo, hi = comm.interval_us
    values.put("queue_ratio", comm.m_us / tag.m_us, (lo / tag.m_us, hi / tag.m_us))


def _sweep_note(out: BenchOutput, pattern: str, nbytes: int) -> str:
    """How far the adaptive sweeps of ``pattern`` at ``nbytes`` went, and why they stopped."""
    def ours(r: Record) -> bool:
        return r.text("pattern") == pattern and r.integer("bytes") == nbytes

    cut = {r.text("algorithm"): f", the budget spent after {r.integer('measured')} of "
                                f"{r.integer('sizes')} grid sizes"
           for r in out.of("MATCH_GRID") if ours(r) and r.text("stop") == "budget"}
    notes = [f"{r.text('algorithm')} n <= {r.integer('n_max')} ({r.text('stop')}"
             f"{cut.get(r.text('algorithm'), '')})" for r in out.of("MATCH_SWEEP") if ours(r)]
    return f"; batches {', '.join(notes)}" if notes else ""


def _checkpoint_values(values: Values, algorithm: str, recs: list[Record],
                       checkpoint: int) -> None:
    at = [r for r in recs if r.integer("n") == checkpoint]
    if not at:
        raise SentinelError(f"no result for the check-point n={checkpoint}")
    rec = at[0]
    # the order-statistics interval of the median of the point's samples
    coverage = median_coverage(rec.integer("samples"))
    for point in ("iot", "rot"):
        interval = ((rec.number(f"{point}_lo_us"), rec.number(f"{point}_hi_us"))
                    if f"{point}_lo_us" in rec.fields else None)
        values.put("{point}_{alg}", rec.number(f"{point}_us"), interval, coverage, point=point,
                   alg=algorithm)
    values.put("diff_{alg}", rec.number("diff_us"), alg=algorithm)
