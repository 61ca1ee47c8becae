"""Read ReFrame's JSON run reports and its results database for the report.

A file that cannot be used is not fatal: its problem is recorded with the
file's name (and the line, for broken JSON) and the report is built from
the rest. Results already in the other files are never lost.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from sentinel.analysis.variables import HIGHER, NEUTRAL, PerfVar, declaration
from sentinel.results.verdicts import last_attempts

#: A perfvalues entry: value, reference, lower, upper, unit, result.
_ENTRY_LEN = 6

#: What may follow a JSON error at the end of a file cut short: nothing, or
#: the start of one token (a string reaching the end, a number, a literal).
_CUT_TOKEN = re.compile(r'\s*(?:"(?:[^"\\]|\\.)*\\?'   # a string up to the end
                        r'|[-+.0-9eE]*|t(?:ru?)?|f(?:a(?:ls?)?)?|n(?:ul?)?)\s*', re.S)


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

    @property
    def where(self) -> str:
        """``system:partition+environ``."""
        return f"{self.system}:{self.partition}+{self.environ}"

    @property
    def variant(self) -> str:
        """The other parameters of the display name (``mode=pure threads=1``)."""
        params = (p.split("=", 1) for p in self.name.split(" %")[1:] if "=" in p)
        return " ".join(f"{k}={v}" for k, v in params
                        if k not in ("transport", "mapping") and not k.startswith("build."))

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


def _variable(check: str, key: str, entry: object, where: str) -> Variable:
    if not isinstance(entry, list) or len(entry) != _ENTRY_LEN:
        raise ValueError(f"{where}: performance value {key!r} is not "
                         "[value, reference, lower, upper, unit, result]")
    value, ref, lower, upper, unit, result = entry
    if value is not None and not isinstance(value, (int, float)):
        raise ValueError(f"{where}: performance value {key!r} has value {value!r}")
    name = key.split(":", 2)[-1]
    return Variable(name, value, float(ref or 0), lower, upper, str(unit or ""),
                    str(result or ""), declaration(check, name))


def cases_of(report: dict, source: str) -> list[Case]:
    """The last attempt of each test case of a run report; ValueError names what is wrong."""
    if not isinstance(report, dict) or "runs" not in report or "session_info" not in report:
        raise ValueError(f"{source}: not a ReFrame run report (no 'session_info' and 'runs')")
    session = report["session_info"]
    out = []
    for tc in last_attempts(report):
        try:
            name = tc["name"]
            check = name.split()[0]
            where = f"{source}: test case {tc.get('display_name', name)}"
            variables = {}
            for key, entry in (tc.get("perfvalues") or {}).items():
                var = _variable(check, key, entry, where)
                variables[var.name] = var
            out.append(Case(
                check=check, name=tc.get("display_name", name),
                system=tc["system"], partition=tc["partition"], environ=tc["environ"],
                transport=str(tc.get("transport") or ""), mapping=str(tc.get("mapping") or ""),
                result=tc["result"], fail_reason=tc.get("fail_reason") or "",
                session=session.get("uuid", ""),
                time=float(tc.get("job_completion_time_unix")
                           or session.get("time_start_unix") or 0),
                variables=variables,
                extra={k: tc[k] for k in ("queue_model", "mpi_linkage") if tc.get(k)}))
        except KeyError as err:
            raise ValueError(f"{source}: a test case lacks {err} (a partial run report?)") from None
    return out


def _json_file(path: Path) -> dict:
    try:
        text = path.read_text()
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror})") from None
    if not text.strip():
        raise ValueError(f"{path}: empty file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        what = "truncated" if _CUT_TOKEN.fullmatch(text, err.pos) else "not valid JSON"
        raise ValueError(f"{path}: {what} at line {err.lineno}, column {err.colno} "
                         f"({err.msg})") from None


def load_reports(paths: list[Path], inputs: Inputs) -> None:
    """Add the test cases of each run report; later sessions replace earlier ones."""
    latest: dict[tuple[str, str, str, str], Case] = {}
    for path in paths:
        inputs.files.append(str(path))
        try:
            report = _json_file(path)
            cases = cases_of(report, str(path))
        except ValueError as err:
            inputs.problems.append(str(err))
            continue
        inputs.sessions.append(report["session_info"])
        for case in cases:
            latest[(case.name, case.system, case.partition, case.environ)] = case
            inputs.problems.extend(
                f"{path}: test case {case.name}: {case.check} declares no performance "
                f"variable {name!r} (a run report of another version of the suite?)"
                for name, var in case.variables.items() if var.decl is None)
    inputs.cases.extend(latest.values())


def load_history(db: Path, inputs: Inputs) -> None:
    """Add every session stored in ReFrame's results database (oldest first)."""
    if not db.exists():
        return
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT uuid, json_blob FROM sessions").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as err:
        inputs.problems.append(f"{db}: not a ReFrame results database ({err})")
        return
    for uuid, blob in rows:
        try:
            report = json.loads(blob)
            inputs.history.append((report["session_info"], cases_of(report, f"{db} {uuid}")))
        except (ValueError, KeyError, TypeError) as err:
            inputs.problems.append(f"{db}: session {uuid}: {err}")
    inputs.history.sort(key=lambda s: s[0].get("time_start_unix") or 0)
