"""Read ReFrame's JSON run reports and its results database for the report.

A file that cannot be used is not fatal: its problem is recorded with the
file's name (and the line, for broken JSON or bytes that are not UTF-8, or
the field of the wrong type) and the report is built from the rest. Results
already in the other files are never lost. A newest session that ran no test
case is recorded as an error of the run (see :func:`newest_ran_nothing`).
"""

from __future__ import annotations

import functools
import gc
import json
import multiprocessing
import os
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from sentinel.analysis.variables import HIGHER, NEUTRAL, PerfVar, declaration
from sentinel.errors import SentinelError
from sentinel.results import provenance
from sentinel.results.verdicts import attempts, earlier

#: A perfvalues entry: value, reference, lower, upper, unit, result.
_ENTRY_LEN = 6

#: What may follow a JSON error at the end of a file cut short: nothing, or
#: the start of one token (a string reaching the end, a number, a literal).
_CUT_TOKEN = re.compile(r'\s*(?:"(?:[^"\\]|\\.)*\\?'   # a string up to the end
                        r'|[-+.0-9eE]*|t(?:ru?)?|f(?:a(?:ls?)?)?|n(?:ul?)?)\s*', re.S)

#: The fields every test case has, as strings.
_REQUIRED = ("name", "system", "partition", "environ", "result")

#: JSON's words for the type of each value that ``json.loads`` returns (bool before number).
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"), ((int, float), "a number"), (str, "a string"),
    (list, "a list"), (dict, "an object"), (type(None), "null"))


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: What a field must be, and the test of it.
_KINDS: dict[str, Callable[[object], bool]] = {
    "a list": lambda v: isinstance(v, list),
    "an object": lambda v: isinstance(v, dict),
    "a string": lambda v: isinstance(v, str),
    "a number or null": lambda v: v is None or _is_number(v),
}


def _expect(value: object, kind: str, what: str) -> None:
    """Raise ValueError "<what> must be <kind>, got <what value is>" unless it is."""
    if not _KINDS[kind](value):
        got = next((name for t, name in _JSON_TYPES if isinstance(value, t)),
                   type(value).__name__)
        raise ValueError(f"{what} must be {kind}, got {got}")


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
        """Whether the check declares it a headline variable (followed night after night)."""
        return self.decl is not None and self.decl.is_headline(self.name)

    @property
    def referenced(self) -> bool:
        """Whether a reference band applies (ReFrame's default has no bounds)."""
        return self.lower is not None or self.upper is not None

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
        params = (p.split("=", 1) for p in self.name.split(" %")[1:] if "=" in p)
        return " ".join(f"{k}={v}" for k, v in params
                        if k not in ("transport", "mapping") and "." not in k)

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


def _variable(check: str, key: str, entry: object, where: str,
              intervals: dict[str, tuple[float, float]], coverage: dict[str, float]) -> Variable:
    if not isinstance(entry, list) or len(entry) != _ENTRY_LEN:
        raise ValueError(f"{where}: performance value {key!r} is not "
                         "[value, reference, lower, upper, unit, result]")
    value, ref, lower, upper, unit, result = entry
    for what, number in zip(("value", "reference", "lower", "upper"), entry):
        if number is not None and not _is_number(number):
            raise ValueError(f"{where}: performance value {key!r} has {what} {number!r}")
    name = key.split(":", 2)[-1]
    return Variable(name, value, float(ref or 0), lower, upper, str(unit or ""),
                    str(result or ""), _declared(check, name), intervals.get(name),
                    coverage.get(name))


def _intervals(raw: object, where: str) -> dict[str, tuple[float, float]]:
    """The test case's ``intervals`` field (absent in older reports: none)."""
    if raw is None:
        return {}
    _expect(raw, "an object", f"{where}: 'intervals'")
    out = {}
    for name, pair in raw.items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(map(_is_number, pair))):
            raise ValueError(f"{where}: 'intervals': {name!r} is not [low, high], got {pair!r}")
        out[name] = (float(pair[0]), float(pair[1]))
    return out


def _coverage(raw: object, where: str) -> dict[str, float]:
    """The test case's ``interval_coverage`` field (absent in older reports: all 95 %)."""
    if raw is None:
        return {}
    _expect(raw, "an object", f"{where}: 'interval_coverage'")
    for name, value in raw.items():
        if not (_is_number(value) and 0 < value < 1):
            raise ValueError(f"{where}: 'interval_coverage': {name!r} is {value!r}, not a "
                             "probability")
    return {name: float(value) for name, value in raw.items()}


def _check_testcase(tc: object, where: str, source: str) -> None:
    """ValueError unless ``tc`` is an object with the fields every test case has."""
    _expect(tc, "an object", where)
    for key in _REQUIRED:
        if key not in tc:
            raise ValueError(f"{source}: a test case lacks {key!r} (a partial run report?)")
        _expect(tc[key], "a string", f"{where}: {key!r}")
    if "display_name" in tc:
        _expect(tc["display_name"], "a string", f"{where}: 'display_name'")


def _session(report: object, source: str) -> dict:
    """The session of a run report whose runs and test cases have the right types.

    ValueError names the first field of the wrong type (``'runs' must be a
    list, got an object``), so that no malformed report reaches the code
    that reads it.
    """
    if not isinstance(report, dict) or "runs" not in report or "session_info" not in report:
        raise ValueError(f"{source}: not a ReFrame run report (no 'session_info' and 'runs')")
    session, runs = report["session_info"], report["runs"]
    _expect(session, "an object", f"{source}: 'session_info'")
    _expect(session.get("time_start_unix"), "a number or null",
            f"{source}: session_info: 'time_start_unix'")
    _expect(runs, "a list", f"{source}: 'runs'")
    for i, run in enumerate(runs):
        _expect(run, "an object", f"{source}: runs[{i}]")
        _expect(run.get("testcases", []), "a list", f"{source}: runs[{i}]: 'testcases'")
        for j, tc in enumerate(run.get("testcases", [])):
            _check_testcase(tc, f"{source}: runs[{i}].testcases[{j}]", source)
    return session


@functools.lru_cache(maxsize=1 << 16)
def _declared(check: str, name: str) -> PerfVar | None:
    """:func:`declaration`, once per name: a site's history holds millions of values."""
    return declaration(check, name)


@functools.lru_cache(maxsize=1 << 16)
def _headline(check: str, key: str) -> bool:
    name = key.split(":", 2)[-1]
    decl = _declared(check, name)
    return decl is not None and decl.is_headline(name)


def _case(tc: dict, session: dict, source: str, headline_only: bool = False) -> Case:
    """One test case (checked by :func:`_session`) with its variables.

    ``headline_only``: only the headline variables (a stored session: the
    trends and change points read no other).
    """
    name = tc.get("display_name", tc["name"])
    check = tc["name"].split()[0]
    where = f"{source}: test case {name}"
    perfvalues = tc.get("perfvalues") or {}
    _expect(perfvalues, "an object", f"{where}: 'perfvalues'")
    completed = tc.get("job_completion_time_unix")
    _expect(completed, "a number or null", f"{where}: 'job_completion_time_unix'")
    variables = {}
    intervals = _intervals(tc.get("intervals"), where)
    coverage = _coverage(tc.get("interval_coverage"), where)
    for key, entry in perfvalues.items():
        if headline_only and not _headline(check, key):
            continue
        var = _variable(check, key, entry, where, intervals, coverage)
        variables[var.name] = var
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
                                  "fabric_pairs", "outliers") if tc.get(k)},
        provenance=recorded)


def cases_of(report: dict, source: str, headline_only: bool = False) -> list[Case]:
    """The last attempt of each test case of a run report; ValueError names what is wrong."""
    session = _session(report, source)
    tried = attempts(report)
    last = [tries[-1] for tries in tried]
    cases = [_case(tc, session, source, headline_only) for tc in last]
    why = _DependencyReasons(last, source)
    for tc, case, tries in zip(last, cases, tried):
        if case.result == "skip" and not case.fail_reason:
            case.fail_reason = why.of(tc)
        case.retried = earlier(tries)
    return cases


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
        _expect(deps, "a list", where)
        if not all(isinstance(d, list) and len(d) == 3 and all(isinstance(x, str) for x in d)
                   for d in deps):
            raise ValueError(f"{where} must be a list of [name, system:partition, environ]")
        return [self.by_name[tuple(d)] for d in deps if tuple(d) in self.by_name]


def _utf8(data: bytes, where: str) -> str:
    """``data`` decoded; ValueError names the first byte that is not UTF-8, and its line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        utf16 = "; a UTF-16 file?" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ValueError(f"{where}: not UTF-8 text: byte 0x{data[err.start]:02x} at line "
                         f"{line} (offset {err.start}{utf16})") from None


def _parse(text: str, where: str) -> Any:
    """The JSON value of ``text``; ValueError says where it is truncated or broken.

    msgspec first (several times faster on a site's reports of tens of MB);
    what it refuses (NaN, a syntax error, deep nesting) is decoded again by
    the standard library, whose errors say where.
    """
    try:
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        pass
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        what = "truncated" if _CUT_TOKEN.fullmatch(text, err.pos) else "not valid JSON"
        raise ValueError(f"{where}: {what} at line {err.lineno}, column {err.colno} "
                         f"({err.msg})") from None
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to be a run report") from None


def _json_file(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror})") from None
    text = _utf8(data, str(path))
    if not text.strip():
        raise ValueError(f"{path}: empty file")
    return _parse(text, str(path))


def newest_ran_nothing(read: list[tuple[Path, dict, int]]) -> list[str]:
    """The error of a newest session that ran no test case, if it did not.

    ``read`` holds each run report that could be used, with its session and
    its number of test cases, in the order given. "The run" is the newest
    of them: the latest ``time_start_unix`` (the later one given on a tie or
    without times), so ``sentinel report reports/run-report-*.json`` judges
    the last session whatever the order of the names, and the default (the
    newest file alone) judges that one. Its session ran no test case when
    ReFrame's selection matched nothing ("Ran 0/0 test case(s)", exit 0):
    nothing was measured, and that must not pass as a clean run. An older
    session that ran nothing is no error: the newer ones replace it.
    """
    if not read:
        return []
    times = [float(session.get("time_start_unix") or 0) for _, session, _ in read]
    path, _, count = read[max(range(len(read)), key=lambda i: (times[i], i))]
    if count:
        return []
    return [f"{path}: the session ran no test case: the selection matched nothing "
            "(nothing was measured)"]


def load_reports(paths: list[Path], inputs: Inputs) -> None:
    """Add the test cases of each run report; later sessions replace earlier ones.

    A report that cannot be used goes to ``inputs.problems``; a newest
    session that ran nothing to ``inputs.errors`` (:func:`newest_ran_nothing`).
    """
    latest: dict[tuple[str, str, str, str], Case] = {}
    read: list[tuple[Path, dict, int]] = []
    for path in paths:
        inputs.files.append(str(path))
        try:
            report = _json_file(path)
            cases = cases_of(report, str(path))
        except ValueError as err:
            inputs.problems.append(str(err))
            continue
        inputs.sessions.append(report["session_info"])
        read.append((path, report["session_info"], len(cases)))
        for case in cases:
            latest[(case.name, case.system, case.partition, case.environ)] = case
            inputs.problems.extend(
                f"{path}: test case {case.name}: {case.check} declares no performance "
                f"variable {name!r} (a run report of another version of the suite?)"
                for name, var in case.variables.items() if var.decl is None)
    inputs.cases.extend(latest.values())
    inputs.errors.extend(newest_ran_nothing(read))


def _label(value: object) -> str:
    """A database value as text to name it by (bytes that are not UTF-8 replaced)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


#: The fields of a stored test case that the report reads (:func:`_case`,
#: :func:`last_attempts`); a stored session's other fields are most of its bytes.
_READ = ("name", "display_name", "unique_name", "system", "partition", "environ", "result",
         "perfvalues", "intervals", "interval_coverage", "job_completion_time_unix",
         "provenance", "transport", "mapping", "fail_reason", "skip_reason", "queue_model",
         "queue_evidence", "mpi_linkage", "unresolved", "fabric_pairs", "outliers",
         "dependencies_actual")

_StoredCase = msgspec.defstruct("_StoredCase", [(k, Any, msgspec.UNSET) for k in _READ])
_StoredRun = msgspec.defstruct("_StoredRun", [("testcases", list[_StoredCase], [])])
_StoredReport = msgspec.defstruct("_StoredReport", [("session_info", Any, msgspec.UNSET),
                                                    ("runs", list[_StoredRun], msgspec.UNSET)])
_SKELETON = msgspec.json.Decoder(_StoredReport)


def _skeleton(blob: bytes) -> dict | None:
    """The run report's session and its test cases' :data:`_READ` fields, or None.

    Skipping the other fields (build output, paths, job options) in C decodes
    a stored session five times faster than decoding all of it. None when the
    blob is not JSON of the run report's shape: the caller then decodes all
    of it, whose errors say what and where.
    """
    try:
        report = _SKELETON.decode(blob)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    if report.session_info is msgspec.UNSET or report.runs is msgspec.UNSET:
        return None
    runs = [{"testcases": [{k: v for k in _READ if (v := getattr(tc, k)) is not msgspec.UNSET}
                           for tc in run.testcases]} for run in report.runs]
    return {"session_info": report.session_info, "runs": runs}


def _stored_session(blob: object, where: str,
                    headline_only: bool) -> tuple[dict, list[Case]]:
    """The session and test cases of one run report stored in the results database."""
    if not isinstance(blob, bytes):
        raise ValueError(f"{where}: no run report stored")
    report = _skeleton(blob)
    if report is None:
        report = _parse(_utf8(blob, where), where)
    cases = cases_of(report, where, headline_only)  # first: it checks the session's type too
    return report["session_info"], cases


def load_history(db: Path, inputs: Inputs, headline_only: bool = True,
                 parallel: bool = True) -> None:
    """Add every session stored in ReFrame's results database (oldest first).

    ``headline_only``: keep only the headline variables of each stored test
    case, all that the trends and the change points read (at a site the
    others are millions of values). ``parallel``: decode in forked workers
    (not at interpreter exit, where no process pool can start).
    """
    if not db.exists():
        return
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        conn.text_factory = bytes  # decoded per session: one bad session loses no other
        try:
            rows = conn.execute("SELECT uuid, json_blob FROM sessions").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as err:
        inputs.problems.append(f"{db}: not a ReFrame results database ({err})")
        return
    _ROWS[:] = [(f"{db}: session {_label(uuid)}", blob, headline_only) for uuid, blob in rows]
    try:
        for session in _without_cycle_collection(_decoded, len(_ROWS), parallel):
            if isinstance(session, str):
                inputs.problems.append(session)
            else:
                inputs.history.append(session)
    finally:
        _ROWS.clear()
    inputs.history.sort(key=lambda s: s[0].get("time_start_unix") or 0)


def _without_cycle_collection(func: Callable[..., Any], *args: object) -> Any:
    """``func(*args)`` with Python's cycle collector off (in forked workers too).

    Decoding a site's history makes millions of objects and no reference
    cycle, and the collector, run every few hundred allocations, scanned
    them again and again: half of the history's time (11.6 s against 5.4 s).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return func(*args)
    finally:
        if enabled:
            gc.enable()


#: The stored sessions being decoded, read by the forked workers of :func:`_decoded`.
_ROWS: list[tuple[str, object, bool]] = []


def _decode_row(i: int) -> tuple[dict, list[Case]] | str:
    where, blob, headline_only = _ROWS[i]
    try:
        return _stored_session(blob, where, headline_only)
    except ValueError as err:
        return str(err)


def _decoded(count: int, parallel: bool) -> list[tuple[dict, list[Case]] | str]:
    """Each stored session decoded, or why it could not be, by one process per CPU.

    A site's session is a run report of tens of MB: decoding 30 of them took
    most of the report's time on one core. The rows stay in this process's
    memory, shared by the forked workers; only the test cases come back.
    """
    return forked_map(_decode_row, list(range(count)), 0 if parallel else 1)


def forked_map(func: Callable[[Any], Any], items: list, workers: int = 0) -> list:
    """``[func(x) for x in items]`` by ``workers`` forked processes (0: one per CPU).

    The workers see this process's memory as it was at the fork (module-level
    inputs need not be pickled); one item at a time, in order. Serial with
    one worker, without ``fork``, and at interpreter exit, where no process
    pool can start (the nightly mode's atexit listing).
    """
    workers = min(workers or os.cpu_count() or 1, len(items))
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        # imported here: importing it registers an exit hook, refused at interpreter exit
        from concurrent.futures import ProcessPoolExecutor

        try:
            with ProcessPoolExecutor(workers,
                                     mp_context=multiprocessing.get_context("fork")) as pool:
                return list(pool.map(func, items))
        except RuntimeError:
            pass
    return [func(x) for x in items]
