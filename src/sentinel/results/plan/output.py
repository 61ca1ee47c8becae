"""The plan printed: the aligned table with its legend, and the JSON of ``--json``."""

from __future__ import annotations

import math
from typing import Any

from sentinel.results.plan import Plan, Row
from sentinel.results.plan.nightly import Deferred
from sentinel.results.requirements import Account


def hms(seconds: float) -> str:
    """``H:MM:SS`` (rounded up to the second)."""
    whole = math.ceil(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _budget_text(row: Row) -> str:
    budget = row.partition.budget if row.partition else None
    if budget is None:
        return "-"
    if row.over_budget:
        return "over budget: " + ", ".join(row.over_budget)
    limits = [f"<= {budget.jobs} jobs" if budget.jobs is not None else "",
              f"<= {budget.hours} node-hours" if budget.node_hours is not None else ""]
    return "fits (" + ", ".join(x for x in limits if x) + ")"


def _cells(row: Row) -> list[str]:
    part = row.partition
    max_jobs = "" if part is None else \
        f"{part.max_jobs}" + (" (ReFrame default)" if part.max_jobs_is_default else "")
    return [row.label, str(row.jobs), f"{row.node_hours:.1f}", hms(row.wall_s), row.source,
            max_jobs, str(row.failed), str(len(row.deferred)), _budget_text(row) if part else ""]


HEADER = ["partition", "jobs", "node-hours", "wall", "from", "max_jobs", "failed",
          "deferred", "nightly budget"]
_RIGHT = {1, 2, 3, 5, 6, 7}  # numeric columns, right-aligned


def _total_budget(plan: Plan) -> str:
    budgeted = [r for r in plan.rows if r.partition and r.partition.budget]
    over = [r for r in budgeted if r.over_budget]
    if not budgeted:
        return ""
    if not over:
        return f"all {len(budgeted)} partition(s) with a budget fit it"
    return f"{len(over)} of {len(budgeted)} partitions over budget"


def legend(plan: Plan) -> list[str]:
    """What each column means, with the formulas."""
    return [
        "jobs        batch jobs submitted: test cases that would run, each with a job of the "
        "partition's scheduler (skipped cases and local builds left out; retries not counted)",
        "node-hours  sum over the jobs of nodes x t, nodes = ceil(num_tasks / "
        "num_tasks_per_node), t = median measured time_run of the test case's earlier runs "
        f"in {plan.db}, else its time limit (a bound)",
        "wall        sum over the jobs of t / max_jobs, or node-hours / the partition's "
        "num_nodes when more (jobs of the whole partition run one after another); "
        "total: the longest partition's (partitions run side by side)",
        "from        measured: every job's t is measured; bound: none is; k/n measured: "
        "k of n jobs",
        "failed      test cases that failed in the dry-run, not counted in jobs (see the note)",
        "deferred    test cases the nightly budget leaves for a later night (see the note; "
        "sentinel plan --defer FILE writes them for the nightly's -S deferred_file=FILE)",
    ]


def render(plan: Plan) -> list[str]:
    """The plain aligned table, one row per partition and the total, then the legend."""
    total = _cells(plan.total)
    total[-1] = _total_budget(plan)
    table = [HEADER, *(_cells(r) for r in plan.rows), total]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    lines = ["  ".join(cell.rjust(w) if i in _RIGHT else cell.ljust(w)
                       for i, (cell, w) in enumerate(zip(line, widths))).rstrip()
             for line in table]
    return [*lines, "", *legend(plan), *(f"note: {n}" for n in plan.notes)]


def _row_json(row: Row) -> dict:
    out: dict[str, Any] = {"partition": row.label, "jobs": row.jobs,
                           "node_hours": round(row.node_hours, 3),
                           "wall_s": round(row.wall_s, 1), "measured_jobs": row.measured,
                           "wall_from": row.source, "failed": row.failed}
    part = row.partition
    if part is not None:
        budget = part.budget
        out.update(scheduler=part.scheduler, max_jobs=part.max_jobs,
                   max_jobs_from="reframe default" if part.max_jobs_is_default else "config",
                   budget=None if budget is None else {
                       "jobs": budget.jobs, "node_hours": budget.node_hours,
                       "fits": not row.over_budget, "over": row.over_budget})
    out["deferred"] = [_deferred_json(d) for d in row.deferred]
    return out


def _deferred_json(item: Deferred) -> dict:
    return {"test": item.test, "environ": item.environ, "jobs": item.jobs,
            "node_hours": round(item.node_hours, 3), "last_measured_unix": item.last}


def deferral_file(plan: Plan) -> dict:
    """What the nightly skips tonight (``-S deferred_file=``): per partition, its cases."""
    return {row.label: [{"test": d.test, "environ": d.environ} for d in row.deferred]
            for row in plan.rows}


def as_json(plan: Plan, system: str, mode: str | None, selection: list[str]) -> dict:
    """The plan as a JSON-ready dict (``sentinel plan --json``)."""
    return {"system": system, "mode": mode, "selection": selection, "db": str(plan.db),
            "partitions": [_row_json(r) for r in plan.rows], "total": _row_json(plan.total),
            "legend": legend(plan), "notes": plan.notes}


def unmeasurable_notes(accounts: list[Account]) -> list[str]:
    """One note per requirement an acceptance's selection cannot measure, after their count."""
    if not accounts:
        return []
    return [f"acceptance: {len(accounts)} requirement(s) of the reference file cannot be "
            "measured as configured: its verdict would be INCOMPLETE",
            *(f"acceptance cannot measure {a.text}" for a in accounts)]
