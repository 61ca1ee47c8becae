"""What the plan needs of the configuration: each partition's ``max_jobs``, nodes and budget.

A partition's ``extras`` may hold ``nightly_budget`` (``{"jobs": N,
"node_hours": H}``): what the nightly may spend on it each night, and
``num_nodes``: its nodes, which bound how many of its jobs run at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import reframe

from sentinel.errors import SentinelError


@dataclass(frozen=True)
class Budget:
    """A partition's ``extras['nightly_budget']``: at most so many jobs and node-hours."""

    jobs: int | None
    node_hours: float | None

    @property
    def hours(self) -> str:
        """The node-hours as the configuration writes them (``40``, not ``40.0``)."""
        value = self.node_hours or 0
        return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Partition:
    """What the plan needs of a partition's configuration."""

    system: str
    name: str
    scheduler: str
    max_jobs: int
    max_jobs_is_default: bool  # not in the configuration: ReFrame's default applies
    budget: Budget | None
    #: Nodes of the partition (``extras['num_nodes']``); None: not said, or
    #: the local scheduler, whose jobs share this host.
    nodes: int | None = None

    @property
    def fullname(self) -> str:
        """``system:partition``."""
        return f"{self.system}:{self.name}"


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


def _nodes(where: str, scheduler: str, extras: dict) -> int | None:
    raw = extras.get("num_nodes")
    if raw is None or scheduler == "local":
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise SentinelError(f"{where}: extras['num_nodes'] is {raw!r}: expected a whole "
                            "number of nodes, 1 or more")
    return raw


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
        extras = entry.get("extras") or {}
        out.append(Partition(name, entry["name"], entry["scheduler"], max_jobs,
                             "max_jobs" not in entry, _budget(where, extras),
                             _nodes(where, entry["scheduler"], extras)))
    if not out:
        raise SentinelError(f"system {name} has no partition {only!r}" if only
                            else f"system {name} has no partitions")
    return out

