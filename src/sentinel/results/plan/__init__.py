"""What a selection costs before it runs (``sentinel plan``).

``sentinel plan`` runs ReFrame with ``--dry-run`` on the selection (job
scripts are generated, nothing is submitted) and reads its JSON run report.
Per partition of the system the plan gives

* **jobs**: the batch jobs the selection would submit
  (:func:`~sentinel.results.plan.dry_run.jobs_of`);
* **node-hours**: the sum over those jobs of nodes x ``t``, where ``t`` is the
  median measured run time (``time_run``) of the test case's earlier runs in
  the results database (:func:`~sentinel.results.plan.cost.history`), or its
  time limit (a bound) for a test case never run;
* **wall time**, an estimate: the sum over the jobs of ``t / max_jobs``,
  or, when more, the node-hours over the partition's nodes
  (``extras['num_nodes']``): jobs that each take the whole partition (an
  each-node vet) run one after another, whatever ``max_jobs`` allows.
  Partitions run side by side, so the total wall time is the longest
  partition's;
* where the partition's ``extras`` hold ``nightly_budget`` (``{"jobs": N,
  "node_hours": H}``), whether the plan fits it; in the nightly mode, the
  test cases deferred to a later night so that it does
  (:func:`~sentinel.results.plan.nightly.schedule`).

Every figure comes from a field of the report or of the configuration; a
missing field is an error naming it, never a silent default. This module
puts the rows together (:func:`build`);
:mod:`~sentinel.results.plan.output` prints them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from sentinel.errors import SentinelError
from sentinel.results.plan.cost import node_hours, seconds
from sentinel.results.plan.dry_run import CaseKey, Failure, Job, failure_notes
from sentinel.results.plan.nightly import Deferred, schedule
from sentinel.results.plan.partitions import Partition


@dataclass(frozen=True)
class Row:
    """The cost of the selection on one partition (or, with no partition, in total)."""

    label: str
    jobs: int
    node_hours: float
    wall_s: float
    measured: int  # jobs whose time is measured, not the time limit
    failed: int  # test cases that failed in the dry-run (not counted in jobs)
    partition: Partition | None = None
    deferred: tuple[Deferred, ...] = ()  # left for a later night (nightly budget)
    never: tuple[str, ...] = ()  # deferrable cases too large to fit any night
    room: float | None = None  # node-hours the budget leaves beside the every-night cases

    @property
    def source(self) -> str:
        """Where the wall time comes from: measured, bound, or k/n measured."""
        if self.jobs == 0:
            return "-"
        if self.measured == self.jobs:
            return "measured"
        return "bound" if self.measured == 0 else f"{self.measured}/{self.jobs} measured"

    @property
    def over_budget(self) -> list[str]:
        """Each way the row exceeds its partition's budget (none: it fits, or no budget)."""
        budget = self.partition.budget if self.partition else None
        if budget is None:
            return []
        over = []
        if budget.jobs is not None and self.jobs > budget.jobs:
            over.append(f"{self.jobs} jobs > {budget.jobs}")
        if budget.node_hours is not None and self.node_hours > budget.node_hours:
            over.append(f"{self.node_hours:.1f} node-hours > {budget.hours}")
        return over + list(self.never)


@dataclass(frozen=True)
class Plan:
    """The rows of every partition, their total, and what the reader must know."""

    rows: list[Row]
    total: Row
    notes: list[str]
    db: Path

def _row(partition: Partition, jobs: list[Job], failed: int, measured: dict[CaseKey, float],
         last: dict[CaseKey, float], defer: bool, night: int | None) -> Row:
    deferred: list[Deferred] = []
    never: list[str] = []
    room = None
    if defer and partition.budget is not None:
        jobs, deferred, never, room = schedule(jobs, partition.budget, measured, last, night)
    times = [seconds(job, measured) for job in jobs]
    counted = sum(1 for job in jobs if job.kind == "run" and job.key in measured)
    hours = node_hours(jobs, measured)
    wall = sum(times) / partition.max_jobs
    if partition.nodes:
        wall = max(wall, hours * 3600 / partition.nodes)
    return Row(partition.fullname, len(jobs), hours, wall, counted, failed, partition,
               tuple(deferred), tuple(never), room)


def build(partitions: list[Partition], jobs: list[Job], failed: list[Failure],
          measured: dict[CaseKey, float], db: Path, *, last: dict[CaseKey, float] | None = None,
          defer: bool = False, night: int | None = None) -> Plan:
    """One row per partition (in configuration order) and the total.

    With ``defer`` (the nightly), a partition with a budget runs what
    :func:`schedule` keeps and lists the rest as deferred. A job on a
    partition that is not among ``partitions`` is an error.
    """
    by_partition: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        by_partition[job.partition].append(job)
    failures = Counter(f.partition for f in failed)
    stray = sorted((set(by_partition) | set(failures)) - {p.name for p in partitions})
    if stray:
        raise SentinelError(f"the dry-run has test cases on partition(s) {', '.join(stray)}, "
                            f"which the configuration of {partitions[0].system} does not list")
    rows = [_row(p, by_partition.get(p.name, []), failures[p.name], measured, last or {},
                 defer, night) for p in partitions]
    total = Row("total", sum(r.jobs for r in rows), sum(r.node_hours for r in rows),
                max((r.wall_s for r in rows), default=0.0), sum(r.measured for r in rows),
                len(failed), deferred=tuple(d for r in rows for d in r.deferred))
    return Plan(rows, total, failure_notes(failed) + deferral_notes(rows), db)


def deferral_notes(rows: list[Row], shown: int = 5) -> list[str]:
    """One note per partition that defers test cases: how many, and the first ones."""
    notes = []
    for row in rows:
        if not row.deferred:
            continue
        hours = sum(d.node_hours for d in row.deferred)
        first = "; ".join(d.label for d in row.deferred[:shown])
        more = f"; and {len(row.deferred) - shown} more" if len(row.deferred) > shown else ""
        nights = (f", {hours / row.room:.1f} nights of the {row.room:.1f} node-hours the "
                  "budget leaves beside the every-night cases" if row.room else "")
        notes.append(f"{row.label}: {len(row.deferred)} test case(s) deferred to a later "
                     f"night by the nightly budget ({sum(d.jobs for d in row.deferred)} jobs, "
                     f"{hours:.1f} node-hours{nights}; the least recently measured run "
                     f"first): {first}{more}")
    return notes
