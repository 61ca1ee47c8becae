"""The report's tables: every variable with its verdict, acceptance, transport matrix.

Pure functions of the loaded test cases; the HTML, JSON and CSV writers
render what these return.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Mapping

from sentinel.analysis.variables import COVERAGE, HOST_VARIABLES
from sentinel.results.report.load import Case, Variable, name_params, probe_outside
from sentinel.results.requirements import (
    MEASURED,
    Account,
    Requirement,
    Seen,
    account,
    entry_key,
)

SUMMARY_FIELDS = ("system", "partition", "environ", "check", "transport", "mapping",
                  "test", "variable", "value", "interval_low", "interval_high",
                  "interval_coverage", "unit",
                  "reference", "lower_bound", "upper_bound", "margin", "band_origin",
                  "earlier_values", "verdict")


@dataclass(frozen=True)
class Row:
    """One performance variable of one test case, with its verdict."""

    case: Case
    var: Variable

    @property
    def verdict(self) -> str:
        """PASS/FAIL against a band that judged it; else what it is.

        ``provisional``: judged, but its baseline has no band yet (burn-in);
        ``recorded``: not judged (recorded, plotted, compared, never failed),
        ``recorded, worse than its band`` where the test case had a band for it;
        ``no reference``: neither.
        """
        if self.var.referenced:
            return "PASS" if self.var.result == "pass" else "FAIL"
        if self.var.judged and self.var.provisional:
            return "provisional"
        if self.var.judged is False:
            side = self.var.outside_recorded
            return f"recorded, {side} than its band" if side else "recorded"
        return "no reference"

    def as_dict(self) -> dict:
        """The row as the JSON and CSV summaries give it."""
        lo, hi = self.var.band
        low, high = self.var.interval or (None, None)
        c = self.case
        return {"system": c.system, "partition": c.partition, "environ": c.environ,
                "check": c.check, "transport": c.transport, "mapping": c.mapping,
                "test": c.name, "variable": self.var.name, "value": self.var.value,
                "interval_low": low, "interval_high": high,
                "interval_coverage": None if low is None else (self.var.coverage or COVERAGE),
                "unit": self.var.unit,
                "reference": self.var.reference if self.var.referenced else None,
                "lower_bound": lo, "upper_bound": hi, "margin": self.var.margin,
                "band_origin": self.var.origin or None,
                "earlier_values": [e[self.var.name].value for e in c.earlier_values
                                   if self.var.name in e],
                "verdict": self.verdict}


def rows(cases: list[Case]) -> list[Row]:
    """Every variable of every test case, ordered by place, check and name."""
    out = [Row(c, v) for c in cases for v in c.variables.values()]
    return sorted(out, key=lambda r: (r.case.where, r.case.check, r.case.transport,
                                      r.case.mapping, r.case.variant, natural(r.var.name)))


def natural(name: str) -> tuple:
    """A sort key that puts ``m2`` before ``m10`` and ``bw_8B`` before ``bw_64B``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


@dataclass(frozen=True)
class Acceptance:
    """Each requirement measured (a referenced variable), each not measured, each failed case."""

    requirements: list[Row]
    failed_cases: list[Case]
    #: In an acceptance, the reference file's requirements no test case
    #: measured, each with why (:mod:`sentinel.results.requirements`).
    unmeasured: list[Account] = field(default_factory=list)
    #: How many requirements the reference files of the acceptance sessions
    #: hold (0: no acceptance session; the referenced variables are the
    #: requirements).
    contract: int = 0

    @property
    def total(self) -> int:
        """The requirements: the reference files' in an acceptance, else those measured."""
        return self.contract or len(self.requirements)

    @property
    def verdict(self) -> str:
        """FAIL, INCOMPLETE, PASS, or NO REQUIREMENTS when nothing was referenced.

        FAIL: a requirement measured out of its band, or a test case failed.
        INCOMPLETE: nothing failed, but a requirement was not measured (what
        was never measured cannot pass, and did not fail).
        """
        if self.failed_cases or any(r.verdict == "FAIL" for r in self.requirements):
            return "FAIL"
        if self.unmeasured:
            return "INCOMPLETE"
        return "PASS" if self.total else "NO REQUIREMENTS"

    @property
    def said(self) -> str:
        """``INCOMPLETE (3 requirements, 2 not measured, 0 failed test cases)``."""
        return (f"{self.verdict} ({self.total} requirements, {len(self.unmeasured)} not "
                f"measured, {len(self.failed_cases)} failed test cases)")


def acceptance(cases: list[Case],
               contracts: Mapping[str, list[Requirement]] | None = None) -> Acceptance:
    """Requirements are the variables with a reference band, and in an acceptance the file's.

    ``contracts``: system -> the requirements of its reference file, for
    the systems the cases ran an acceptance on (:func:`contracts_of`).
    """
    reqs = [r for r in rows(cases) if r.var.referenced]
    failed = [c for c in cases if c.result in ("fail", "abort")]
    accounts = [a for system, contract in (contracts or {}).items()
                for a in account(contract, [seen(c) for c in cases if c.system == system])]
    return Acceptance(reqs, sorted(failed, key=lambda c: (c.where, c.name)),
                      [a for a in accounts if a.status != MEASURED], len(accounts))


def seen(c: Case) -> Seen:
    """What the requirements' accounting reads of a test case."""
    return Seen(c.check, case_key(c), c.result, c.fail_reason,
                frozenset(n for n, v in c.variables.items() if v.value is not None))


def case_key(c: Case) -> str:
    """A test case's place in the reference file, also where it stopped before recording it.

    ``local:cpu/openmpi/ob1-vader/socket`` (its ``reference_index_values``
    when it got that far; else from where it ran and its parameters).
    """
    return c.index or entry_key(c.check, f"{c.system}:{c.partition}", c.environ, c.transport,
                                c.mapping, name_params(c.name))


def acceptance_systems(cases: list[Case]) -> dict[str, list[Case]]:
    """The systems the cases ran an acceptance on, each with its acceptance test cases."""
    out: dict[str, list[Case]] = {}
    for c in cases:
        if c.extra.get("require_partition_reference"):
            out.setdefault(c.system, []).append(c)
    return out


@dataclass(frozen=True)
class HostSlowdown:
    """A node whose own probe fell outside its band, worse: the node's problem, once."""

    where: str  # system:partition
    node: str  # the job's nodes, as the provenance records them
    #: The probe's figures outside their bands, worse: ``host_copy_bw 4.1 GB/s, 52 % ...``.
    probe: list[str]
    cases: list[Case]  # the failed test cases of that node: the node's, not their MPI's
    #: The test case whose probe is said first (the report links to it).
    shown_by: Case

    @property
    def text(self) -> str:
        """``node n1 slowed as a whole ...: host_copy_bw 4.1 GB/s, 52.3 % worse ...; ...``."""
        values = sum(1 for c in self.cases for v in c.variables.values()
                     if v.referenced and v.result != "pass" and not is_host(v.name))
        folded = (f"{len(self.cases)} test case(s) and {values} MPI value(s) failed with it "
                  "there: the node's CPU or memory, not the MPI (their lines are folded here)"
                  if self.cases else "nothing judged failed with it there")
        return (f"node {self.node} slowed as a whole (the host probe, before any MPI): "
                f"{'; '.join(self.probe)}; {folded}")


def is_host(name: str) -> bool:
    """Whether ``name`` is one of the host probe's variables."""
    return name in HOST_NAMES


HOST_NAMES = frozenset(v.template for v in HOST_VARIABLES)


def _worse(var: Variable) -> bool:
    return var.change.endswith("worse")


def _probe_figures(c: Case, acc: Acceptance) -> list[str]:
    """What a test case said of its probe outside its band, worse ([] when nothing).

    Its ``host_outside``; in a session of a suite that judged the probe
    like any variable, its failed probe requirements; where sanity failed
    first, the figures its message leads with.
    """
    said = probe_outside(c.extra.get("host_outside"), c.fail_reason)
    said += [f"{r.var.name} {value_text(r.var)}, {r.var.change} than its reference "
             f"{num(r.var.reference, r.var.unit)}" for r in acc.requirements
             if r.case is c and r.verdict == "FAIL" and is_host(r.var.name) and _worse(r.var)]
    return said


def host_slowdowns(acc: Acceptance, cases: list[Case]) -> list[HostSlowdown]:
    """Each node whose host probe was outside its band, worse, with the failures it explains.

    The node is the job's (``provenance['nodes']``). A failed test case is
    the node's when its own probe, measured on that node before its
    launches, was outside its band in every attempt: the node was slowed
    while its MPI was measured, and still when it was measured again. A
    failure whose probe was within its band in any attempt (the retry's
    waits for a quiet node) stays the MPI's, whatever the node's other jobs
    saw: a probe off once is the probe's noise, not a slowed node. The figures said are those of the
    failed test cases the node explains, else the others'.
    """
    failed = {id(c) for c in acc.failed_cases}
    figures: dict[tuple[str, str], dict[str, str]] = {}
    first: dict[tuple[str, str], Case] = {}
    on: dict[tuple[str, str], list[Case]] = {}
    for c in sorted(cases, key=lambda c: id(c) not in failed):
        key = (f"{c.system}:{c.partition}", case_node(c))
        said = _probe_figures(c, acc) if key[1] else []
        for text in said:
            figures.setdefault(key, {}).setdefault(text.split(" ")[0], text)
            first.setdefault(key, c)
        if said and id(c) in failed and all(c.earlier_host):
            on.setdefault(key, []).append(c)
    return [HostSlowdown(where, node, [said[k] for k in sorted(said)], on.get((where, node), []),
                         first[(where, node)])
            for (where, node), said in sorted(figures.items())]


def case_node(c: Case) -> str:
    """The nodes of a test case's job, as its provenance records them ('' if unknown)."""
    return c.provenance.get("nodes", "")


#: The pt2pt variables shown in the transport matrix (latency, bandwidth).
MATRIX_VARIABLES = (("latency_8B", "8 B latency"), ("bw_peak", "peak bandwidth"))


def transport_matrix(cases: list[Case]) -> tuple[list[str], list[list[str]]]:
    """Rows environ x mapping x transport; per partition, 8 B latency and peak bandwidth.

    From the pt2pt characterisation (Pt2ptCheck): the view of the tables of Banerjee (2022).
    """
    pt2pt = [c for c in cases if c.check == "Pt2ptCheck" and c.result == "pass"]
    parts = sorted({f"{c.system}:{c.partition}" for c in pt2pt})
    header = ["environ", "mapping", "transport"]
    for p in parts:
        header += [f"{p} {label} [95 % interval]" for var, label in MATRIX_VARIABLES]
    keys = sorted({(c.environ, c.mapping, c.transport) for c in pt2pt})
    by = {(c.environ, c.mapping, c.transport, f"{c.system}:{c.partition}"): c for c in pt2pt}
    body = []
    for key in keys:
        row = list(key)
        for p in parts:
            case = by.get((*key, p))
            for var, _ in MATRIX_VARIABLES:
                v = case.variables.get(var) if case else None
                row.append(value_text(v)
                           if v and v.value is not None else "")
        body.append(row)
    return header, body


#: Seconds below 1 are shown in the largest of these that keeps a digit before the point.
_SUBSECOND = ((1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))


def _shown(unit: str, like: float | None) -> tuple[float, str]:
    """The factor and unit to show a quantity of ``unit`` like ``like`` in.

    Seconds below 1 as 1.461 us, not 1.461e-06 s; other units as they are.
    """
    if unit != "s" or not like or abs(like) >= 1:
        return 1.0, unit
    return next(((f, u) for f, u in _SUBSECOND if abs(like) >= f), _SUBSECOND[-1])


def _digits(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.0f}"


def num(x: float | None, unit: str = "") -> str:
    """A number to 4 significant digits (no exponent below 1e5), with its unit."""
    if x is None:
        return ""
    factor, shown = _shown(unit, x)
    return f"{_digits(x / factor)} {shown}".strip()


def bounds(lo: float | None, hi: float | None, unit: str, like: float | None) -> str:
    """``[lo, hi] unit`` (an open side as -inf or inf) in the unit ``like`` is shown in."""
    factor, shown = _shown(unit, like)
    low = "-inf" if lo is None else _digits(lo / factor)
    high = "inf" if hi is None else _digits(hi / factor)
    return f"[{low}, {high}] {shown}".strip()


def measured(value: float | None, unit: str, interval: tuple[float, float] | None,
             coverage: float | None = None) -> str:
    """A value with its unit and, where it has one, its interval (95 %, else said)."""
    if interval is None or value is None:
        return num(value, unit)
    factor, _ = _shown(unit, value)
    said = "" if coverage is None else f" ({100 * coverage:.4g} %)"
    return (f"{num(value, unit)} [{_digits(interval[0] / factor)}, "
            f"{_digits(interval[1] / factor)}]{said}")


def value_text(var: Variable) -> str:
    """A variable's value as :func:`measured` says it, with its interval and coverage."""
    return measured(var.value, var.unit, var.interval, var.coverage)


def summary_json(all_rows: list[Row], acc: Acceptance, problems: list[str],
                 cases: list[Case]) -> str:
    """The machine-readable summary: verdict, problems, retried and slowed nodes, variables."""
    return json.dumps({
        "verdict": acc.verdict,
        "requirements": acc.total,
        "unmeasured_requirements": [
            {"check": a.requirement.check, "entry": a.requirement.key,
             "variable": a.requirement.variable, "status": a.status, "why": a.why}
            for a in acc.unmeasured],
        "failed_test_cases": [{"test": c.name, "where": c.where, "reason": c.fail_reason}
                              for c in acc.failed_cases],
        "retried_test_cases": [{"test": c.name, "where": c.where, "earlier": c.retried,
                                "result": c.result} for c in cases if c.retried],
        "host_slowdowns": [{"partition": h.where, "node": h.node, "verdict": h.text,
                            "probe": h.probe, "test_cases": [c.name for c in h.cases]}
                           for h in host_slowdowns(acc, cases)],
        "problems": problems,
        "baselines": [_baseline_of(c) for c in cases if c.extra.get("reference_origin")
                      or c.extra.get("provisional")],
        "level_changes": [{"test": c.name, "where": c.where, "variable": name, "said": said}
                          for c in cases
                          for name, said in sorted((c.extra.get("level_changes") or {}).items())],
        "variables": [r.as_dict() for r in all_rows],
    }, indent=1)


def _baseline_of(c: Case) -> dict:
    """Where a test case's bands came from: their origin, the sessions learnt from."""
    return {"test": c.name, "where": c.where,
            "origin": dict(c.extra.get("reference_origin") or {}),
            "sessions": [s.rpartition("@")[0] for s in c.extra.get("baseline_sessions") or []],
            "provisional": dict(c.extra.get("provisional") or {})}


def summary_csv(all_rows: list[Row]) -> str:
    """Every variable, one CSV line each (SUMMARY_FIELDS)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=SUMMARY_FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in all_rows:
        writer.writerow(r.as_dict())
    return buf.getvalue()


@dataclass(frozen=True)
class NodeFailure:
    """What failed on one node: the test case and why."""

    case: Case
    reason: str

    @property
    def test(self) -> str:
        """The test case's name, without the node ReFrame's ``--distribute`` pinned it to."""
        return self.case.name.split(" %.part=")[0]


@dataclass(frozen=True)
class NodeVerdict:
    """The node-local checks of one node (``each_node`` or ``--distribute``).

    How many passed on it, what failed, how many were skipped.
    """

    where: str  # system:partition
    node: str
    passed: int
    failed: list[NodeFailure]
    skipped: int

    @property
    def verdict(self) -> str:
        """FAIL when any test case failed on the node, else PASS."""
        return "FAIL" if self.failed else "PASS"


def _per_node(c: Case) -> dict[str, str | None]:
    """Each node a test case judged, with why it failed there (None: it passed there).

    An each-node test case judged every node of ``nodes_vetted``, naming the
    failed ones in ``node_verdicts``; one pinned by ``--distribute`` judged
    its node alone.
    """
    if c.extra.get("nodes_vetted"):
        why: dict[str, str | None] = dict.fromkeys(str(c.extra["nodes_vetted"]).split())
        for line in str(c.extra.get("node_verdicts") or "").splitlines():
            node, sep, reason = line.removeprefix("node ").partition(": ")
            if sep:
                why[node] = reason
        return why
    if c.node:
        return {c.node: c.fail_reason if c.result in ("fail", "abort") else None}
    return {}


def nodes(cases: list[Case]) -> list[NodeVerdict]:
    """Per node of each partition, the node-local test cases it ran; failed nodes first."""
    found: dict[tuple[str, str], list[tuple[Case, str | None]]] = {}
    for c in cases:
        if c.result == "skip" and c.node:
            found.setdefault((f"{c.system}:{c.partition}", c.node), []).append((c, "skip"))
            continue
        for node, why in _per_node(c).items():
            found.setdefault((f"{c.system}:{c.partition}", node), []).append((c, why))
    out = [NodeVerdict(where, node, sum(why is None for _, why in mine),
                       [NodeFailure(c, why) for c, why in mine if why not in (None, "skip")],
                       sum(why == "skip" for _, why in mine))
           for (where, node), mine in found.items()]
    return sorted(out, key=lambda v: (not v.failed, v.where, natural(v.node)))
