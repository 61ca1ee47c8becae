"""``sentinel plan`` in the nightly mode: what the nightly budget leaves for a later night.

The partition is big_site's, captured from the real ReFrame
(tests/data/plan/README.md says how).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from sentinel.results import plan
from sentinel.results.plan.dry_run import Job
from sentinel.results.plan.output import deferral_file
from sentinel.results.plan.partitions import Budget, partitions_of
from tests.conftest import DATA

BIG_P00 = json.loads((DATA / "plan" / "partition-big_site-p00.json").read_text())


def _nightly(costs: dict[str, tuple[int, float, bool]], budget: Budget,
             last: dict[str, float] | None = None) -> plan.Row:
    """One partition, a job per test: name -> (nodes, hours, may it wait)."""
    (part,) = partitions_of("big_site", [{**BIG_P00, "extras": {}}], 8)
    part = dataclasses.replace(part, budget=budget)
    jobs = [Job(name, "p00", "openmpi", "run", nodes, hours * 3600, may)
            for name, (nodes, hours, may) in costs.items()]
    when = {(name, "p00", "openmpi"): t for name, t in (last or {}).items()}
    return plan.build([part], jobs, [], {}, Path("/nowhere"), last=when, defer=True).rows[0]


def test_within_its_budget_the_nightly_defers_nothing():
    row = _nightly({"Pt2pt": (1, 1.0, False), "Fabric": (8, 2.0, True)}, Budget(10, 50))
    assert (row.jobs, row.node_hours, row.deferred, row.over_budget) == (2, 17.0, (), [])


def test_over_its_budget_the_least_recently_measured_run_and_the_rest_wait():
    costs = {"Pt2pt": (1, 4.0, False), "A": (4, 5.0, True), "B": (4, 5.0, True),
             "C": (2, 5.0, True), "D": (1, 1.0, True)}
    # 4 + 10 (C) + 20 (B, never measured) + 1 (D) = 35 <= 40; A (20) would make 55
    row = _nightly(costs, Budget(None, 40), last={"A": 2e9, "C": 1e9, "D": 3e9})
    assert {d.test for d in row.deferred} == {"A"}
    assert (row.node_hours, row.over_budget, row.room) == (35.0, [], 36.0)
    (waiting,) = row.deferred
    assert waiting.label == "A +openmpi (last measured 2033-05-18, 20.0 node-hours)"
    (note,) = plan.deferral_notes([row])
    assert "1 test case(s) deferred" in note and "0.6 nights of the 36.0 node-hours" in note
    # the next night A is the least recently measured: it runs, then the
    # cheaper of the others, and B waits
    row = _nightly(costs, Budget(None, 40), last={"A": 2e9, "B": 4e9, "C": 4e9, "D": 4e9})
    assert {d.test for d in row.deferred} == {"B"}


def test_a_case_that_runs_every_night_is_never_deferred_and_can_break_the_budget():
    row = _nightly({"Pt2pt": (10, 6.0, False), "A": (1, 1.0, True)}, Budget(None, 50))
    assert [d.test for d in row.deferred] == ["A"]
    assert row.over_budget == ["60.0 node-hours > 50"]


def test_a_deferrable_case_larger_than_the_room_left_is_named_as_never_running():
    row = _nightly({"Pt2pt": (1, 20.0, False), "Sweep": (64, 0.5, True)}, Budget(100, 50))
    (why,) = row.over_budget
    assert why.startswith("Sweep +openmpi takes 32.0 node-hours; beside the jobs that run "
                          "every night, 50 leaves 30.0: it can never run")


def test_without_the_nightly_nothing_is_deferred():
    (part,) = partitions_of("big_site", [BIG_P00], 8)
    jobs = [Job(f"T{i}", "p00", "openmpi", "run", 4, 600.0, True) for i in range(200)]
    row = plan.build([part], jobs, [], {}, Path("/nowhere")).rows[0]
    assert row.deferred == () and row.over_budget[0] == "200 jobs > 100"


def test_the_deferral_file_is_what_the_checks_read():
    # A never ran, B ran: A goes first whatever the night's order among equals
    row = _nightly({"A": (4, 5.0, True), "B": (4, 5.0, True)}, Budget(None, 30),
                   last={"B": 1e9})
    written = deferral_file(plan.Plan([row], row, [], Path("/nowhere")))
    assert written == {"big_site:p00": [{"test": "B", "environ": "openmpi"}]}


def test_night_after_night_every_deferrable_case_runs_though_the_work_is_over_the_budget():
    # Every night: pt2pt (10 node-hours, every night), 6 whole-partition
    # sweeps of 20 (deferrable), and that night's share of a 7-night
    # rotation, 20 cases of 3: 190 node-hours against 50. The least recently
    # measured first (a new order each night among equals) keeps every night
    # within the budget and runs each sweep and each rotating case within
    # four weeks; the most recently measured first would never run some.
    (part,) = partitions_of("big_site", [{**BIG_P00, "extras": {}}], 8)
    part = dataclasses.replace(part, budget=Budget(None, 50))
    every = [Job("Pt2pt", "p00", "openmpi", "run", 1, 10 * 3600.0)]
    every += [Job(f"Sweep{i}", "p00", "openmpi", "run", 20, 3600.0, True) for i in range(6)]
    last: dict = {}
    for night in range(28):
        turn = [Job(f"R{night % 7}.{k}", "p00", "openmpi", "run", 3, 3600.0, True)
                for k in range(20)]
        row = plan.build([part], every + turn, [], {}, Path("/nowhere"), last=last, defer=True,
                         night=night).rows[0]
        assert row.node_hours <= 50 and row.over_budget == []
        waiting = {d.test for d in row.deferred}
        last.update({j.key: float(night) for j in every + turn
                     if j.deferrable and j.test not in waiting})
    assert {key[0] for key in last} == {f"Sweep{i}" for i in range(6)} | \
        {f"R{n}.{k}" for n in range(7) for k in range(20)}
