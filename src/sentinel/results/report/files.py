"""The JSON run report files the report is built from, read.

A file that cannot be used is not fatal: its problem is recorded with the
file's name (and the line, for broken JSON or bytes that are not UTF-8, or
the field of the wrong type) and the report is built from the rest. A newest
session that ran no test case is recorded as an error of the run (see
:func:`newest_ran_nothing`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec

from sentinel.errors import SentinelError
from sentinel.results.report.load import Case, Inputs, cases_of

#: What may follow a JSON error at the end of a file cut short: nothing, or
#: the start of one token (a string reaching the end, a number, a literal).
_CUT_TOKEN = re.compile(r'\s*(?:"(?:[^"\\]|\\.)*\\?'   # a string up to the end
                        r'|[-+.0-9eE]*|t(?:ru?)?|f(?:a(?:ls?)?)?|n(?:ul?)?)\s*', re.S)


def utf8(data: bytes, where: str) -> str:
    """``data`` decoded; ValueError names the first byte that is not UTF-8, and its line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        utf16 = "; a UTF-16 file?" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ValueError(f"{where}: not UTF-8 text: byte 0x{data[err.start]:02x} at line "
                         f"{line} (offset {err.start}{utf16})") from None


def parse(text: str, where: str) -> Any:
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


def json_file(path: Path) -> Any:
    """The JSON value of the file ``path``; ValueError says why it cannot be had."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror})") from None
    text = utf8(data, str(path))
    if not text.strip():
        raise ValueError(f"{path}: empty file")
    return parse(text, str(path))


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
            report = json_file(path)
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


def newest_report(folder: Path) -> list[Path]:
    """The newest run report of ``folder`` (the last session), as a list of one.

    None there is an error naming the folder: nothing has run yet.
    """
    found = sorted(folder.glob("run-report-*.json"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise SentinelError(f"no run report in {folder}: run reframe first (make run), or "
                            "name the run reports to use")
    return found[-1:]
