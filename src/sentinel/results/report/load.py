"""A run report's test cases as the report reads them: :class:`Case` and its variables.

:func:`cases_of` turns a run report (a file, or a session stored in the
results database) into the last attempt of each of its test cases; what
is of the wrong shape is a ValueError naming the field
(:mod:`~sentinel.results.report.shape`). :class:`Inputs` gathers the cases
of the run reports read (:mod:`~sentinel.results.report.files`) and of the
stored sessions (:mod:`~sentinel.results.report.history`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace

from sentinel.analysis.baseline import entry_number
from sentinel.analysis.host import SLOWED
from sentinel.analysis.variables import HIGHER, HOST_VARIABLES, NEUTRAL, PerfVar, declaration
from sentinel.errors import SentinelError
from sentinel.results import provenance
from sentinel.results.report.shape import checked_session, expect, is_number
from sentinel.results.requirements import Requirement, name_params
from sentinel.results.verdicts import attempts, earlier
from sentinel.results.vet.actions import Action

#: A perfvalues entry: value, reference, lower, upper, unit, result.
_ENTRY_LEN = 6

#: Units of time in seconds, to compare values stored in different ones.
_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class Variable:
    """One performance variable of one test case, as ReFrame assessed it."""

    name: str
    value: float | None
    reference: float
    lower: float | None
    upper: float | None
    unit: str
    result: str  # "pass" or "fail"
    #: Its declaration by the check (unit, direction, meaning); None when the
    #: check does not declare it (a run report of another version of the suite).
    decl: PerfVar | None = None
    #: Its interval (low, high) where the analysis gave one (``intervals``).
    interval: tuple[float, float] | None = None
    #: That interval's coverage where it is not the suite's 95 %
    #: (``interval_coverage``: the range of 3 repetitions covers 75 %).
    coverage: float | None = None
    #: Whether its band could fail the test case (``judged_variables``); None
    #: in a session of a suite that judged every referenced variable.
    judged: bool | None = None
    #: Where its band came from: ``file`` or ``learnt`` ('' without one).
    origin: str = ""
    #: A judged variable without a band: why (burn-in, no band); '' otherwise.
    provisional: str = ""
    #: The band the test case recorded for a variable it did not judge:
    #: ``(reference, lower, upper)``; shown beside the value, never failed.
    recorded_band: tuple[float, float | None, float | None] | None = None

    @property
    def declared_value(self) -> float | None:
        """The value in its declaration's unit, comparable across the suite's versions.

        A session stored by a version that reported the variable in another
        unit of time (matching times were in us before they were in ns) is
        converted; a value in a unit that cannot be converted is None.
        """
        if self.value is None or self.decl is None or self.unit == self.decl.unit:
            return self.value
        scale = _TIME_UNITS.get(self.unit), _TIME_UNITS.get(self.decl.unit)
        if None in scale:
            return None
        return self.value * scale[0] / scale[1]

    @property
    def headline(self) -> bool:
        """Whether the check declares it a headline variable (judged by default)."""
        return self.decl is not None and self.decl.is_headline(self.name)

    @property
    def followed(self) -> bool:
        """Whether the check follows it night after night (trends, change points)."""
        return self.decl is not None and self.decl.is_followed(self.name)

    @property
    def referenced(self) -> bool:
        """Whether a reference band applies (ReFrame's default has no bounds)."""
        return self.lower is not None or self.upper is not None

    @property
    def outside_recorded(self) -> str:
        """For a variable not judged: ``worse``/``better`` than its recorded band, else ''."""
        if self.recorded_band is None or self.value is None or self.decl is None:
            return ""
        ref, lower, upper = self.recorded_band
        below = lower is not None and self.value < ref * (1 + lower)
        above = upper is not None and self.value > ref * (1 + upper)
        if not (below or above) or self.decl.better == NEUTRAL:
            return ""
        return "worse" if below == (self.decl.better == HIGHER) else "better"

    @property
    def band(self) -> tuple[float | None, float | None]:
        """Absolute bounds of the reference band (None where unbounded)."""
        lo = self.reference * (1 + self.lower) if self.lower is not None else None
        hi = self.reference * (1 + self.upper) if self.upper is not None else None
        return lo, hi

    @property
    def change(self) -> str:
        """The value against its reference in the declared direction ("4.1 % worse")."""
        if not self.referenced or self.value is None or not self.reference:
            return ""
        rel = (self.value - self.reference) / abs(self.reference)
        if self.decl is None or self.decl.better == NEUTRAL or rel == 0:
            return f"{100 * rel:+.1f} %"
        better = (rel > 0) == (self.decl.better == HIGHER)
        return f"{100 * abs(rel):.1f} % {'better' if better else 'worse'}"

    @property
    def margin(self) -> float | None:
        """Distance of the value to the nearest bound, relative to the reference.

        Positive inside the band, negative outside; None without a band.
        """
        if not self.referenced or self.value is None or not self.reference:
            return None
        lo, hi = self.band
        gaps = [g for g in ((self.value - lo) if lo is not None else None,
                            (hi - self.value) if hi is not None else None) if g is not None]
        return min(gaps) / abs(self.reference)


def variant_of(params: dict[str, str]) -> str:
    """The parameters that tell variants apart beyond transport and mapping (``mode=pure``).

    Not the fixtures' (``build.bench=pt2pt``) nor the node of ``--distribute``
    (``.nid``).
    """
    return " ".join(f"{k}={v}" for k, v in params.items()
                    if k not in ("transport", "mapping") and "." not in k)


@dataclass
class Case:
    """A test case's last attempt: where it ran, its result and its variables."""

    check: str           # the test class, e.g. Pt2ptCheck
    name: str            # the display name
    system: str
    partition: str
    environ: str
    transport: str
    mapping: str
    result: str          # pass, fail, skip, abort
    fail_reason: str
    session: str         # session UUID
    time: float          # job completion (or session start), unix seconds
    variables: dict[str, Variable] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # queue_model and other check fields
    #: What the result depended on (:mod:`sentinel.results.provenance`); empty
    #: for a session of an older suite, a build or a series job.
    provenance: dict[str, str] = field(default_factory=dict)
    #: What the attempts before this one ended with (``--max-retries``), first
    #: first: ``attempt 1: fail: <reason>``; empty when it ran once.
    retried: list[str] = field(default_factory=list)
    #: Its place in the reference file and the learnt baseline: the values
    #: of its reference index (``local:cpu/openmpi/ob1-tcp/core``); '' for a
    #: test case without references (a build).
    index: str = ""
    #: The variables whose band could fail it (``judged_variables``); None for
    #: a session of a suite that judged every referenced variable.
    judged: list[str] | None = None
    #: What the earlier attempts measured of the variables they failed on:
    #: the first measurement of a failure confirmed by the retry.
    earlier_values: list[dict[str, Variable]] = field(default_factory=list)
    #: What each earlier attempt's host probe said outside its band (its
    #: ``host_outside``), first first: a slowed node is slowed in every attempt.
    earlier_host: list[list[str]] = field(default_factory=list)

    @property
    def where(self) -> str:
        """``system:partition+environ``."""
        return f"{self.system}:{self.partition}+{self.environ}"

    @property
    def variant(self) -> str:
        """The other parameters of the display name (``mode=pure threads=1``).

        Not the fixtures' (``build.bench=pt2pt``, ``probe.bench=affinity``) nor
        the node of ``--distribute`` (``.nid``): they do not tell test cases apart.
        """
        return variant_of(name_params(self.name))

    @property
    def node(self) -> str:
        """The node a test case was pinned to by ``--distribute`` (``%.nid=v2``), or ''."""
        m = re.search(r" %\.nid=(\S+)", self.name)
        return m.group(1) if m else ""

    @property
    def label(self) -> str:
        """``environ transport mapping`` (what distinguishes curves in one plot)."""
        return " ".join(x for x in (self.environ, self.transport, self.mapping) if x)


@dataclass
class Inputs:
    """Everything the report is built from, and what could not be read."""

    cases: list[Case] = field(default_factory=list)
    sessions: list[dict] = field(default_factory=list)  # session_info of each run report
    history: list[tuple[dict, list[Case]]] = field(default_factory=list)  # stored sessions
    problems: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    #: What fails the run though its files were read (the newest session ran nothing).
    errors: list[str] = field(default_factory=list)
    #: What ``sentinel vet`` did to nodes (drains, resumes), from the results database.
    node_actions: list[Action] = field(default_factory=list)
    #: system -> the requirements of its reference file, for each system the
    #: run reports hold an acceptance of (its every entry is a requirement).
    contracts: dict[str, list[Requirement]] = field(default_factory=dict)


def _variable(check: str, key: str, entry: object, where: str,
              intervals: dict[str, tuple[float, float]], coverage: dict[str, float]) -> Variable:
    if not isinstance(entry, list) or len(entry) != _ENTRY_LEN:
        raise ValueError(f"{where}: performance value {key!r} is not "
                         "[value, reference, lower, upper, unit, result]")
    value, ref, lower, upper, unit, result = entry
    for what, number in zip(("value", "reference", "lower", "upper"), entry):
        if number is not None and not is_number(number):
            raise ValueError(f"{where}: performance value {key!r} has {what} {number!r}")
    name = key.split(":", 2)[-1]
    return Variable(name, value, float(ref or 0), lower, upper, str(unit or ""),
                    str(result or ""), _declared(check, name), intervals.get(name),
                    coverage.get(name))


def _intervals(raw: object, where: str) -> dict[str, tuple[float, float]]:
    """The test case's ``intervals`` field (absent in older reports: none)."""
    if raw is None:
        return {}
    expect(raw, "an object", f"{where}: 'intervals'")
    out = {}
    for name, pair in raw.items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(map(is_number, pair))):
            raise ValueError(f"{where}: 'intervals': {name!r} is not [low, high], got {pair!r}")
        out[name] = (float(pair[0]), float(pair[1]))
    return out


def _coverage(raw: object, where: str) -> dict[str, float]:
    """The test case's ``interval_coverage`` field (absent in older reports: all 95 %)."""
    if raw is None:
        return {}
    expect(raw, "an object", f"{where}: 'interval_coverage'")
    for name, value in raw.items():
        if not (is_number(value) and 0 < value < 1):
            raise ValueError(f"{where}: 'interval_coverage': {name!r} is {value!r}, not a "
                             "probability")
    return {name: float(value) for name, value in raw.items()}



@functools.lru_cache(maxsize=1 << 16)
def _declared(check: str, name: str) -> PerfVar | None:
    """:func:`declaration`, once per name: a site's history holds millions of values."""
    return declaration(check, name)


@functools.lru_cache(maxsize=1 << 16)
def _followed(check: str, key: str) -> bool:
    name = key.split(":", 2)[-1]
    decl = _declared(check, name)
    return decl is not None and decl.is_followed(name)


def _judged_of(tc: dict, where: str) -> list[str] | None:
    """The test case's ``judged_variables`` (None in a session of an older suite)."""
    judged = tc.get("judged_variables")
    if judged is None:
        return None
    expect(judged, "a list", f"{where}: 'judged_variables'")
    if not all(isinstance(n, str) for n in judged):
        raise ValueError(f"{where}: 'judged_variables' must be a list of names")
    return list(judged)


def _kept(check: str, key: str, judged: list[str] | None, with_judged: bool) -> bool:
    """Whether a stored variable is kept when only the headline ones are asked for."""
    if _followed(check, key):
        return True
    name = key.split(":", 2)[-1]
    return with_judged and (name in (judged or ()) or name in _HOST)


_HOST = frozenset(v.template for v in HOST_VARIABLES)


def _case(tc: dict, session: dict, source: str, headline_only: bool = False,
          with_judged: bool = False) -> Case:
    """One test case (its shape checked by :func:`cases_of`) with its variables.

    ``headline_only``: only the variables followed night after night (a
    stored session: the trends and change points read no other); ``with_judged`` keeps beside
    them the variables the test case judged and the host probe's (what
    ``sentinel baseline`` learns bands of).
    """
    name = tc.get("display_name", tc["name"])
    check = tc["name"].split()[0]
    where = f"{source}: test case {name}"
    perfvalues = tc.get("perfvalues") or {}
    expect(perfvalues, "an object", f"{where}: 'perfvalues'")
    completed = tc.get("job_completion_time_unix")
    expect(completed, "a number or null", f"{where}: 'job_completion_time_unix'")
    variables = {}
    intervals = _intervals(tc.get("intervals"), where)
    coverage = _coverage(tc.get("interval_coverage"), where)
    judged = _judged_of(tc, where)
    for key, entry in perfvalues.items():
        if headline_only and not _kept(check, key, judged, with_judged):
            continue
        var = _variable(check, key, entry, where, intervals, coverage)
        variables[var.name] = var
    if judged is not None:
        variables = _with_origin(variables, tc, judged, where)
    try:
        recorded = provenance.of_testcase(tc)
    except SentinelError as err:
        raise ValueError(f"{source}: {err}") from None
    return Case(
        check=check, name=name,
        system=tc["system"], partition=tc["partition"], environ=tc["environ"],
        transport=str(tc.get("transport") or ""), mapping=str(tc.get("mapping") or ""),
        result=tc["result"],
        fail_reason=str(tc.get("fail_reason") or tc.get("skip_reason") or ""),
        session=str(session.get("uuid") or ""),
        time=float(completed or session.get("time_start_unix") or 0),
        variables=variables,
        extra={k: tc[k] for k in ("queue_model", "queue_evidence", "mpi_linkage", "unresolved",
                                  "fabric_pairs", "outliers", "cleared", "nodes_vetted",
                                  "node_verdicts", *BASELINE_FIELDS, *ACCEPTANCE_FIELDS)
               if tc.get(k)},
        provenance=recorded, index=str(tc.get("reference_index_values") or ""), judged=judged)


def _with_origin(variables: dict[str, Variable], tc: dict, judged: list[str],
                 where: str) -> dict[str, Variable]:
    """Each variable with what the test case recorded of its band and its judgement."""
    fields = {}
    for name in ("reference_origin", "provisional", "reference_entry"):
        value = tc.get(name) or {}
        expect(value, "an object", f"{where}: {name!r}")
        fields[name] = value
    out = {}
    for name, var in variables.items():
        entry = fields["reference_entry"].get(name)
        band = None
        if name not in judged and isinstance(entry, list) and len(entry) == 4:
            ref, lower, upper = (entry_number(x) for x in entry[:3])
            band = (ref, lower, upper) if ref else None
        out[name] = replace(var, judged=name in judged,
                            origin=str(fields["reference_origin"].get(name, "")),
                            provisional=str(fields["provisional"].get(name, "")),
                            recorded_band=band)
    return out


#: What a test case recorded of the acceptance it ran in (:mod:`sentinel.rfm.references`).
ACCEPTANCE_FIELDS = ("require_partition_reference", "reference_file", "reference_digest")

#: What a test case recorded of its bands' origin (:mod:`sentinel.rfm.references`).
BASELINE_FIELDS = ("reference_origin", "reference_entry", "provisional", "baseline_sessions",
                   "level_changes", "host_outside", "reference_status")


def cases_of(report: dict, source: str, headline_only: bool = False,
             with_judged: bool = False) -> list[Case]:
    """The last attempt of each test case of a run report; ValueError names what is wrong."""
    session = checked_session(report, source)
    tried = attempts(report)
    last = [tries[-1] for tries in tried]
    cases = [_case(tc, session, source, headline_only, with_judged) for tc in last]
    why = _DependencyReasons(last, source)
    for tc, case, tries in zip(last, cases, tried):
        if case.result == "skip" and not case.fail_reason:
            case.fail_reason = why.of(tc)
        case.retried = earlier(tries)
        case.earlier_values = [_failed_values(case, early, source) for early in tries[:-1]]
        case.earlier_host = [probe_outside(early.get("host_outside"),
                                           str(early.get("fail_reason") or ""))
                             for early in tries[:-1]]
        case.variables = _judged_earlier(case, tries[:-1], session, source)
    return cases


def _judged_earlier(case: Case, earlier: list[dict], session: dict,
                    source: str) -> dict[str, Variable]:
    """The last attempt's variables, those judged and within their band before as then.

    A retry judges again only what was outside its band
    (:mod:`sentinel.rfm.references`): a variable that passed an earlier
    attempt keeps that attempt's value and verdict, not the retry's "recorded".
    """
    if case.judged is None or not earlier:
        return case.variables
    out = dict(case.variables)
    for tc in earlier:
        for name, var in _case(tc, session, source).variables.items():
            now = out.get(name)
            if now is not None and now.judged is False and var.referenced \
                    and var.result == "pass":
                out[name] = var
    return out


def probe_outside(host_outside: object, fail_reason: str) -> list[str]:
    """What an attempt's host probe said outside its band, worse.

    Its ``host_outside``, else the figures its sanity message leads with (a
    probe off stopped it first).
    """
    said = [str(x) for x in host_outside or []] if isinstance(host_outside, list) else []
    mark = f"{SLOWED}: "
    if not said and mark in fail_reason:
        said.append(fail_reason.split(mark, 1)[1].split("; and so: ")[0])
    return said


def _failed_values(case: Case, tc: dict, source: str) -> dict[str, Variable]:
    """The variables an earlier attempt of ``case`` failed on, as it measured them."""
    where = f"{source}: test case {case.name} (an earlier attempt)"
    perfvalues = tc.get("perfvalues") or {}
    expect(perfvalues, "an object", f"{where}: 'perfvalues'")
    intervals = _intervals(tc.get("intervals"), where)
    out = {}
    for key, entry in perfvalues.items():
        var = _variable(case.check, key, entry, where, intervals, {})
        if var.result == "fail":
            out[var.name] = var
    return out


class _DependencyReasons:
    """Why ReFrame skipped a test case without a message: a test it depends on did not run.

    ReFrame skips a test case whose dependency was skipped or failed and
    records no reason; the run report names the dependencies
    (``dependencies_actual``: unique name, ``system:partition``, environment).
    The reason given is the root of the chain, the first dependency that did
    not run for a reason of its own, so that the skips of one cause make one
    group: ``depends on Pt2ptCheck, which was skipped: mapping socket needs 2
    sockets; partition local:cpu has 1``.
    """

    def __init__(self, attempts: list[dict], source: str) -> None:
        self.source = source
        self.by_name = {(tc.get("unique_name") or tc["name"], f"{tc['system']}:{tc['partition']}",
                         tc["environ"]): tc for tc in attempts}

    def of(self, tc: dict) -> str:
        """The reason of ``tc``'s skip from its dependencies; '' when all of them ran."""
        root = self._root(tc, frozenset())
        if root is None:
            return ""
        own = str(root.get("fail_reason") or root.get("skip_reason") or "").strip()
        what = "was skipped" if root["result"] == "skip" else "failed"
        return f"depends on {root['name'].split()[0]}, which {what}: {own or 'no reason recorded'}"

    def _root(self, tc: dict, seen: frozenset[int]) -> dict | None:
        for dep in self._dependencies(tc):
            if dep["result"] in ("skip", "fail", "abort") and id(dep) not in seen:
                if dep.get("fail_reason") or dep.get("skip_reason"):
                    return dep
                return self._root(dep, seen | {id(tc)}) or dep
        return None

    def _dependencies(self, tc: dict) -> list[dict]:
        deps = tc.get("dependencies_actual") or []
        where = f"{self.source}: test case {tc.get('display_name', tc['name'])}: " \
                "'dependencies_actual'"
        expect(deps, "a list", where)
        if not all(isinstance(d, list) and len(d) == 3 and all(isinstance(x, str) for x in d)
                   for d in deps):
            raise ValueError(f"{where} must be a list of [name, system:partition, environ]")
        return [self.by_name[tuple(d)] for d in deps if tuple(d) in self.by_name]
