"""Payload integrity in a real session: pt2pt's verification pass (``verify``).

Every MPI's ping-pong with 5 verified messages a size and direction passes
and reports every size; with one byte of a 1024-byte message flipped on
purpose (``corrupt_at``, after the sender wrote its pattern: what a faulty
link does) it fails, naming the pair, the size, the byte and the transport.
"""

from __future__ import annotations

import pytest

from tests.integration.conftest import QUICK, need_stack, reframe

#: Each MPI's shared-memory transport.
TRANSPORTS = {"openmpi": "ob1-vader", "mpich": "ucx-sm"}


def _session(tmp_path, *extra: str):
    for family in TRANSPORTS:
        need_stack(family)
    return reframe([*QUICK, "-p", "^(openmpi|mpich)$", "-n", "^Pt2ptCheck.*mapping=core",
                    "-S", "Pt2ptCheck.transports=" + ",".join(
                        f"{f}/{t}" for f, t in TRANSPORTS.items()),
                    "-S", "Pt2ptCheck.max_size=4096", "-S", "Pt2ptCheck.modes=standard",
                    "-S", "Pt2ptCheck.verify=5", *extra, "-r"],
                   tmp_path, checks=("pt2pt.py",))


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """The clean session and the one with a corrupted message, side by side."""
    return (_session(tmp_path_factory.mktemp("intact")),
            _session(tmp_path_factory.mktemp("corrupt"), "-S", "Pt2ptCheck.corrupt_at=1024"))


def test_every_verified_payload_arrives_intact(sessions):
    run = sessions[0]
    cases = run.cases("Pt2ptCheck")
    assert {tc["environ"] for tc in cases} == set(TRANSPORTS), run.output[-3000:]
    for tc in cases:
        assert tc["result"] == "pass", tc.get("fail_reason")


def test_a_corrupted_byte_fails_naming_the_pair_the_size_and_the_transport(sessions):
    run = sessions[1]
    cases = run.cases("Pt2ptCheck")
    assert {tc["environ"] for tc in cases} == set(TRANSPORTS), run.output[-3000:]
    for tc in cases:
        reason = tc.get("fail_reason") or ""
        assert tc["result"] == "fail", tc["display_name"]
        family = tc["environ"]
        assert f"data corrupted over {family}/{TRANSPORTS[family]}: a 1024-byte message " \
               "from rank 0 on " in reason, reason
        assert "arrived with byte 512 = " in reason and "(message 0; 1 of the 5 verified" \
               in reason, reason
