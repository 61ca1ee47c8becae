"""Who accepted which level change, and why: kept beside ReFrame's sessions.

One table, ``sentinel_baseline_accepts``, in the results database: each
acceptance names the test case (its baseline key), the variable, the first
session of the level accepted, who accepted it, why and when. ReFrame
ignores tables it does not own.
"""

from __future__ import annotations

from pathlib import Path

from sentinel.results import store
from sentinel.results.baseline.learn import Acceptance

TABLE = "sentinel_baseline_accepts"
_SCHEMA = (f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT, variable TEXT, session TEXT, "
           "by_ TEXT, why TEXT, time REAL)")


def record(db: Path, accepted: list[Acceptance]) -> None:
    """Append ``accepted`` to the database."""
    store.append(db, _SCHEMA, TABLE,
                 [(a.key, a.variable, a.session, a.by, a.why, a.time) for a in accepted],
                 "the acceptance")


def recorded(db: Path) -> list[Acceptance]:
    """Every recorded acceptance, oldest first ([] when none was ever recorded)."""
    return [Acceptance(*row) for row in store.rows_of(db, TABLE, "the acceptances")]
