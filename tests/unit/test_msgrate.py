"""The thread message rate's series, scaling and verdict variables (sentinel.analysis.msgrate)."""

from __future__ import annotations

import pytest

from sentinel.analysis import msgrate
from sentinel.analysis.fits import median_coverage
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse
from tests.conftest import DATA

#: A rank on each of two of the rig's nodes, one and two threads (tests/data/checks).
ACROSS = (DATA / "checks" / "msgrate-openmpi-ob1-tcp-node" / "rfm_job.out").read_text()


def test_thread_counts_double_to_the_cores_and_end_on_them():
    assert msgrate.thread_counts(1) == [1]
    assert msgrate.thread_counts(16) == [1, 2, 4, 8, 16]
    assert msgrate.thread_counts(12) == [1, 2, 4, 8, 12]  # a socket of 12 cores is measured
    assert msgrate.thread_counts(64, cap=8) == [1, 2, 4, 8]
    assert msgrate.thread_counts(4, cap=16) == [1, 2, 4]
    with pytest.raises(SentinelError, match="no thread count fits 0 core"):
        msgrate.thread_counts(0)


def test_expected_rates_and_the_scaling_beyond_one_thread():
    assert msgrate.expected([1, 2, 4]) == ["rate_T1", "rate_T2", "rate_T4", "scaling_T2",
                                           "scaling_T4"]


def test_scaling_is_the_rate_over_one_thread_with_both_intervals():
    found = msgrate.values(parse(ACROSS, "msgrate"), "out", [1, 2], "openmpi/ob1-tcp")
    assert found["rate_T1"] == (4.602878e04, "messages/s")
    assert found["rate_T2"] == (4.029351e04, "messages/s")
    assert found["scaling_T2"][0] == pytest.approx(4.029351e04 / 4.602878e04)
    lo, hi = found.intervals["scaling_T2"]
    assert lo == pytest.approx(3.204595e04 / 4.766622e04)
    assert hi == pytest.approx(4.098672e04 / 4.462827e04)
    assert found.coverage["scaling_T2"] == pytest.approx(median_coverage(5) ** 2, abs=1e-4)


def test_what_a_night_judges_the_scaling_at_every_count_and_one_thread_s_rate():
    spec = msgrate.SPEC
    assert spec.judged("scaling_T2", None) and spec.judged("scaling_T64", None)
    assert spec.judged("rate_T1", None)
    assert not spec.judged("rate_T8", None)  # followed: the scaling judges it
    assert spec.lookup("rate_T8").is_followed("rate_T8")


def test_a_missing_count_and_a_wrong_message_are_named():
    out = parse(ACROSS, "msgrate")
    with pytest.raises(SentinelError, match=r"out: no message rate at 4 thread\(s\)"):
        msgrate.values(out, "out", [1, 2, 4], "openmpi/ob1-tcp")
    wrong = parse(ACROSS.replace("windows=32 repetitions=5 rate=4.029351e+04 rate_lo="
                                 "3.204595e+04 rate_hi=4.098672e+04 wrong=0",
                                 "windows=32 repetitions=5 rate=4.029351e+04 rate_lo="
                                 "3.204595e+04 rate_hi=4.098672e+04 wrong=1"), "msgrate")
    with pytest.raises(SentinelError, match=r"1 message\(s\) of 8 bytes from rank 0 on m1 to "
                       r"rank 1 on m2 over openmpi/ob1-tcp arrived wrong at 2 thread\(s\)"):
        msgrate.values(wrong, "out", [1, 2], "openmpi/ob1-tcp")
