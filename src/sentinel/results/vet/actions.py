"""The record of what ``sentinel vet`` did to nodes, kept beside ReFrame's sessions.

One table, ``sentinel_node_actions``, in the results database: each drain,
re-drain and resume with its node, reason and the sessions that were its
evidence. ReFrame ignores tables it does not own.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from sentinel.errors import SentinelError

TABLE = "sentinel_node_actions"
_SCHEMA = (f"CREATE TABLE IF NOT EXISTS {TABLE} (time REAL, where_ TEXT, node TEXT, "
           "action TEXT, reason TEXT, sessions TEXT)")


@dataclass(frozen=True)
class Action:
    """One action on one node."""

    time: float
    where: str
    node: str
    action: str  # drain, redrain, resume, kept
    reason: str
    sessions: str  # space-separated session UUIDs


def record(db: Path, actions: list[Action]) -> None:
    """Append ``actions`` to the database (created if it does not exist yet)."""
    if not actions:
        return
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(db) as conn:
            conn.execute(_SCHEMA)
            conn.executemany(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?)",
                             [(a.time, a.where, a.node, a.action, a.reason, a.sessions)
                              for a in actions])
    except sqlite3.Error as err:
        raise SentinelError(f"{db}: the node actions could not be recorded ({err}): "
                            + "; ".join(f"{a.action} {a.node}" for a in actions)) from None


def recorded(db: Path) -> list[Action]:
    """Every recorded action, oldest first ([] when none was ever recorded)."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                                (TABLE,)).fetchone():
                return []
            rows = conn.execute(f"SELECT * FROM {TABLE} ORDER BY time").fetchall()
    except sqlite3.Error as err:
        raise SentinelError(f"{db}: the node actions cannot be read ({err})") from None
    return [Action(*row) for row in rows]


def now() -> float:
    """The time an action is recorded at."""
    return time.time()
