"""Payload integrity in real sessions: pt2pt's verification pass (``verify``).

The quick mode verifies 2 messages a size and direction: every transport of
every MPI of this host delivers them intact, each size reported. With one
byte of a 1024-byte message flipped on purpose (``corrupt_at``, after the
sender wrote its pattern: what a faulty link does) each MPI's ping-pong
fails, naming the pair, the size, the byte and the transport.
"""

from __future__ import annotations

import pytest

from sentinel.analysis.integrity import verified_sizes
from sentinel.parsers.sentinel_output import parse
from tests.integration.conftest import SHARED_MEMORY, job_file, need_environ, on_shared_memory

pytestmark = pytest.mark.integration

#: Each environment's shared-memory transport.
TRANSPORTS = SHARED_MEMORY
#: The quick mode's largest size and its verified messages a size and direction.
QUICK_MAX, QUICK_VERIFY = 1048576, 2


def _verified(tc: dict) -> dict[int, tuple[int, int]]:
    """Size -> (messages, errors) of a test case's verification lines."""
    out = parse(job_file(tc, "rfm_job.out"), "pt2pt")
    return {r.integer("bytes"): (r.integer("messages"), r.integer("errors"))
            for r in out.of("VERIFY")}


@pytest.mark.parametrize("environ", sorted(TRANSPORTS))
def test_every_transport_delivers_every_verified_payload_intact(quick_matrix, environ):
    need_environ(environ)
    cases = [tc for tc in quick_matrix.cases("Pt2ptCheck", environ=environ)
             if tc["result"] == "pass"]
    assert TRANSPORTS[environ] in {tc["transport"] for tc in cases}, \
        quick_matrix.output[-3000:]
    for tc in cases:
        assert _verified(tc) == {size: (2 * QUICK_VERIFY, 0)
                                 for size in verified_sizes(QUICK_MAX)}, tc["display_name"]


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory):
    """Each MPI's shared-memory ping-pong with byte 512 of a 1024-byte message flipped."""
    return on_shared_memory("Pt2ptCheck", "pt2pt.py", tmp_path_factory.mktemp("corrupt"), [
        "-S", "Pt2ptCheck.max_size=4096", "-S", "Pt2ptCheck.modes=standard",
        "-S", "Pt2ptCheck.verify=5", "-S", "Pt2ptCheck.corrupt_at=1024"])


@pytest.mark.parametrize("environ", sorted(TRANSPORTS))
def test_a_corrupted_byte_fails_naming_the_pair_the_size_and_the_transport(corrupted,
                                                                            environ):
    need_environ(environ)
    tc = corrupted.case("Pt2ptCheck", environ=environ, transport=TRANSPORTS[environ])
    reason = tc.get("fail_reason") or ""
    assert tc["result"] == "fail", tc["display_name"]
    family = environ.split("-")[0]
    assert f"data corrupted over {family}/{TRANSPORTS[environ]}: a 1024-byte message " \
           "from rank 0 on " in reason, reason
    assert "arrived with byte 512 = " in reason and "(message 0; 1 of the 5 verified" \
        in reason, reason
