"""The record of what ``sentinel vet`` did to nodes, kept beside ReFrame's sessions.

One table, ``sentinel_node_actions``, in the results database: each drain,
re-drain and resume with its node, reason and the sessions that were its
evidence. ReFrame ignores tables it does not own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from sentinel.results import store

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
    store.append(db, _SCHEMA, TABLE,
                 [(a.time, a.where, a.node, a.action, a.reason, a.sessions) for a in actions],
                 "the node actions (" + "; ".join(f"{a.action} {a.node}" for a in actions)
                 + ")")


def recorded(db: Path) -> list[Action]:
    """Every recorded action, oldest first ([] when none was ever recorded)."""
    return [Action(*row) for row in store.rows_of(db, TABLE, "the node actions")]


def now() -> float:
    """The time an action is recorded at."""
    return time.time()
