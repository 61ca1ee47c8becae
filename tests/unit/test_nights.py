"""The learnt baseline's defaults held to the unchanged nights captured on this machine.

``tests/data/nights/unchanged.json.gz`` (its README says how it was captured)
replayed through the suite's own decisions (``tests/cluster/replay.py``, as
``benchmarks/false_alarms.py`` replays it): with the defaults of ``sentinel
baseline`` and the retry, the unchanged nights name few false failures, none
where a single measurement would have named many, and a 2x regression of a
test case's judged values is named on the night it begins.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest

from sentinel.analysis.baseline import Settings
from tests.cluster import nights
from tests.cluster.replay import Tally, first_night_moved, replay
from tests.conftest import DATA

#: The captured sessions are minutes apart: the burn-in's hours are not asked of them.
DEFAULTS = replace(Settings(), min_span_h=0.0)


NIGHTS = DATA / "nights" / "unchanged.json.gz"


@pytest.fixture(scope="module")
def series() -> list[nights.Series]:
    return nights.captured(NIGHTS)


@pytest.fixture(scope="module")
def tally(series):
    """The captured nights replayed one way, each way once for the module's tests."""
    @functools.cache
    def replayed(retries: int, factors: tuple[float, ...] = (), every: bool = False,
                 check: str | None = None) -> Tally:
        total = Tally()
        for s in series:
            if check is None or s.check == check:
                total.add(replay(s, DEFAULTS, retries, factors, every))
        return total

    return replayed


def test_the_captured_nights_hold_every_family_and_the_retries(series):
    checks = {s.check for s in series}
    assert {"Pt2ptCheck", "MatchingCheck", "RingCheck", "CollectivesCheck", "JacobiCheck",
            "HybridCheck", "ImbCheck", "RmaCheck", "ThreadRateCheck", "CongestionCheck"} <= checks
    paired = [s for s in series if any(r is not None for r in s.retries)]
    assert {s.check for s in paired} == {"Pt2ptCheck", "MatchingCheck", "RingCheck", "RmaCheck",
                                         "ThreadRateCheck", "CongestionCheck"}
    assert max(len(s.nights) for s in series) >= 8


def test_unchanged_nights_fail_rarely_and_the_retry_is_what_keeps_them_so(tally):
    once = tally(retries=0)
    twice = tally(retries=1)
    # the same nights judged both ways, but for the few whose burn-in a
    # failure left out of one baseline and not of the other (2325 + 18 of 2348)
    assert once.nights >= 150
    assert abs(twice.nights + twice.unsaid - once.nights) <= 0.01 * once.nights
    # a single measurement: many false failures; measured again: far fewer
    # (346 and 47 in 2348 and 2325 nights). Not few enough for a big site:
    # the later VMs (groups c to f) have slow spells in which every MPI on
    # the node slows 2-4x with nothing changed, and a retry measured in the
    # same spell fails again (docs/detection.md).
    assert once.failed >= 3 * max(twice.failed, 1), (once.failed, twice.failed)
    assert twice.failed / twice.nights < 0.03, (twice.failed, twice.nights)


def test_a_2x_regression_is_named_the_night_it_begins(tally):
    hits = tally(retries=1, factors=(2.0,), check="Pt2ptCheck").named[2.0]
    assert len(hits) >= 20
    assert sum(first for first, _ in hits) / len(hits) >= 0.9


def test_judging_every_variable_once_as_before_cries_wolf_far_more_often(tally):
    before = tally(retries=0, every=True)
    after = tally(retries=1)
    assert before.failed >= 5 * max(after.failed, 1), (before.failed, after.failed)


def test_a_move_to_another_machine_is_named_the_first_night_where_a_value_moved():
    # groups c and d: the selections of a and b on the next session's VM,
    # read as their later nights; judged against the first VM's bands
    said = first_night_moved(NIGHTS, DEFAULTS)
    assert said is not None and said.judged >= 80 and said.moved >= 20, said
    # fires: every test case with a value 2x worse, and half of those 1.25x
    assert said.moved_2x >= 3 and said.named_2x == said.moved_2x, said
    assert said.named_moved >= said.moved / 2, said
    # silent: nothing of the test cases whose values did not move
    assert said.named_still == 0, said
