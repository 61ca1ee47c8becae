"""The payload-integrity verdict on outputs this project captured (tests/data/integrity)."""

from __future__ import annotations

import re

import pytest

from sentinel.analysis.integrity import require_intact, verified_sizes
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse
from sentinel.rfm.integrity import judge_attempt
from tests.conftest import DATA

INTEGRITY = DATA / "integrity"


def _out(name: str, edit=None):
    text = (INTEGRITY / name).read_text()
    return parse(edit(text) if edit else text, "pt2pt")


def test_every_size_verified_intact_is_silent():
    out = _out("pt2pt-mpich-ucx-sm-verified.out")
    assert [r.integer("bytes") for r in out.of("VERIFY")] == verified_sizes(4096)
    require_intact(out, "mpich/ucx-sm", 5, verified_sizes(4096))
    require_intact(out, "mpich/ucx-sm", 0, verified_sizes(4096))  # none asked: nothing judged


def test_a_corrupted_byte_is_named_by_pair_size_byte_and_transport():
    out = _out("pt2pt-openmpi-ob1-vader-corrupt-1024.out")
    with pytest.raises(SentinelError) as err:
        require_intact(out, "openmpi/ob1-vader", 5, verified_sizes(4096))
    assert str(err.value) == (
        "data corrupted over openmpi/ob1-vader: a 1024-byte message from rank 0 on vm to "
        "rank 1 on vm arrived with byte 512 = 0x83 instead of 0x82 (message 0; 1 of the 5 "
        "verified messages of that size in that direction wrong)")


def test_a_size_the_pass_left_out_or_cut_short_fails():
    drop = _out("pt2pt-mpich-ucx-sm-verified.out",
                lambda t: re.sub(r"^SENTINEL_VERIFY bytes=2048 .*\n", "", t, flags=re.M))
    with pytest.raises(SentinelError, match=r"not reported for size\(s\) 2048 B"):
        require_intact(drop, "mpich/ucx-sm", 5, verified_sizes(4096))
    with pytest.raises(SentinelError, match="fewer than the 20 messages asked at size"):
        require_intact(_out("pt2pt-mpich-ucx-sm-verified.out"), "mpich/ucx-sm", 10,
                       verified_sizes(4096))


def test_a_counted_error_without_its_line_is_still_a_corruption():
    counted = _out("pt2pt-mpich-ucx-sm-verified.out", lambda t: t.replace(
        "SENTINEL_VERIFY bytes=64 messages=10 errors=0",
        "SENTINEL_VERIFY bytes=64 messages=10 errors=1"))
    with pytest.raises(SentinelError, match=r"data corrupted over mpich/ucx-sm at size\(s\) 64 B"):
        require_intact(counted, "mpich/ucx-sm", 5, verified_sizes(4096))


def test_the_fabric_sweep_names_the_directed_pair_that_corrupted_a_message():
    out = _out("fabric-openmpi-vader-4ranks-corrupt-1-2.out")
    pairs = len(out.of("FABRIC_PAIR"))
    with pytest.raises(SentinelError) as err:
        require_intact(out, "openmpi/ob1-vader", 3, [65536], 3 * pairs)
    assert str(err.value).startswith(
        "data corrupted over openmpi/ob1-vader: a 65536-byte message from rank 1 on vm to "
        "rank 2 on vm arrived with byte 32768 = 0xa2 instead of 0xa3 (message 0; 1 of the 3 ")
    # the sweep's count of messages is every directed pair's
    clean = _out("fabric-openmpi-vader-4ranks-corrupt-1-2.out", lambda t: re.sub(
        r"^SENTINEL_CORRUPT .*\n", "", t, flags=re.M).replace("errors=1", "errors=0"))
    require_intact(clean, "openmpi/ob1-vader", 3, [65536], 3 * pairs)
    with pytest.raises(SentinelError, match="fewer than the 27 messages"):
        require_intact(clean, "openmpi/ob1-vader", 3, [65536], 3 * (pairs + 1))


def _attempt(key: tuple[str, str, str], run: int, name: str) -> None:
    """One attempt of a test case judged on a captured output."""
    judge_attempt(key, run, lambda: require_intact(_out(name), "openmpi/ob1-vader", 5,
                                                   verified_sizes(4096)))


def test_a_retry_does_not_clear_a_corruption_its_first_attempt_found():
    key = ("Pt2ptCheck_a", "local:cpu", "openmpi")
    with pytest.raises(SentinelError, match="arrived with byte 512"):
        _attempt(key, 0, "pt2pt-openmpi-ob1-vader-corrupt-1024.out")
    # the retry's payloads arrive intact: it fails with the first attempt's finding
    with pytest.raises(SentinelError) as err:
        _attempt(key, 1, "pt2pt-mpich-ucx-sm-verified.out")
    assert str(err.value).startswith("data corrupted over openmpi/ob1-vader: a 1024-byte ")
    assert "(in the attempt before; this attempt's payloads arrived intact" in str(err.value)
    # and a second retry still does
    with pytest.raises(SentinelError, match="in the attempt before"):
        _attempt(key, 2, "pt2pt-mpich-ucx-sm-verified.out")


def test_a_retry_after_another_failure_and_another_test_case_stay_silent():
    # a first attempt that failed for a slowdown left no corruption: its retry passes
    _attempt(("Pt2ptCheck_b", "local:cpu", "openmpi"), 1, "pt2pt-mpich-ucx-sm-verified.out")
    with pytest.raises(SentinelError):
        _attempt(("Pt2ptCheck_c", "local:cpu", "openmpi"), 0,
                 "pt2pt-openmpi-ob1-vader-corrupt-1024.out")
    # the same check in another environment (its own test case) is not touched
    _attempt(("Pt2ptCheck_c", "local:cpu", "mpich"), 1, "pt2pt-mpich-ucx-sm-verified.out")
