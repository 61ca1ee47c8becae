"""ReFrame's results database (``var/results.db``), read: the suite's one reader of it.

ReFrame stores each session's run report in the table ``sessions`` (its
JSON in ``json_blob``) and indexes its test cases in ``testcases`` (name,
system, partition, environment, job completion time, ``uuid`` =
``session:run:index``). Two readers use it:

* :func:`testcases`, ReFrame's own query of the test cases whose job
  completed (``reframe --list-stored-testcases``), for ``sentinel plan``;
* :func:`sessions`, every stored session undecoded, for the report's trends
  and ``sentinel changes``, which decode each apart.

A database that cannot be used is a :class:`SentinelError` naming it: missing,
unreadable, not SQLite, without ReFrame's tables, or of a schema other than
the one this version of ReFrame writes.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import reframe
from reframe.core import runtime
from reframe.core.exceptions import ReframeError
from reframe.frontend.reporting.storage import StorageBackend, _SqliteStorage
from reframe.frontend.reporting.utility import QuerySelectorTestcase

from sentinel.errors import SentinelError

#: The schema of the database this version of ReFrame writes and reads (its
#: backend's private class is the only place ReFrame names it).
SCHEMA = _SqliteStorage.SCHEMA_VERSION

#: A time period that holds every stored test case (ReFrame's query takes one).
_ALL_TIME = (0.0, sys.float_info.max)

#: What ReFrame's decoding of the stored sessions raises on a damaged one
#: (a blob that is not JSON, not UTF-8, NULL, or without its session or test case).
_DAMAGED = (sqlite3.Error, ReframeError, ValueError, LookupError, TypeError, AttributeError)


def _readable(db: Path) -> None:
    """Nothing, or the SentinelError of a database that is missing or cannot be read."""
    if not db.exists():
        raise SentinelError(f"{db}: no results database (run reframe first)")
    try:
        with db.open("rb"):
            pass
    except OSError as err:
        raise SentinelError(f"{db}: cannot be read ({err.strerror})") from None


def _check_schema(conn: sqlite3.Connection, db: Path, tables: tuple[str, ...]) -> None:
    """SentinelError unless ``db`` has ``tables`` and ReFrame's schema (or none recorded).

    ReFrame records its schema in the table ``metadata`` and takes a database
    without one for its own schema; so does this.
    """
    present = {name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in tables if t not in present]
    if missing:
        raise SentinelError(f"{db}: not a ReFrame results database (no table "
                            f"{', '.join(missing)})")
    if "metadata" not in present:
        return
    found = [version for (version,) in conn.execute("SELECT schema_version FROM metadata")]
    if found and found[0] != SCHEMA:
        raise SentinelError(f"{db}: a results database of schema {found[0]!r}; ReFrame "
                            f"{reframe.VERSION} reads schema {SCHEMA!r}")


@contextlib.contextmanager
def _connection(db: Path, tables: tuple[str, ...]) -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``db``, checked by :func:`_check_schema`."""
    _readable(db)
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as err:
        raise SentinelError(f"{db}: not a ReFrame results database ({err})") from None
    try:
        _check_schema(conn, db, tables)
        conn.text_factory = bytes  # decoded by the caller: one bad blob loses no other
        yield conn
    except sqlite3.Error as err:
        raise SentinelError(f"{db}: not a ReFrame results database ({err})") from None
    finally:
        conn.close()


def _text(value: object) -> str:
    """A database value as text to name it by (bytes that are not UTF-8 replaced)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def sessions(db: Path) -> list[tuple[str, bytes | None]]:
    """Every stored session: its uuid and its run report as stored (JSON bytes, or None).

    SQL, not ReFrame's ``fetch_sessions``: that decodes all sessions as one
    JSON document, so that one damaged session would lose every other one,
    unnamed, and it decodes each whole where the report skips most fields.
    """
    with _connection(db, ("sessions",)) as conn:
        rows = conn.execute("SELECT uuid, json_blob FROM sessions").fetchall()
    return [(_text(uuid), blob if isinstance(blob, bytes) else None) for uuid, blob in rows]


def testcases(db: Path, system: str) -> list[dict]:
    """Every stored test case of ``system`` whose job completed, as its run report holds it.

    ReFrame's own query (``fetch_testcases`` over all time), under a runtime
    of ReFrame's builtin configuration whose storage is ``db``, set for the
    query only. A database ReFrame wrote is not changed (ReFrame adds the
    schema record and the indexes to one that lacks them); ReFrame's lock
    file goes beside it, as when it stores a session.
    """
    with _connection(db, ("sessions", "testcases")):
        pass  # checked read-only first: ReFrame would add its tables to any SQLite file
    options = {"storage/sqlite_db_file": str(db.resolve())}
    try:
        # a runtime of its own: ReFrame's backend takes its file from the runtime's configuration
        with runtime.temp_runtime("<builtin>", "generic", options):
            found = StorageBackend.create("sqlite").fetch_testcases(
                QuerySelectorTestcase(time_period=_ALL_TIME))
    except OSError as err:  # its lock file, beside the database
        raise SentinelError(f"{db}: ReFrame cannot open it ({err})") from None
    except _DAMAGED as err:
        raise SentinelError(f"{db}: ReFrame cannot read its stored sessions "
                            f"({type(err).__name__}: {err})") from None
    return [tc for tc in found if isinstance(tc, dict) and tc.get("system") == system]


def append(db: Path, schema: str, table: str, rows: list[tuple], what: str) -> None:
    """Append ``rows`` to a table of the suite's own (``schema`` creates it) in ``db``.

    ReFrame ignores the tables it does not own. ``what`` names the rows in
    the error of a database that cannot take them.
    """
    if not rows:
        return
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(db) as conn:
            conn.execute(schema)
            conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})",
                             rows)
    except sqlite3.Error as err:
        raise SentinelError(f"{db}: {what} could not be recorded ({err})") from None


def rows_of(db: Path, table: str, what: str) -> list[tuple]:
    """Every row of a table of the suite's own, by time ([] when none was ever recorded)."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                                (table,)).fetchone():
                return []
            return conn.execute(f"SELECT * FROM {table} ORDER BY time").fetchall()
    except sqlite3.Error as err:
        raise SentinelError(f"{db}: {what} cannot be read ({err})") from None
