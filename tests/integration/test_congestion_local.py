"""The congestion check in a real session on this host: one node, so nothing to congest.

CongestionCheck needs two victim and two congestor nodes of their own (one
rank a node); this host is one node of two cores. The quick mode selects it
over every transport and mapping of every MPI here, and every case is
skipped saying why, before it launches anything. It runs over the test
cluster's four nodes (tests/integration/test_rig_local.py).
"""

from __future__ import annotations

import re

import pytest

from tests.integration.conftest import need_environ

pytestmark = pytest.mark.integration

#: Why a case of this host is skipped: mapping ``core`` (ranks sharing nodes),
#: mappings that need more nodes or sockets than this host's one, a
#: shared-memory transport (which carries nothing between nodes) and a
#: production pair (which differs from it only across nodes).
SKIPPED = re.compile(r"victims and congestors on nodes of their own: mapping node only, not core"
                     r"|mapping (node needs 2 nodes|socket needs 2 sockets); partition local:cpu "
                     r"has 1|carries no traffic between nodes|differs from \S+ only across nodes")


@pytest.mark.parametrize("environ", ["openmpi", "mpich", "intelmpi", "openmpi-5_0",
                                     "mpich-5_0"])
def test_every_case_on_one_node_is_skipped_saying_why(quick_matrix, environ):
    need_environ(environ)
    cases = quick_matrix.cases("CongestionCheck", environ=environ)
    assert cases, quick_matrix.output[-3000:]
    for tc in cases:
        assert tc["result"] == "skip", (tc["display_name"], tc.get("fail_reason"))
        why = tc.get("skip_reason") or ""
        assert SKIPPED.search(why), (tc["display_name"], why)
