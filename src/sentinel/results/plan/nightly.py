"""Which test cases the nightly runs tonight within its budget, and which wait.

A partition's ``nightly_budget`` bounds the jobs and node-hours of a night;
:func:`schedule` keeps what runs every night and, of the test cases that may
wait (the check's ``may_defer``), the least recently measured first, as
long as the budget allows. The nightly skips the rest
(:mod:`sentinel.rfm.deferral` reads what ``sentinel plan --defer`` writes).
"""

from __future__ import annotations

import math
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass

from sentinel.results.plan.cost import node_hours
from sentinel.results.plan.dry_run import CaseKey, Job
from sentinel.results.plan.partitions import Budget


@dataclass(frozen=True)
class Deferred:
    """A test case the nightly budget leaves for a later night."""

    test: str
    environ: str
    jobs: int
    node_hours: float  # measured where known, else its time limit's bound
    last: float | None  # when it last ran (Unix time); None: never

    @property
    def label(self) -> str:
        """``test +environ (last measured 2026-11-20, 3.2 node-hours)``."""
        when = "never measured" if self.last is None else \
            "last measured " + time.strftime("%Y-%m-%d", time.gmtime(self.last))
        return f"{self.test} +{self.environ} ({when}, {self.node_hours:.1f} node-hours)"



def _units(jobs: list[Job]) -> dict[CaseKey, list[Job]]:
    """The jobs of each test case (its run and build jobs go or wait together)."""
    out: dict[CaseKey, list[Job]] = defaultdict(list)
    for job in jobs:
        out[job.key].append(job)
    return out


def _never(unit: list[Job], hours: float, room: tuple[float, float],
           budget: Budget) -> str | None:
    """Why a deferrable test case can never fit beside what runs every night, if so."""
    test, _, env = unit[0].key
    if len(unit) > room[0]:
        return (f"{test} +{env} takes {len(unit)} job(s); beside the jobs that run every "
                f"night, {budget.jobs} leaves room for {room[0]:.0f}: it can never run")
    if hours > room[1]:
        return (f"{test} +{env} takes {hours:.1f} node-hours; beside the jobs that run every "
                f"night, {budget.hours} leaves {room[1]:.1f}: it can never run")
    return None


def schedule(jobs: list[Job], budget: Budget, measured: dict[CaseKey, float],
             last: dict[CaseKey, float], night: int | None = None
             ) -> tuple[list[Job], list[Deferred], list[str], float]:
    """Tonight's jobs within ``budget``, the test cases deferred, and those that never fit.

    A test case that is not deferrable (the check's ``may_defer``) runs every night. The deferrable
    ones run in the order of their last measurement, the least recently
    measured first (never measured before all), as long as the budget's jobs
    and node-hours allow; the rest wait for a later night, when they are the
    least recently measured. Among cases measured as long ago (the never
    measured), the order is a hash of the case and ``night`` (days since
    1970, as the nightly's rotation counts them), another each night: no
    size of case is passed over night after night. A deferrable case
    that cannot fit even beside the every-night cases alone is named. The
    last value returned is the node-hours left beside the every-night cases.
    """
    night = int(time.time() // 86400) if night is None else night
    units = _units(jobs)
    fixed = [u for u in units.values() if not all(j.deferrable for j in u)]
    kept = [job for unit in fixed for job in unit]
    spent = [len(kept), node_hours(kept, measured)]
    caps = (math.inf if budget.jobs is None else budget.jobs,
            math.inf if budget.node_hours is None else budget.node_hours)
    room = (caps[0] - spent[0], caps[1] - spent[1])
    waiting = [(key, u) for key, u in units.items() if all(j.deferrable for j in u)]
    waiting.sort(key=lambda item: (last.get(item[0], -math.inf),
                                   zlib.crc32(f"{night}:{item[0]}".encode())))
    deferred: list[Deferred] = []
    never: list[str] = []
    for key, unit in waiting:
        hours = node_hours(unit, measured)
        if spent[0] + len(unit) <= caps[0] and spent[1] + hours <= caps[1]:
            kept.extend(unit)
            spent = [spent[0] + len(unit), spent[1] + hours]
            continue
        deferred.append(Deferred(key[0], key[2], len(unit), hours, last.get(key)))
        # (when the every-night cases alone break the budget, that is the finding)
        why = _never(unit, hours, room, budget) if min(room) >= 0 else None
        if why:
            never.append(why)
    return kept, deferred, never, room[1]
