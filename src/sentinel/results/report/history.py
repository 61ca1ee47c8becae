"""The sessions stored in ReFrame's results database, decoded for the trends and changes.

Each stored session is decoded apart, in forked workers: one that cannot be
(not UTF-8, not a run report, a field of the wrong type) is a problem naming
it, and the others are kept.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from sentinel.errors import SentinelError
from sentinel.results import store
from sentinel.results.report.files import parse, utf8
from sentinel.results.report.forked import forked_map
from sentinel.results.report.load import Case, Inputs, cases_of

#: The fields of a stored test case that the report reads (:func:`_case`,
#: :func:`last_attempts`); a stored session's other fields are most of its bytes.
_READ = ("name", "display_name", "unique_name", "system", "partition", "environ", "result",
         "perfvalues", "intervals", "interval_coverage", "job_completion_time_unix",
         "provenance", "transport", "mapping", "fail_reason", "skip_reason", "queue_model",
         "queue_evidence", "mpi_linkage", "unresolved", "fabric_pairs", "outliers", "cleared",
         "dependencies_actual", "reference_index_values", "judged_variables", "host_outside")

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


def _stored_session(blob: object, where: str, headline_only: bool,
                    with_judged: bool) -> tuple[dict, list[Case]]:
    """The session and test cases of one run report stored in the results database."""
    if not isinstance(blob, bytes):
        raise ValueError(f"{where}: no run report stored")
    report = _skeleton(blob)
    if report is None:
        report = parse(utf8(blob, where), where)
    # first: it checks the session's type too
    cases = cases_of(report, where, headline_only, with_judged)
    return report["session_info"], cases


def load_history(db: Path, inputs: Inputs, headline_only: bool = True,
                 parallel: bool = True, with_judged: bool = False) -> None:
    """Add every session stored in ReFrame's results database (oldest first).

    ``headline_only``: keep only the headline variables of each stored test
    case, all that the trends and the change points read (at a site the
    others are millions of values); ``with_judged``: and the variables each
    test case judged and its host probe's (what ``sentinel baseline``
    learns from). ``parallel``: decode in forked workers
    (not at interpreter exit, where no process pool can start). No database:
    no history; one that cannot be read is a problem naming it.
    """
    if not db.exists():
        return
    try:
        rows = store.sessions(db)
    except SentinelError as err:
        inputs.problems.append(str(err))
        return
    _ROWS[:] = [(f"{db}: session {uuid}", blob, headline_only, with_judged)
                for uuid, blob in rows]
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
_ROWS: list[tuple[str, object, bool, bool]] = []


def _decode_row(i: int) -> tuple[dict, list[Case]] | str:
    where, blob, headline_only, with_judged = _ROWS[i]
    try:
        return _stored_session(blob, where, headline_only, with_judged)
    except ValueError as err:
        return str(err)


def _decoded(count: int, parallel: bool) -> list[tuple[dict, list[Case]] | str]:
    """Each stored session decoded, or why it could not be, by one process per CPU.

    A site's session is a run report of tens of MB: decoding 30 of them took
    most of the report's time on one core. The rows stay in this process's
    memory, shared by the forked workers; only the test cases come back.
    """
    return forked_map(_decode_row, list(range(count)), 0 if parallel else 1)
