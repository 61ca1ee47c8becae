"""Checks through a real Slurm started by the test (tests/cluster/slurm.py).

Two partitions: ``one`` (this host) and ``two`` (two slurmd on this host,
one CPU each), so the ``node`` mapping really spans two Slurm nodes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.cluster import slurm
from tests.integration.conftest import QUICK, REQUIRED, need_stack, reframe

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running Slurm; its slurm.conf path. Stopped by PID at the end."""
    missing = [d for d in ("slurmctld", "slurmd", "munged")
               if not (shutil.which(d) or shutil.which(d, path="/usr/sbin"))]
    if missing:
        msg = (f"{', '.join(missing)} not installed (apt install slurm-wlm munge; "
               "make test installs them as root)")
        if "slurm" in REQUIRED:
            pytest.fail(f"SENTINEL_REQUIRE_STACKS includes slurm, but {msg}")
        pytest.skip(msg)
    root = tmp_path_factory.mktemp("slurm")
    try:
        conf = slurm.up(root)
    except slurm.ClusterError as err:
        slurm.down(root)
        pytest.fail(f"Slurm did not come up: {err}")
    yield conf
    slurm.down(root)


def _run(conf: Path, out: Path, partition: str, name: str):
    return reframe([*QUICK, "--system", f"local:slurm-{partition}", "-n", name, "-r"], out,
                   env={"SLURM_CONF": str(conf)}, checks=("matching.py",))


def test_slurm_partitions_are_detected_from_the_controller(cluster, tmp_path):
    need_stack("openmpi")
    run = reframe(["-n", "MatchingCheck.*ob1-tcp.*mapping=node", "-lC"], tmp_path,
                  env={"SLURM_CONF": str(cluster)}, checks=("matching.py",))
    assert "@local:slurm-two+openmpi" in run.output
    assert "@local:slurm-one+openmpi" in run.output
    # No controller answering: no Slurm partitions (detected, not assumed).
    (tmp_path / "off").mkdir()
    none = reframe(["-n", "MatchingCheck.*ob1-tcp.*mapping=node", "-lC"], tmp_path / "off",
                   env={"SLURM_CONF": str(tmp_path / "absent.conf")}, checks=("matching.py",))
    assert none.returncode == 0 and "slurm-" not in none.output


@pytest.mark.parametrize("family,transport", [("openmpi", "ob1-tcp"), ("mpich", "ucx-tcp")])
def test_node_mapping_spans_two_slurm_nodes(cluster, tmp_path, family, transport):
    need_stack(family)
    run = _run(cluster, tmp_path, "two", f"MatchingCheck.*transport={transport}.*mapping=node")
    tc = run.case("MatchingCheck", environ=family, mapping="node")
    assert tc["result"] == "pass", tc.get("fail_reason")
    out = (Path(tc["outputdir"]) / "rfm_job.out").read_text()
    assert {"host=n1", "host=n2"} <= set(out.split()), out[:400]
    # One CPU per fake node: two ranks cannot share one, so core is skipped.
    (tmp_path / "core").mkdir()
    run = _run(cluster, tmp_path / "core", "two", f"MatchingCheck.*{transport}.*mapping=core")
    core = run.case("MatchingCheck", environ=family, mapping="core")
    assert core["result"] == "skip"


def test_time_limit_kill_is_reported_as_such(cluster, tmp_path):
    need_stack("openmpi")
    run = _run(cluster, tmp_path, "one", "MatchingCheck.*transport=ob1-tcp.*mapping=core")
    ok = run.case("MatchingCheck", environ="openmpi", mapping="core")
    assert ok["result"] == "pass", ok.get("fail_reason")
    (tmp_path / "slow").mkdir()
    slow = reframe([*QUICK, "--system", "local:slurm-one", "-n",
                    "MatchingCheck.*transport=ob1-tcp.*mapping=core",
                    "-S", "MatchingCheck.repetitions=100000", "-S", "time_limit=1m", "-r"],
                   tmp_path / "slow", env={"SLURM_CONF": str(cluster)}, checks=("matching.py",))
    tc = slow.case("MatchingCheck", environ="openmpi", mapping="core")
    assert tc["result"] == "fail"
    assert ("the job ended abnormally (time limit 60 s): the job hit its time limit and "
            "Slurm cancelled it at ") in tc["fail_reason"]


def test_cluster_script_stops_what_it_started(tmp_path):
    if not shutil.which("slurmctld", path="/usr/sbin:" + os.environ.get("PATH", "")):
        pytest.skip("slurmctld not installed (apt install slurm-wlm munge)")
    assert slurm.down(tmp_path) == []  # nothing started there
