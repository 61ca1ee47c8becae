"""The one reader of ReFrame's results database: what it gives, and its errors naming the file.

The database is one of ReFrame's own runs (tests/data/history/README.md).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest
from reframe.core import runtime

from sentinel.errors import SentinelError
from sentinel.results import store
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs
from tests.conftest import DATA

CAPTURED = DATA / "history" / "pt2pt-tcp-limited-from-21.db"


def _copy(tmp_path: Path) -> Path:
    db = tmp_path / "results.db"
    shutil.copy(CAPTURED, db)
    return db


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_stored_session_comes_undecoded_with_its_uuid():
    rows = store.sessions(CAPTURED)
    assert len(rows) == 25 and len({uuid for uuid, _ in rows}) == 25
    assert all(blob.startswith(b"{") for _, blob in rows)


def test_reframe_gives_the_completed_test_cases_and_leaves_the_database_and_runtime(tmp_path):
    db = _copy(tmp_path)
    before = _digest(db), runtime._runtime_context
    cases = store.testcases(db, "local")
    assert (_digest(db), runtime._runtime_context) == before
    # 76 stored: 25 local builds have no job, so no completion time
    assert len(cases) == 51 and all(tc["job_completion_time_unix"] for tc in cases)
    assert {tc["name"].split()[0] for tc in cases} == {"Pt2ptCheck"}
    assert store.testcases(db, "big_site") == []


def test_a_missing_or_unreadable_database_is_named(tmp_path):
    with pytest.raises(SentinelError, match=f"^{tmp_path / 'absent.db'}: no results database"):
        store.sessions(tmp_path / "absent.db")
    with pytest.raises(SentinelError, match=f"^{tmp_path}: cannot be read \\(Is a directory\\)"):
        store.testcases(tmp_path, "local")


def test_a_file_that_is_not_sqlite_is_named(tmp_path):
    broken = tmp_path / "broken.db"
    broken.write_text("not sqlite")
    for read in (store.sessions, lambda db: store.testcases(db, "local")):
        with pytest.raises(SentinelError, match=f"^{broken}: not a ReFrame results database "
                                                r"\(file is not a database\)$"):
            read(broken)


def test_another_schema_is_named_with_both_versions(tmp_path):
    db = _copy(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE metadata SET schema_version = '0.9'")
    for read in (store.sessions, lambda db: store.testcases(db, "local")):
        with pytest.raises(SentinelError, match=f"^{db}: a results database of schema '0.9'; "
                                                f"ReFrame .* reads schema '{store.SCHEMA}'"):
            read(db)
    inputs = Inputs()
    load_history(db, inputs)  # the report names it and goes on
    assert inputs.history == [] and inputs.problems[0].startswith(f"{db}: a results database")


def test_an_sqlite_file_without_reframe_tables_is_named_and_left_as_it_was(tmp_path):
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE sessions(uuid TEXT, json_blob TEXT)")
    before = _digest(db)
    with pytest.raises(SentinelError, match=f"^{db}: not a ReFrame results database "
                                            r"\(no table testcases\)$"):
        store.testcases(db, "local")
    assert _digest(db) == before  # ReFrame never opened it to add its tables


def test_a_damaged_session_is_an_error_naming_the_database(tmp_path):
    db = _copy(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET json_blob = '{\"session_info\": {\"uuid\": 1}, ' "
                     "WHERE rowid = (SELECT MIN(rowid) FROM sessions)")
    with pytest.raises(SentinelError, match=f"^{db}: ReFrame cannot read its stored sessions"):
        store.testcases(db, "local")

