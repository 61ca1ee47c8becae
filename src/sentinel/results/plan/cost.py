"""What a job costs: its test case's measured run time, else its time limit.

The measured time of a test case is the median ``time_run`` of its earlier
runs in ReFrame's results database (:func:`history`); a test case never run
costs its time limit, a bound.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from sentinel.errors import SentinelError
from sentinel.results import store
from sentinel.results.plan.dry_run import SKIPPED, CaseKey, Job


@dataclass(frozen=True)
class History:
    """What the results database says of the test cases planned."""

    #: Median ``time_run`` of each test case's earlier runs (s).
    times: dict[CaseKey, float]
    #: When each test case's job last completed (Unix time).
    last: dict[CaseKey, float]


def _is_positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def history(db: Path, system: str, keys: Iterable[CaseKey]) -> History:
    """Each test case's median measured ``time_run`` and when it last ran, from ``db``.

    ``time_run`` is ReFrame's time from the job's submission to its end as
    seen by the poll (queueing included: an overestimate of the node time).
    Each stored attempt whose job completed counts (a retry too), unless it
    was skipped; a test case with none is absent. No database: nothing is
    measured.
    """
    wanted = set(keys)
    if not wanted or not db.exists():
        return History({}, {})
    try:
        stored = store.testcases(db, system)
    except SentinelError as err:
        raise SentinelError(f"{err}; name another with --db") from None
    times: dict[CaseKey, list[float]] = defaultdict(list)
    last: dict[CaseKey, float] = {}
    for tc in stored:
        key = (tc.get("name"), tc.get("partition"), tc.get("environ"))
        if key not in wanted:
            continue
        if _is_positive(tc.get("time_run")) and tc.get("result") not in SKIPPED:
            times[key].append(float(tc["time_run"]))
        when = tc.get("job_completion_time_unix")
        if _is_positive(when):
            last[key] = max(last.get(key, when), when)
    return History({key: statistics.median(v) for key, v in times.items()}, last)


def seconds(job: Job, measured: dict[CaseKey, float]) -> float:
    """A job's time: its test case's measured ``time_run`` (a run job), else its limit."""
    return measured.get(job.key, job.time_limit) if job.kind == "run" else job.time_limit


def node_hours(jobs: Iterable[Job], measured: dict[CaseKey, float]) -> float:
    """Nodes x time of the jobs, measured where known, in hours."""
    return sum(job.nodes * seconds(job, measured) for job in jobs) / 3600
