"""Every node at once: each node judged against the band and the other nodes; the job script.

The verdicts are decisions on numbers (:mod:`sentinel.analysis.nodes`): each
has a case that makes it fire and one that keeps it silent. The job-script
lines are run for real by ``tests/integration/test_vetting_local.py``; here
their shape for each launcher and scheduler, and what is refused.
"""

from __future__ import annotations

import subprocess

import pytest

from sentinel.analysis.nodes import node_findings, off_median, outside_band
from sentinel.analysis.pt2pt import SPEC
from sentinel.errors import SentinelError
from sentinel.rfm.each_node import PerNode, node_runner, pin_tokens

ENTRY = {"latency_8B": ["1.0", "-0.5", "0.2", "us"]}


def _nodes(**latency: float) -> dict[str, dict[str, tuple[float, str]]]:
    return {node: {"latency_8B": (value, "us")} for node, value in latency.items()}


def test_a_node_above_the_reference_band_is_named_with_the_band():
    found = node_findings(_nodes(n1=1.0, n2=1.3), SPEC, ENTRY, 2.0)
    assert found == ["node n2: latency_8B 1.3 us, above its reference band (1 us +20 %)"]


def test_a_node_within_the_band_or_better_than_it_is_not_named():
    assert node_findings(_nodes(n1=1.0, n2=1.19, n3=0.4), SPEC, ENTRY, 2.0) == []


def test_without_a_reference_a_node_far_off_the_median_of_three_is_named():
    found = node_findings(_nodes(n1=1.0, n2=1.1, n3=2.5), SPEC, {}, 2.0)
    assert found == ["node n3: latency_8B 2.5 us, 2.3x above the median of the nodes (1.1 us)"]


def test_two_nodes_have_no_median_to_be_far_from_and_small_spreads_are_silent():
    assert node_findings(_nodes(n1=1.0, n2=5.0), SPEC, {}, 2.0) == []
    assert node_findings(_nodes(n1=1.0, n2=1.1, n3=1.9), SPEC, {}, 2.0) == []


def test_a_bandwidth_is_worse_below_and_a_neutral_variable_never():
    assert outside_band("bw_1048576B", 50.0, "MB/s", "higher",
                        {"bw_1048576B": ["100", "-0.3", "0.3", "MB/s"]}).startswith(
        "bw_1048576B 50 MB/s, below its reference band")
    assert outside_band("x", 9.0, "1", "neutral", {"x": ["1", "-0.1", "0.1", "1"]}) == ""
    assert off_median("bw", 10.0, "MB/s", "higher", 100.0, 2.0).endswith(
        "10.0x below the median of the nodes (100 MB/s)")


def test_each_launcher_is_held_to_the_node_of_the_body():
    assert pin_tokens("srun", "intelmpi", 2) == ["--nodes=1", "--ntasks=2",
                                                 '--nodelist="$SENTINEL_NODE"']
    assert pin_tokens("mpirun", "openmpi", 4) == ["--host", '"$SENTINEL_NODE":4']
    assert pin_tokens("mpiexec", "mpich", 2) == ["-hosts", '"$SENTINEL_NODE"']
    assert node_runner("mpirun", "openmpi") == 'mpirun -np 1 --host "$SENTINEL_NODE"'
    with pytest.raises(SentinelError, match="launcher 'local' cannot be held to one node"):
        pin_tokens("local", "openmpi", 2)


def test_the_node_loop_runs_every_body_and_records_each_exit(tmp_path):
    # The script's loop, run by bash over a node list of three, one body failing.
    per_node = PerNode()
    lines = per_node.lines("pbs", 30, 2)
    script = "\n".join([f"{per_node.function}() {{", 'test "$SENTINEL_NODE" != b2', "}",
                        f"export -f {per_node.function}", *lines])
    (tmp_path / "nodes.txt").write_text("b1\nb2\nb3\nb1\n")
    subprocess.run(["bash", "-c", script], cwd=tmp_path, check=True, timeout=30,
                   env={"PBS_NODEFILE": str(tmp_path / "nodes.txt"), "PATH": "/usr/bin:/bin"})
    exits = {p.parent.name: p.read_text().strip()
             for p in (tmp_path / "nodes").glob("*/rfm_node.exit")}
    assert exits == {"b1": "0", "b2": "1", "b3": "0"}


def test_a_scheduler_without_a_node_list_is_refused():
    with pytest.raises(SentinelError, match="scheduler 'local' has no node list"):
        PerNode().lines("local", 30, 0)
