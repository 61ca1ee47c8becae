"""The ring's values from a captured series: lap times per N and the line over N >= 2."""

from __future__ import annotations

import pytest

from sentinel.analysis import ring
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse, split_launches
from tests.conftest import DATA

SERIES = DATA / "ring" / "openmpi-ob1-vader-series-1-4.out"


def _runs(ns: list[int]):
    return split_launches(parse(SERIES.read_text(), "ring"), "out", ns)


def test_lap_times_and_the_line_over_the_series():
    values = ring.values(_runs([1, 2, 3, 4]), "out")
    assert values["lap_N2"] == (pytest.approx(0.661), "us")  # median of 0.6658 0.6576 0.6610
    assert values["lap_N4"] == (pytest.approx(10.9721), "us")
    # t = a + b N through (2, 0.661), (3, 8.1738), (4, 10.9721): b = 5.16 us per hop and
    # a = -8.9 us, but on this 2-CPU host N = 3 and 4 share CPUs, and three points
    # leave one degree of freedom: the 95 % intervals of both reach below zero, so
    # neither is a value (a negative fixed part is no time); each is given by its bound
    assert 0 < values["lap_fit_r2"][0] <= 1
    assert set(values.unresolved) == {"hop", "lap_offset"}
    assert values.unresolved["hop"].startswith("< 22 us: its interval -12.1 .. 22.4 us "
                                               "includes 0")
    assert values.unresolved["lap_offset"].startswith("< 45 us: its interval -62.6 .. "
                                                      "44.9 us includes 0")


def test_a_series_without_two_ring_sizes_leaves_the_line_unresolved():
    values = ring.values(_runs([1, 2]), "out")
    assert set(values) == {"lap_N1", "lap_N2"}
    assert values.unresolved["hop"] == (
        "the line t = a + b N needs launches of at least two ring sizes of 2 ranks or more; "
        "this series has [2]")


def test_a_launch_without_results_is_named():
    cut = "\n".join(line for line in SERIES.read_text().splitlines()
                    if not line.startswith("SENTINEL_RING ranks=3"))
    runs = split_launches(parse(cut, "ring"), "out", [1, 2, 3, 4])
    with pytest.raises(SentinelError, match="out: the 3-rank launch reported no "
                                            "SENTINEL_RING line"):
        ring.values(runs, "out")
