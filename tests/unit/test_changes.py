"""Change points over captured results histories (tests/data/history/README.md).

``pt2pt-tcp-limited-from-21.db``: 25 sessions of Pt2ptCheck over ob1-tcp and
ob1-vader, the TCP path behind a 2 Gbit/s ``tbf`` limit from session 21 on.
``pt2pt-m2-slowed-from-9.db``: 11 sessions over Intel MPI ofi-tcp between two
namespaced nodes, the second node's link slowed from session 9 on.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sentinel.results import changes
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs
from tests.conftest import DATA

LIMITED = DATA / "history" / "pt2pt-tcp-limited-from-21.db"
SLOWED = DATA / "history" / "pt2pt-m2-slowed-from-9.db"
TCP = "Pt2ptCheck %transport=ob1-tcp %mapping=core %build.bench=pt2pt"


def _history(db: Path, sessions: int) -> list:
    inputs = Inputs()
    load_history(db, inputs)
    assert not inputs.problems and len(inputs.history) == sessions
    return inputs.history


def test_twenty_unchanged_sessions_have_no_change_point():
    assert changes.find(_history(LIMITED, 25)[:20]) == []


def test_the_limited_tcp_path_is_named_at_its_first_session_for_its_bandwidth_only():
    history = _history(LIMITED, 25)
    found = changes.find(history)
    first = history[20][0]["uuid"]
    assert {(c.test, c.variable) for c in found} == {
        (TCP, "bw_peak"), (TCP, "bibw_peak"), (TCP, "fit_bw")}
    for c in found:
        assert c.after.session == first and c.before.session == history[19][0]["uuid"]
        assert c.verdict == "regression" and c.shift < -0.9 and c.pvalue <= 0.01
        assert c.unit == "MB/s" and c.provenance == ()  # the same stack on both sides


def test_a_smaller_shift_is_reported_only_below_the_default_floor():
    # The tbf qdisc also adds 0.5 us to the TCP path's 8 B latency (+7.7 %):
    # real, significant, and below the 10 % the suite's bands ignore too.
    found = changes.find(_history(LIMITED, 25), min_shift=0.05)
    latency = {c.variable: c for c in found if c.variable in ("latency_8B", "fit_lambda")}
    assert set(latency) == {"latency_8B", "fit_lambda"}
    assert all(0.05 < c.shift < 0.10 and c.verdict == "regression" for c in latency.values())


def test_three_sessions_after_a_step_are_at_the_edge_of_significance_in_a_short_history():
    # Eleven sessions, three after the step: a random order puts the three
    # low values at one end with probability 2 / C(11, 3) = 0.012, which
    # 1999 permutations estimate to within about 0.003 (9999 gave 0.0121).
    history = _history(SLOWED, 11)
    series = changes.series(history)
    bw = [p.value for key, points in series.items() if key[3] == "bw_peak" for p in points]
    assert changes.change_points(bw, 0.05, 1999) == [(8, pytest.approx(0.012, abs=0.003))]


def test_a_step_right_after_another_keeps_the_p_value_of_its_discovery():
    # Sessions 16-20 of the limited history 15 % slower (as when the host
    # slowed in one CI run), then the rate limit from 21 on: the limit's step
    # is the largest split of the whole history, significant there; the
    # window between its neighbours, 5 + 5 sessions, could not make it so
    # (about 2 orders in C(10, 5) are as extreme, p ~ 0.01).
    history = _history(LIMITED, 25)
    for _, cases in history[15:20]:
        for case in cases:
            if case.transport == "ob1-tcp" and "fit_bw" in case.variables:
                fit = case.variables["fit_bw"]
                case.variables["fit_bw"] = replace(fit, value=fit.value * 0.85)
    fit = [c for c in changes.find(history) if c.test == TCP and c.variable == "fit_bw"]
    assert [(c.after.session, c.verdict) for c in fit] == [
        (history[15][0]["uuid"], "regression"), (history[20][0]["uuid"], "regression")]
    assert all(c.pvalue <= 0.01 for c in fit)


def test_too_few_sessions_on_a_side_are_not_a_segment():
    assert changes.change_points([1.0, 1.0, 1.0, 9.0, 9.0], 0.05, 99) == []


def test_the_lines_printed_name_session_shift_p_and_verdict():
    history = _history(LIMITED, 25)
    lines = changes.render(changes.find(history), history, 0.01)
    assert lines[0] == "25 sessions, 3 change points (E-Divisive means and blocks, p <= 0.01)"
    bw = next(line for line in lines if " bw_peak: " in line)
    assert f"session {history[20][0]['uuid'][:8]}: local:cpu+openmpi {TCP} bw_peak: " in bw
    assert bw.endswith("MB/s (-95.6%, p = 0.005) regression")


def test_a_change_says_what_changed_in_the_provenance():
    history = _history(LIMITED, 25)
    for _, cases in history[20:]:
        for case in cases:
            case.provenance = {"ucx": "1.15.0", "kernel": "6.1.0-27"}
    for _, cases in history[:20]:
        for case in cases:
            case.provenance = {"ucx": "1.13.1", "kernel": "6.1.0-27"}
    found = changes.find(history)
    assert found and all(c.provenance == ("ucx: 1.13.1 -> 1.15.0",) for c in found)


def test_the_newest_session_names_a_step_on_its_third_night_and_not_again():
    history = _history(LIMITED, 25)
    third = history[:23]  # the limit began at session 21: 21, 22 and 23 after it
    found = changes.find(third)
    newest = third[-1][0]["uuid"]
    assert {c.variable for c in changes.named_by(newest, third, found)} == {
        "bw_peak", "bibw_peak", "fit_bw"}
    fourth = history[:24]
    assert changes.named_by(fourth[-1][0]["uuid"], fourth, changes.find(fourth)) == []


def _reordered(history: list, order: list[int]) -> list:
    """The sessions of ``history`` in ``order``, each given the start time of its new place."""
    times = [info["time_start_unix"] for info, _ in history]
    return [({**history[i][0], "time_start_unix": times[k]}, history[i][1])
            for k, i in enumerate(order)]


def test_a_block_that_came_back_is_named_by_its_start_and_its_end():
    # 10 unchanged sessions, 4 of the rate-limited ones, the other 10 unchanged:
    # a regression of four nights that went away again (captured sessions)
    history = _history(LIMITED, 25)
    blocky = _reordered(history, [*range(10), 20, 21, 22, 23, *range(10, 20)])
    assert changes.change_points([1.0] * 10 + [0.05] * 4 + [1.0] * 10) == []  # no step
    found = [c for c in changes.find(blocky) if c.test == TCP and c.variable == "bw_peak"]
    assert [(c.after.session, c.verdict) for c in found] == [
        (history[20][0]["uuid"], "regression"), (history[10][0]["uuid"], "improvement")]
    start, end = found
    assert start.block.startswith("start of a block of 4 sessions, back on ")
    assert end.block.startswith("end of a block of 4 sessions that began on ")
    assert start.shift < -0.9 and start.pvalue <= 0.01
    line = next(x for x in changes.render(found, blocky, 0.01) if "regression" in x)
    assert re.search(r"regression \(start of a block of 4 sessions, back on "
                     r"\d{4}-\d\d-\d\d\)$", line), line


def test_noise_alone_makes_no_block():
    # the 20 unchanged sessions in five other orders: nothing left and came back
    history = _history(LIMITED, 25)[:20]
    for seed in range(5):
        order = list(np.random.default_rng(seed).permutation(20))
        assert changes.find(_reordered(history, order)) == []
