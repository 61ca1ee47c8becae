"""benchmarks/fidelity.py's decisions: a ratio's verdict and the standard benchmarks' resolution."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from sentinel.errors import SentinelError
from tests.conftest import DATA, ROOT

_spec = importlib.util.spec_from_file_location("fidelity", ROOT / "benchmarks" / "fidelity.py")
fidelity = importlib.util.module_from_spec(_spec)
sys.modules["fidelity"] = fidelity  # its dataclass looks its module up there
_spec.loader.exec_module(fidelity)
STANDARD = DATA / "standard"


def test_a_ratio_is_within_only_when_its_whole_interval_is():
    close = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00, 1.03]
    assert fidelity.verdict(close)[3] == "within"
    assert fidelity.verdict([1.12, 1.10, 1.11, 1.13, 1.09, 1.12, 1.10, 1.11, 1.12])[3] == "OUTSIDE"
    assert fidelity.verdict([0.90, 0.89, 0.91, 0.90, 0.92, 0.90, 0.88, 0.90, 0.91])[3] == "OUTSIDE"
    # the median 1.00 but rounds from 0.90 to 1.10: more rounds, not a verdict
    assert fidelity.verdict([0.90, 1.10, 0.93, 1.07, 1.00, 0.95, 1.06, 0.99])[3] == "unresolved"


def test_the_print_resolution_widens_the_interval():
    # OSU prints 0.16 us with two decimals: +/-0.005 us is 3 % of the value
    med, lo, hi, word = fidelity.verdict([1.03] * 9, resolution=0.005 / 0.16)
    assert med == pytest.approx(1.03)
    assert hi == pytest.approx(1.03 * (1 + 0.03125)) and word == "unresolved"
    assert fidelity.verdict([1.03] * 9)[3] == "within"


def test_too_few_rounds_give_no_verdict():
    # one round's ratio is not an interval: far off or not, it is unresolved
    assert fidelity.verdict([1.5])[3] == "unresolved"
    assert fidelity.verdict([1.0] * 5)[3] == "unresolved"
    assert fidelity.verdict([1.0] * 6)[3] == "within"


def test_no_rounds_is_an_error():
    with pytest.raises(SentinelError, match="no rounds measured"):
        fidelity.verdict([])


def test_the_resolution_is_read_from_the_value_as_printed():
    osu = (STANDARD / "osu-5.3" / "latency_openmpi_ob1-vader.txt").read_text()
    assert fidelity._decimals(osu, 8, 1) == 2
    pingpong = (STANDARD / "imb-2021" / "pingpong_intelmpi_shm.txt").read_text()
    assert fidelity._decimals(pingpong, 8, 2) == 2  # t[usec], after #repetitions
    with pytest.raises(SentinelError, match="no row for 3 B"):
        fidelity._decimals(osu, 3, 1)


def test_ratios_of_a_round_carry_each_resolution():
    values = {"pt2pt_lat8": 0.18, "osu_lat8": 0.16, "osu_lat8_quantum": 0.005,
              "pt2pt_peak": 10000.0, "osu_peak": 12500.0}
    out = fidelity.ratios(values)
    assert out["osu_lat8"] == pytest.approx((1.125, 0.03125))
    assert out["osu_peak"] == pytest.approx((0.8, 0.0))
    assert "imb_lat8" not in out
