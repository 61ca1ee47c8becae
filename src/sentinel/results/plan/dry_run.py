"""The batch jobs a selection would submit, from its ``reframe --dry-run`` report.

``sentinel plan`` runs ReFrame with ``--dry-run`` on the selection (job
scripts are generated, nothing is submitted) and reads its JSON run report:
:func:`jobs_of` gives the jobs of the test cases that would run, and the
test cases that failed in the dry-run. A missing field of the report is an
error naming it, never a silent default.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentinel.errors import SentinelError
from sentinel.results.requirements import (
    Account,
    Seen,
    account,
    contract,
    entry_key,
    name_params,
    would_not_measure,
)

#: Results of a dry-run test case that would run. ``xfail``/``xpass`` are
#: performance verdicts, which a dry-run never reaches; listed for completeness.
WOULD_RUN = frozenset({"pass", "xfail", "xpass"})
#: Results of a test case that a real run would not run either.
SKIPPED = frozenset({"skip"})

#: (test name, partition, environment): one test case of the system planned.
CaseKey = tuple[str, str, str]


@dataclass(frozen=True)
class Job:
    """One batch job the selection would submit."""

    test: str
    partition: str
    environ: str
    kind: str  # "run" or "build"
    nodes: int
    time_limit: float  # seconds
    #: Whether the nightly budget may leave it for a later night (the check's
    #: ``may_defer``; a test that does not declare it runs every night).
    deferrable: bool = False

    @property
    def key(self) -> CaseKey:
        """The test case this job belongs to, as the results database names it."""
        return (self.test, self.partition, self.environ)


@dataclass(frozen=True)
class Failure:
    """A test case that failed in the dry-run: a real run would fail it too."""

    test: str
    partition: str
    environ: str
    result: str  # fail, abort, fail_deps
    phase: str | None
    reason: str | None

    @property
    def label(self) -> str:
        """``test @partition+environ``."""
        return f"{self.test} @{self.partition}+{self.environ}"

    @property
    def why(self) -> str:
        """The result, the phase and the reason, in one line."""
        where = f"{self.result} in {self.phase}" if self.phase else self.result
        return f"{where}: {self.reason}" if self.reason else where



def _label(tc: dict) -> str:
    return (f"{tc.get('name', '?')} @{tc.get('system', '?')}:{tc.get('partition', '?')}"
            f"+{tc.get('environ', '?')}")


def _field(tc: dict, name: str) -> Any:
    """A field of a test case of the run report; its absence is an error naming it."""
    if name not in tc:
        raise SentinelError(f"run report: test case {_label(tc)} has no field {name!r} "
                            "(a run report of ReFrame 4.10 has it)")
    return tc[name]


def _number(tc: dict, name: str, why: str) -> float:
    """A numeric field that must be set; ``why`` says what it is needed for."""
    value = _field(tc, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SentinelError(f"run report: test case {_label(tc)}: {name} is {value!r}: "
                            f"{why}")
    return float(value)


def _nodes(tc: dict) -> int:
    """Nodes of a test case's run job: ceil(num_tasks / num_tasks_per_node).

    The local scheduler runs every job on this host: one node.
    """
    if _field(tc, "scheduler") == "local":
        return 1
    tasks = _number(tc, "num_tasks", "the nodes of its job cannot be counted")
    per_node = _number(tc, "num_tasks_per_node",
                       "the nodes of its job cannot be counted (the test sets no "
                       "tasks per node)")
    return math.ceil(tasks / per_node)


def _jobs_of_case(tc: dict) -> list[Job]:
    """The jobs one test case that would run submits to its partition's scheduler."""
    name, part, env = _field(tc, "name"), _field(tc, "partition"), _field(tc, "environ")
    local = bool(_field(tc, "local"))
    deferrable = tc.get("may_defer") is True
    jobs = []
    if _field(tc, "job_stdout") is not None and not local:
        limit = _number(tc, "time_limit", "its job has no time limit to bound its cost "
                                          "(-S time_limit=...)")
        jobs.append(Job(name, part, env, "run", _nodes(tc), limit, deferrable))
    if _field(tc, "build_stdout") is not None and not (local or _field(tc, "build_locally")):
        limit = _number(tc, "build_time_limit", "its build job has no time limit to bound "
                                                "its cost (-S build_time_limit=...)")
        jobs.append(Job(name, part, env, "build", 1, limit, deferrable))
    return jobs


def _failure(tc: dict) -> Failure:
    return Failure(_field(tc, "name"), _field(tc, "partition"), _field(tc, "environ"),
                   tc["result"], tc.get("fail_phase"), tc.get("fail_reason"))


def jobs_of(report: dict) -> tuple[list[Job], list[Failure]]:
    """The batch jobs a dry-run report's selection would submit, and the failed cases.

    A test case counts when its dry-run result is one that runs (``pass``).
    A skipped case (``skip``) runs nothing. A case that failed in the dry-run
    (``fail``, ``abort``, ``fail_deps``) fails the same way in a real run, so
    it is not counted either, but returned, to be named. Of a case that
    counts, each job ReFrame created for it that goes to the partition's
    scheduler is one batch job:

    * the run job, when the report names its output (``job_stdout`` is set:
      ReFrame fills it only for a test with a run job, so compile-only tests
      such as the ``BenchBuild`` fixtures have none), unless the test runs
      ``local`` (the ``FetchRelease`` downloads);
    * the build job, when it has one (``build_stdout`` set: compile-only and
      compile-and-run tests), unless it builds locally (``build_locally``,
      ReFrame's default, which every build of this suite keeps) or ``local``.

    A run job takes ``ceil(num_tasks / num_tasks_per_node)`` nodes (one under
    the local scheduler) for ``time_limit``; a build job is one task (ReFrame's
    job default) for ``build_time_limit``. Every run of the report counts
    (``--reruns`` repeats the selection; a dry-run has no retries).
    """
    jobs: list[Job] = []
    failed: list[Failure] = []
    for run in report.get("runs") or []:
        for tc in run.get("testcases") or []:
            result = _field(tc, "result")
            if result in WOULD_RUN:
                jobs.extend(_jobs_of_case(tc))
            elif result not in SKIPPED:
                failed.append(_failure(tc))
    return jobs, failed


def failure_notes(failed: list[Failure], shown: int = 3) -> list[str]:
    """One note on the test cases that failed in the dry-run, grouped by reason."""
    if not failed:
        return []
    groups: dict[str, list[Failure]] = defaultdict(list)
    for failure in failed:
        groups[failure.why].append(failure)
    ranked = sorted(groups.items(), key=lambda item: -len(item[1]))
    parts = [f"{len(cases)} x {why} (e.g. {cases[0].label})" for why, cases in ranked[:shown]]
    rest = ranked[shown:]
    if rest:
        parts.append(f"{sum(len(c) for _, c in rest)} more, for {len(rest)} other reason(s)")
    return [f"{len(failed)} test case(s) failed in the dry-run and are not counted in jobs "
            "(a real run fails them the same way): " + "; ".join(parts)]


def cases_in(report: dict) -> int:
    """How many test cases the report's first run holds (0: the selection matched none)."""
    runs = report.get("runs") or []
    return len(runs[0].get("testcases") or []) if runs else 0


def unmeasurable(report: dict) -> list[Account]:
    """In an acceptance's dry-run, the reference file's requirements it cannot measure.

    Every entry of the file its test cases recorded (``reference_file``) is a
    requirement; those whose test case the selection skips (and why),
    fails, or never generates on the partition as configured are listed
    (:func:`~sentinel.results.requirements.would_not_measure`).
    """
    cases = [tc for run in report.get("runs") or [] for tc in run.get("testcases") or []
             if tc.get("require_partition_reference")]
    files = sorted({str(_field(tc, "reference_file")) for tc in cases})
    out: list[Account] = []
    for path in (Path(f) for f in files if Path(f).exists()):
        seen = [_seen(tc) for tc in cases if tc.get("reference_file") == str(path)]
        out += would_not_measure(account(contract(path), seen))
    return out


def _seen(tc: dict) -> Seen:
    """What the requirements' accounting reads of a dry-run's test case."""
    check = str(_field(tc, "name")).split()[0]
    where = f"{_field(tc, 'system')}:{_field(tc, 'partition')}"
    key = tc.get("reference_index_values") or entry_key(
        check, where, str(_field(tc, "environ")), str(tc.get("transport") or ""),
        str(tc.get("mapping") or ""), name_params(str(tc.get("display_name") or "")))
    reason = tc.get("fail_reason") or tc.get("skip_reason") or (
        "a test it depends on did not run" if tc.get("result") == "skip" else "")
    return Seen(check, key, str(_field(tc, "result")), str(reason))
