"""Several bad nodes at once: the pairs sweep names each of them, and nothing else.

Six namespaced nodes ``m1`` ... ``m6`` (``tests/cluster/slurm.py up DIR --net
6``), two of whose links (m2's and m5's) are rate-limited at once, as a
failing switch or a bad batch of cables would leave them: a third of the
partition. Each sweep must name both nodes and nothing else, ten sweeps out
of ten. Six nodes share this host's two CPUs, so a pair of healthy nodes
whose step holds a pair of each slow node can measure 2-3x below the
others (m3 <-> m6, 116-160 MB/s against 330-1240): the sweep measures such
a suspect link again alone, finds it within the factor and lists it as
cleared, not named (on a site's nodes, where no pair shares CPUs with
another, what is then cleared is a path the step's pairs share). The
healthy sweeps that keep the verdict silent are those of
``test_netcluster_local.py`` (four nodes, five sweeps).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cluster import netns
from tests.integration.conftest import namespaced_slurm, need_stack, reframe

pytestmark = pytest.mark.integration

NODES = 6
SLOW = (netns.Node(2), netns.Node(5))
#: About 5 % of the TCP bandwidth between two of these nodes on this host.
RATE = "1gbit"
SWEEPS = 10
#: The latency verdict's factor on these nodes, as in test_netcluster_local.py:
#: their 8-byte latency is the kernel waking a rank on a CPU three nodes share.
RIG_LATENCY_FACTOR = "10"


@pytest.fixture(scope="module")
def six(tmp_path_factory):
    """Slurm with six namespaced nodes; its slurm.conf. Stopped by PID at the end."""
    yield from namespaced_slurm(tmp_path_factory, "slurm-six", NODES, "tc",
                                what="Slurm with six namespaced nodes")


def _named(tc: dict) -> set[tuple[str, str]]:
    """What a sweep named: ``(node, m2)``, ``(link, m1 <-> m3)``, ``(doubt, bandwidth)``."""
    reason = tc.get("fail_reason") or ""
    found = set(re.findall(r"(node|link) (\S+(?: <?-> \S+)?):", reason))
    found |= {("doubt", what) for what in re.findall(r"(\w+): more than a third", reason)}
    return found


def test_two_slow_nodes_of_six_are_both_named_and_no_other_node(six, tmp_path):
    need_stack("intelmpi")
    for node in SLOW:
        netns.degrade(node, RATE)
    try:
        out = tmp_path / "two"
        out.mkdir()
        run = reframe([
            "-S", "FabricCheck.transports=intelmpi/ofi-tcp", "-S", "FabricCheck.iterations=10",
            "-S", "FabricCheck.latency_iterations=300",
            "-S", "FabricCheck.repetitions=5", "-S", "env_vars=I_MPI_WAIT_MODE:1",
            "-S", "time_limit=5m", "-p", "intelmpi$",
            "-S", f"FabricCheck.latency_factor={RIG_LATENCY_FACTOR}",
            "-n", "^FabricCheck.*mapping=node.*mode=pairs", "--repeat", str(SWEEPS),
            "--system", "local:slurm-net", "-r"], out, env={"SLURM_CONF": str(six)},
            checks=("fabric.py",))
    finally:
        for node in SLOW:
            netns.restore(node)
    cases = run.cases("FabricCheck", transport="ofi-tcp", mapping="node")
    assert len(cases) == SWEEPS, run.output[-3000:]
    expected = {("node", f"m{n.index}") for n in SLOW}
    for tc in cases:  # a failed test keeps its stage directory, not its output one
        text = (Path(tc["stagedir"]) / "rfm_job.out").read_text()
        assert len(set(re.findall(r"^SENTINEL_AFFINITY rank=\d+ host=(\S+)", text,
                                  re.M))) == NODES
        assert "SENTINEL_FABRIC_CONFIRMS" in text, text[-2000:]
        assert _named(tc) == expected, tc.get("fail_reason")
        cleared = tc.get("cleared")
        if cleared:
            print(f"{tc['display_name']}: cleared alone: {cleared}")
