"""The suite's results as Prometheus metric families.

From what ``sentinel report`` reads (:class:`~sentinel.results.report.load.Inputs`):
the newest sessions' headline values with their reference bands, every test
case's result with a bounded reason, the values left unresolved, the change
points over the stored sessions, the nodes vetted and what was done to them,
and an acceptance's requirements met, not met and not measured.
Every value family is named for its quantity in base units
(``mpi_sentinel_value_seconds``), its declared unit kept as the ``unit``
label; the labels are the test case's identity, never free text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from sentinel.errors import SentinelError
from sentinel.results.changes import Change
from sentinel.results.metrics.names import (
    FAIL_REASONS,
    SKIP_REASONS,
    UNRESOLVED_REASONS,
    base_unit,
    reason_of,
)
from sentinel.results.report.load import Case, Inputs, name_params, variant_of
from sentinel.results.report.tables import NodeVerdict, acceptance
from sentinel.results.vet.actions import Action

PREFIX = "mpi_sentinel"

#: The labels that name a test case, in this order.
CASE_LABELS = ("system", "partition", "environ", "check", "transport", "mapping", "variant")


def case_labels(c: Case) -> list[str]:
    """The values of :data:`CASE_LABELS` for a test case."""
    return [c.system, c.partition, c.environ, c.check, c.transport, c.mapping, c.variant]


def change_labels(change: Change) -> list[str]:
    """The values of :data:`CASE_LABELS` for a change point's test."""
    system, _, rest = change.where.partition(":")
    partition, _, environ = rest.partition("+")
    params = name_params(change.test)
    return [system, partition, environ, change.test.split()[0], params.get("transport", ""),
            params.get("mapping", ""), variant_of(params)]


class _Families:
    """Gauge families by name, created on first use with their labels."""

    def __init__(self) -> None:
        self.by_name: dict[str, GaugeMetricFamily] = {}
        self.seen: set[tuple[str, tuple[str, ...]]] = set()

    def add(self, name: str, doc: str, labels: dict[str, str], value: float) -> None:
        full = f"{PREFIX}_{name}"
        key = (full, tuple(labels.values()))
        if key in self.seen:  # a Pushgateway refuses the whole push for one
            raise SentinelError(f"two samples of {full} with the labels {labels}: the run "
                                "reports hold the same test case twice (give each session once)")
        self.seen.add(key)
        family = self.by_name.get(full)
        if family is None:
            family = self.by_name[full] = GaugeMetricFamily(full, doc, labels=list(labels))
        family.add_metric(list(labels.values()), value)


def _measured(cases: list[Case]) -> list[Case]:
    """The test cases with metrics of their own: not fixtures (builds), not pinned to a node.

    A case ``--distribute`` pinned to a node is that node's verdict
    (``node_failed_checks``), not the partition's.
    """
    return [c for c in cases if " ~" not in c.name and not c.node]


def _values(out: _Families, cases: list[Case]) -> None:
    for c in cases:
        ident = dict(zip(CASE_LABELS, case_labels(c)))
        for var in c.variables.values():
            if not var.headline or var.value is None or var.decl is None:
                continue
            value = var.declared_value
            if value is None:
                continue
            suffix, factor = base_unit(var.decl.unit)
            labels = {**ident, "variable": var.name, "unit": var.decl.unit}
            out.add(f"value_{suffix}", f"A headline value of the newest session, in {suffix}",
                    labels, value * factor)
            if not var.referenced or var.unit != var.decl.unit:
                continue
            out.add(f"reference_{suffix}", f"The reference of a headline value, in {suffix}",
                    labels, var.reference * factor)
            lo, hi = var.band
            for side, bound in (("lower", lo), ("upper", hi)):
                if bound is not None:
                    out.add(f"reference_{side}_{suffix}",
                            f"The {side} bound of a headline value's reference band, in {suffix}",
                            labels, bound * factor)


def _results(out: _Families, cases: list[Case]) -> None:
    for c in cases:
        kinds = SKIP_REASONS if c.result == "skip" else FAIL_REASONS
        reason = "" if c.result == "pass" else reason_of(c.fail_reason, kinds)
        out.add("test_result", "A test case of the newest session: 1, with its result and "
                               "(not passed) a reason of a fixed set",
                {**dict(zip(CASE_LABELS, case_labels(c))), "result": c.result,
                 "reason": reason}, 1)
        for name, why in (c.extra.get("unresolved") or {}).items():
            out.add("unresolved", "A value the run could not resolve: 1, with why",
                    {**dict(zip(CASE_LABELS, case_labels(c))), "variable": name,
                     "reason": reason_of(str(why), UNRESOLVED_REASONS)}, 1)


def _changes(out: _Families, found: Iterable[Change]) -> None:
    for ch in found:
        labels = {**dict(zip(CASE_LABELS, change_labels(ch))), "variable": ch.variable,
                  "unit": ch.unit, "verdict": ch.verdict}
        out.add("change_point_timestamp_seconds", "When a headline variable's level changed: "
                "the start of the first session at the new level", labels, ch.after.time)
        out.add("change_point_shift_ratio", "The relative change of the level, (new - old) / old",
                labels, ch.shift)


def _nodes(out: _Families, vetted: list[NodeVerdict], acted: list[Action]) -> None:
    for v in vetted:
        system, _, partition = v.where.partition(":")
        out.add("node_failed_checks", "Node-local checks a vetted node failed (0: it passed)",
                {"system": system, "partition": partition, "node": v.node}, len(v.failed))
    last: dict[tuple[str, str], Action] = {}
    for a in acted:
        last[(a.where, a.node)] = a
    for (where, node), a in sorted(last.items()):
        system, _, partition = where.partition(":")
        out.add("node_action_timestamp_seconds", "The suite's last action on a node (drain, "
                "redrain, kept, resume) and when",
                {"system": system, "partition": partition, "node": node, "action": a.action},
                a.time)


def _acceptance(out: _Families, inputs: Inputs) -> None:
    """Per system of an acceptance: its reference file's requirements met, not met, not measured."""
    for system, contract in sorted(inputs.contracts.items()):
        cases = [c for c in inputs.cases if c.system == system]
        acc = acceptance(cases, {system: contract})
        met = sum(r.verdict == "PASS" for r in acc.requirements)
        for status, count in (("met", met), ("not_met", len(acc.requirements) - met),
                              ("not_measured", len(acc.unmeasured))):
            out.add("acceptance_requirements", "The requirements of an acceptance's reference "
                    "file: how many were met, not met (measured out of band) and not measured",
                    {"system": system, "status": status}, count)


def families(inputs: Inputs, found: list[Change], vetted: list[NodeVerdict]) -> list[Metric]:
    """Every metric family of the inputs, each family's samples in input order."""
    out = _Families()
    _acceptance(out, inputs)
    _values(out, _measured(inputs.cases))
    _results(out, _measured(inputs.cases))
    _changes(out, found)
    _nodes(out, vetted, inputs.node_actions)
    newest: dict[str, float] = {}
    for c in inputs.cases:
        newest[c.system] = max(newest.get(c.system, 0.0), c.time)
    for system, when in sorted(newest.items()):
        out.add("session_timestamp_seconds", "When the newest session's last job completed",
                {"system": system}, when)
    return list(out.by_name.values())


class Collector:
    """A prometheus_client collector of fixed families (one export)."""

    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        """The families."""
        yield from self.metrics
