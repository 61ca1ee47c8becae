"""What a selection costs before it runs (``sentinel plan``).

``sentinel plan`` runs ReFrame with ``--dry-run`` on the selection (job
scripts are generated, nothing is submitted) and reads its JSON run report.
Per partition of the system this module gives

* **jobs**: the batch jobs the selection would submit (:func:`jobs_of`);
* **node-hours**: the sum over those jobs of nodes x ``t``, where ``t`` is the
  median measured run time (``time_run``) of the test case's earlier runs in
  the results database (:func:`history`), or its time limit (a bound)
  for a test case never run;
* **wall time**, an estimate: the sum over the jobs of ``t / max_jobs``.
  Partitions run side by side, so the total wall time is the longest
  partition's;
* where the partition's ``extras`` hold ``nightly_budget`` (``{"jobs": N,
  "node_hours": H}``), whether the plan fits it; in the nightly mode, the
  test cases deferred to a later night so that it does (:func:`schedule`).

Every figure comes from a field of the report or of the configuration; a
missing field is an error naming it, never a silent default.
"""

from __future__ import annotations

import json
import math
import sqlite3
import statistics
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import reframe

from sentinel.errors import SentinelError

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


@dataclass(frozen=True)
class Budget:
    """A partition's ``extras['nightly_budget']``: at most so many jobs and node-hours."""

    jobs: int | None
    node_hours: float | None


@dataclass(frozen=True)
class Partition:
    """What the plan needs of a partition's configuration."""

    system: str
    name: str
    scheduler: str
    max_jobs: int
    max_jobs_is_default: bool  # not in the configuration: ReFrame's default applies
    budget: Budget | None

    @property
    def fullname(self) -> str:
        """``system:partition``."""
        return f"{self.system}:{self.name}"


@dataclass(frozen=True)
class Deferred:
    """A test case the nightly budget leaves for a later night."""

    test: str
    environ: str
    jobs: int
    node_hours: float  # measured where known, else its time limit's bound
    last: float | None  # when it last ran (Unix time); None: never

    @property
    def label(self) -> str:
        """``test +environ (last measured 2026-11-20, 3.2 node-hours)``."""
        when = "never measured" if self.last is None else \
            "last measured " + time.strftime("%Y-%m-%d", time.gmtime(self.last))
        return f"{self.test} +{self.environ} ({when}, {self.node_hours:.1f} node-hours)"


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
            over.append(f"{self.node_hours:.1f} node-hours > {_num(budget.node_hours)}")
        return over + list(self.never)


@dataclass(frozen=True)
class Plan:
    """The rows of every partition, their total, and what the reader must know."""

    rows: list[Row]
    total: Row
    notes: list[str]
    db: Path


# -- the dry-run report ------------------------------------------------------


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


# -- the configuration -------------------------------------------------------


def reframe_default_max_jobs() -> int:
    """ReFrame's ``max_jobs`` for a partition that sets none (its schema's default)."""
    schema = Path(reframe.__file__).parent / "schemas" / "config.json"
    return int(json.loads(schema.read_text())["defaults"]["systems/partitions/max_jobs"])


def _budget(where: str, extras: dict) -> Budget | None:
    raw = extras.get("nightly_budget")
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw or not set(raw) <= {"jobs", "node_hours"}:
        raise SentinelError(f"{where}: extras['nightly_budget'] is {raw!r}: expected "
                            "{'jobs': N, 'node_hours': H} (either may be left out)")
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise SentinelError(f"{where}: extras['nightly_budget']['{key}'] is {value!r}: "
                                "expected a number >= 0")
    return Budget(raw.get("jobs"), raw.get("node_hours"))


def partitions_of(system: str, entries: list[dict], default_max_jobs: int) -> list[Partition]:
    """The partitions of ``system`` from its configuration (``systems/0/partitions``).

    ``system`` may be ``system:partition``: then only that partition.
    """
    name, _, only = system.partition(":")
    out = []
    for entry in entries:
        where = f"partition {name}:{entry.get('name', '?')}"
        for key in ("name", "scheduler"):
            if key not in entry:
                raise SentinelError(f"{where}: the configuration has no {key!r}")
        if only and entry["name"] != only:
            continue
        max_jobs = entry.get("max_jobs", default_max_jobs)
        if isinstance(max_jobs, bool) or not isinstance(max_jobs, int) or max_jobs < 1:
            raise SentinelError(f"{where}: max_jobs is {max_jobs!r}: expected an integer >= 1")
        out.append(Partition(name, entry["name"], entry["scheduler"], max_jobs,
                             "max_jobs" not in entry,
                             _budget(where, entry.get("extras") or {})))
    if not out:
        raise SentinelError(f"system {name} has no partition {only!r}" if only
                            else f"system {name} has no partitions")
    return out


# -- the results database ----------------------------------------------------


def _history_rows(conn: sqlite3.Connection, system: str,
                  keys: set[CaseKey]) -> list[tuple[str, str, CaseKey]]:
    """(session uuid, test case uuid, key) of each stored test case among ``keys``."""
    rows = conn.execute("SELECT name, partition, environ, session_uuid, uuid FROM testcases "
                        "WHERE system = ?", (system,)).fetchall()
    return [(session, uuid, (name, part, env)) for name, part, env, session, uuid in rows
            if (name, part, env) in keys]


def _sessions(conn: sqlite3.Connection, uuids: set[str], db: Path) -> dict[str, dict]:
    """The stored run reports of the sessions ``uuids``, decoded."""
    out: dict[str, dict] = {}
    ordered = sorted(uuids)
    for i in range(0, len(ordered), 500):
        chunk = ordered[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for uuid, blob in conn.execute(
                f"SELECT uuid, json_blob FROM sessions WHERE uuid IN ({marks})", chunk):
            try:
                out[uuid] = json.loads(blob)
            except (TypeError, ValueError) as err:
                raise SentinelError(f"{db}: session {uuid}: its stored run report is not "
                                    f"JSON ({err})") from None
    return out


def _time_run(sessions: dict[str, dict], uuid: str) -> float | None:
    """``time_run`` of the stored test case ``uuid`` (``session:run:index``), if measured."""
    session, run, index = uuid.rsplit(":", 2)
    try:
        tc = sessions[session]["runs"][int(run)]["testcases"][int(index)]
    except (KeyError, IndexError, ValueError, TypeError):
        return None
    value = tc.get("time_run") if isinstance(tc, dict) else None
    usable = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if usable and tc.get("result") not in SKIPPED else None


def _read(db: Path, system: str, keys: set[CaseKey]
          ) -> tuple[list[tuple[str, str, CaseKey]], dict[str, dict], dict[CaseKey, float]]:
    """The stored test cases among ``keys``, their sessions, and when each case last ran."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = _history_rows(conn, system, keys)
            sessions = _sessions(conn, {session for session, _, _ in rows}, db)
            last: dict[CaseKey, float] = {}
            for name, part, env, when in conn.execute(
                    "SELECT name, partition, environ, job_completion_time_unix FROM testcases "
                    "WHERE system = ? AND job_completion_time_unix IS NOT NULL", (system,)):
                key = (name, part, env)
                if key in keys:
                    last[key] = max(last.get(key, when), when)
        finally:
            conn.close()
    except sqlite3.Error as err:
        raise SentinelError(f"{db}: not a ReFrame results database ({err}); name another "
                            "with --db") from None
    return rows, sessions, last


@dataclass(frozen=True)
class History:
    """What the results database says of the test cases planned."""

    #: Median ``time_run`` of each test case's earlier runs (s).
    times: dict[CaseKey, float]
    #: When each test case's job last completed (Unix time).
    last: dict[CaseKey, float]


def history(db: Path, system: str, keys: Iterable[CaseKey]) -> History:
    """Each test case's median measured ``time_run`` and when it last ran, from ``db``.

    ``time_run`` is ReFrame's time from the job's submission to its end as
    seen by the poll (queueing included: an overestimate of the node time).
    Each stored attempt whose run completed counts (a retry too); a test
    case with none is absent. No database: nothing is measured.
    """
    wanted = set(keys)
    if not wanted or not db.exists():
        return History({}, {})
    rows, sessions, last = _read(db, system, wanted)
    times: dict[CaseKey, list[float]] = defaultdict(list)
    for _, uuid, key in rows:
        value = _time_run(sessions, uuid)
        if value is not None:
            times[key].append(value)
    return History({key: statistics.median(v) for key, v in times.items()}, last)


# -- the plan ----------------------------------------------------------------


def seconds(job: Job, measured: dict[CaseKey, float]) -> float:
    """A job's time: its test case's measured ``time_run`` (a run job), else its limit."""
    return measured.get(job.key, job.time_limit) if job.kind == "run" else job.time_limit


def node_hours(jobs: Iterable[Job], measured: dict[CaseKey, float]) -> float:
    """Nodes x time of the jobs, measured where known, in hours."""
    return sum(job.nodes * seconds(job, measured) for job in jobs) / 3600


def _units(jobs: list[Job]) -> dict[CaseKey, list[Job]]:
    """The jobs of each test case (its run and build jobs go or wait together)."""
    out: dict[CaseKey, list[Job]] = defaultdict(list)
    for job in jobs:
        out[job.key].append(job)
    return out


def _never(unit: list[Job], hours: float, room: tuple[float, float],
           budget: Budget) -> str | None:
    """Why a deferrable test case can never fit beside what runs every night, if so."""
    test, _, env = unit[0].key
    if len(unit) > room[0]:
        return (f"{test} +{env} takes {len(unit)} job(s); beside the jobs that run every "
                f"night, {budget.jobs} leaves room for {room[0]:.0f}: it can never run")
    if hours > room[1]:
        return (f"{test} +{env} takes {hours:.1f} node-hours; beside the jobs that run every "
                f"night, {_num(budget.node_hours or 0)} leaves {room[1]:.1f}: it can never run")
    return None


def schedule(jobs: list[Job], budget: Budget, measured: dict[CaseKey, float],
             last: dict[CaseKey, float], night: int | None = None
             ) -> tuple[list[Job], list[Deferred], list[str], float]:
    """Tonight's jobs within ``budget``, the test cases deferred, and those that never fit.

    A test case that is not deferrable (the check's ``may_defer``) runs every night. The deferrable
    ones run in the order of their last measurement, the least recently
    measured first (never measured before all), as long as the budget's jobs
    and node-hours allow; the rest wait for a later night, when they are the
    least recently measured. Among cases measured as long ago (the never
    measured), the order is a hash of the case and ``night`` (days since
    1970, as the nightly's rotation counts them), another each night: no
    size of case is passed over night after night. A deferrable case
    that cannot fit even beside the every-night cases alone is named. The
    last value returned is the node-hours left beside the every-night cases.
    """
    night = int(time.time() // 86400) if night is None else night
    units = _units(jobs)
    fixed = [u for u in units.values() if not all(j.deferrable for j in u)]
    kept = [job for unit in fixed for job in unit]
    spent = [len(kept), node_hours(kept, measured)]
    caps = (math.inf if budget.jobs is None else budget.jobs,
            math.inf if budget.node_hours is None else budget.node_hours)
    room = (caps[0] - spent[0], caps[1] - spent[1])
    waiting = [(key, u) for key, u in units.items() if all(j.deferrable for j in u)]
    waiting.sort(key=lambda item: (last.get(item[0], -math.inf),
                                   zlib.crc32(f"{night}:{item[0]}".encode())))
    deferred: list[Deferred] = []
    never: list[str] = []
    for key, unit in waiting:
        hours = node_hours(unit, measured)
        if spent[0] + len(unit) <= caps[0] and spent[1] + hours <= caps[1]:
            kept.extend(unit)
            spent = [spent[0] + len(unit), spent[1] + hours]
            continue
        deferred.append(Deferred(key[0], key[2], len(unit), hours, last.get(key)))
        # (when the every-night cases alone break the budget, that is the finding)
        why = _never(unit, hours, room, budget) if min(room) >= 0 else None
        if why:
            never.append(why)
    return kept, deferred, never, room[1]


def _row(partition: Partition, jobs: list[Job], failed: int, measured: dict[CaseKey, float],
         last: dict[CaseKey, float], defer: bool, night: int | None) -> Row:
    deferred: list[Deferred] = []
    never: list[str] = []
    room = None
    if defer and partition.budget is not None:
        jobs, deferred, never, room = schedule(jobs, partition.budget, measured, last, night)
    times = [seconds(job, measured) for job in jobs]
    counted = sum(1 for job in jobs if job.kind == "run" and job.key in measured)
    return Row(partition.fullname, len(jobs), node_hours(jobs, measured),
               sum(times) / partition.max_jobs, counted, failed, partition,
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


# -- output ------------------------------------------------------------------


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


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
              f"<= {_num(budget.node_hours)} node-hours" if budget.node_hours is not None
              else ""]
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
        "wall        sum over the jobs of t / max_jobs; "
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
