"""Every node vetted: the vet mode (every node at once, each_node) on a real Slurm.

Partition ``vet`` (tests/cluster/slurm.py --vet 2): two slurmd on this host,
each with all its CPUs, so the node-local checks (two ranks on one node,
the whole node's barrier) run on each. Node ``v2`` gets a fault of its
own through Slurm's TaskProlog, as a drifted node image would:
``I_MPI_FABRICS=ofi`` in its tasks' environment, so Intel MPI's ``shm``
transport is not what runs there. The vet mode runs each check in one job
over both nodes, one launch held to each, and must name v2 in every check,
never v1, and ``sentinel report`` must say so. The session is run by
``sentinel vet --measure local --drain``, which names v2 and drains nothing:
one node of two failing every check is more than a third of the partition,
which no bad node tells from a shift of the partition or of its references.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentinel.results.vet import actions
from tests.cluster import slurm
from tests.conftest import ROOT
from tests.integration.conftest import (
    FINALIZE_TIMEOUT,
    NO_NETWORK,
    Run,
    mpi_env,
    need_slurm,
    need_stack,
)

pytestmark = pytest.mark.integration

#: The vet mode on Intel MPI's shm (its waits sleep in the kernel on these
#: two nodes that share this host's CPUs), at the mode's sizes with the
#: quick mode's ping-pong counts: v2's drifted OFI path over TCP on shared
#: CPUs takes longer than the mode's 30 s a launch at its own counts.
VET = ["-p", "intelmpi$", "-S", "transports=intelmpi/shm",
       "-S", "env_vars=I_MPI_WAIT_MODE:1",
       "-S", "Pt2ptCheck.iterations=100", "-S", "Pt2ptCheck.windows=20",
       "-S", "Pt2ptCheck.warmup=10"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Slurm with the vetting partition; its root directory. Stopped by PID at the end."""
    need_slurm()
    root = tmp_path_factory.mktemp("slurm-vet")
    try:
        slurm.up(root, vet=2)
    except slurm.ClusterError as err:
        slurm.down(root)
        pytest.fail(f"Slurm with the vetting partition did not come up: {err}")
    yield root
    slurm.down(root)


def test_the_vet_mode_runs_each_node_local_check_on_each_node_and_names_the_bad_one(
        cluster, tmp_path):
    need_stack("intelmpi")
    (cluster / "etc" / "node-env" / "v2").write_text("I_MPI_FABRICS=ofi\n")
    out = tmp_path / "vet"
    env = {**os.environ, "SLURM_CONF": str(cluster / "etc" / "slurm.conf"),
           "SENTINEL_OUTPUT": str(out), "SENTINEL_FINALIZE_TIMEOUT": FINALIZE_TIMEOUT,
           **NO_NETWORK}
    vet = subprocess.run([sys.executable, "-m", "sentinel.results.cli", "vet", "--system",
                          "local:slurm-vet", "--measure", "local", "--drain",
                          *(x for f in ("matching.py", "pt2pt.py", "hybrid.py")
                            for x in ("--checks", str(ROOT / "checks" / f))), "--", *VET],
                         capture_output=True, text=True, env=env, timeout=600)
    assert vet.returncode == 1 and "Traceback" not in vet.stderr, vet.stdout + vet.stderr
    assert "first measurement: 2 nodes measured, named: v2 " in vet.stdout
    assert ("local:slurm-vet MatchingCheck failed on 1 of the 2 nodes measured (v2): more "
            "than a third") in vet.stdout
    assert "nothing drained: the band itself is in doubt" in vet.stdout
    assert "second measurement" not in vet.stdout
    (report,) = (out / "reports" / "vet").glob("*-first-local.json")
    run = Run(vet.returncode, vet.stdout, json.loads(report.read_text()), out, report)
    # one test case per check, each judging both nodes in one job
    judged = {tc["name"].split()[0]: tc for tc in run.cases() if tc.get("nodes_vetted")}
    assert sorted(judged) == ["BarrierSplitCheck", "MatchingCheck", "Pt2ptCheck"], \
        run.output[-3000:]
    for tc in judged.values():
        assert tc["nodes_vetted"] == "v1 v2" and tc["result"] == "fail", tc
        (line,) = tc["node_verdicts"].splitlines()
        assert line.startswith("node v2: transport intelmpi/shm not verified: "), line
        assert "requested fabrics=shm, the run selected fabrics=ofi" in line, line
    packed = [tc for tc in run.cases() if "%transport=intelmpi-all" in tc["display_name"]]
    assert len(packed) == 3 and all(tc["num_tasks"] == 2 * tc["num_tasks_per_node"]
                                    for tc in packed), packed
    summary = subprocess.run(
        [sys.executable, "-m", "sentinel.results.cli", "report",
         str(report), "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    lines = summary.stdout.splitlines()
    assert "nodes vetted: 2, failed: local:slurm-vet v2" in lines, summary.stdout
    assert sum(line.startswith("  local:slurm-vet v2: ") for line in lines) == 3
    assert 'id="nodes"' in Path(out / "sentinel-report.html").read_text()


#: A reference band for the health check's ping-pong on this host's
#: partition: ``{band}`` is ``[value, lower, upper, unit]`` of latency_8B.
HEALTH_REFERENCES = """Pt2ptCheck:
  $index: [$partition, $environ, transport_name, mapping]
  local:cpu:
    openmpi:
      ob1-vader:
        core:
          latency_8B: {band}
"""


def _health(cluster: Path, tmp_path: Path, node: str, band: str) -> subprocess.CompletedProcess:
    """Slurm's health-check script as slurmd runs it on ``node``, judged against ``band``."""
    refs = tmp_path / "references"
    refs.mkdir()
    (refs / "local.yaml").write_text(HEALTH_REFERENCES.format(band=band))
    settings = tmp_path / "health.env"
    settings.write_text("SENTINEL_HEALTH_SYSTEM=local:cpu\n"
                        "SENTINEL_HEALTH_OPTIONS='-p openmpi$ -S transports=openmpi/ob1-vader'\n"
                        f"SENTINEL_OUTPUT={tmp_path / 'out'}\n")
    env = {**mpi_env(), "SLURM_CONF": str(cluster / "etc" / "slurm.conf"),
           "SLURMD_NODENAME": node, "SENTINEL_HEALTH_ENV": str(settings),
           "SENTINEL_REFERENCES": str(refs), "SENTINEL_FINALIZE_TIMEOUT": FINALIZE_TIMEOUT,
           **NO_NETWORK}
    return subprocess.run([str(ROOT / "scripts" / "slurm-health-check.sh")],
                          capture_output=True, text=True, env=env, timeout=300)


def _node_state(cluster: Path, node: str) -> tuple[str, str]:
    line = subprocess.run(["scontrol", "-o", "show", "node", node], capture_output=True,
                          text=True, check=True,
                          env={**os.environ, "SLURM_CONF": str(cluster / "etc" / "slurm.conf")}
                          ).stdout
    state = line.split(" State=", 1)[1].split()[0]
    return state, line.split(" Reason=", 1)[1].strip() if " Reason=" in line else ""


def test_the_health_check_drains_a_node_that_fails_its_band_twice(cluster, tmp_path):
    # latency_8B at most 0.0015 us: no ping-pong is that fast
    need_stack("openmpi")
    health = _health(cluster, tmp_path, "v2", "[0.001, -0.5, 0.5, us]")
    assert health.returncode == 1 and "Traceback" not in health.stderr, health.stdout
    assert "v2: first measurement, 1 test case(s), 1 failed" in health.stdout
    assert "v2: second measurement, 1 test case(s), 1 failed" in health.stdout
    state, reason = _node_state(cluster, "v2")
    try:
        assert "DRAIN" in state, (state, reason)
        assert reason.startswith("sentinel: Pt2ptCheck %transport=ob1-vader %mapping=core: "), \
            reason
        assert "latency_8B" in reason, reason
        (done,) = actions.recorded(tmp_path / "out" / "var" / "results.db")
        assert (done.node, done.action) == ("v2", "drain") and reason.startswith(done.reason)
    finally:
        subprocess.run(["scontrol", "update", "NodeName=v2", "State=RESUME"], check=True,
                       env={**os.environ, "SLURM_CONF": str(cluster / "etc" / "slurm.conf")})


def test_the_health_check_of_a_node_within_its_band_touches_nothing(cluster, tmp_path):
    need_stack("openmpi")
    health = _health(cluster, tmp_path, "v1", "[1.0, -0.999, 1000.0, us]")
    assert health.returncode == 0, health.stdout + health.stderr
    assert "v1: first measurement, 1 test case(s), 0 failed" in health.stdout
    assert health.stdout.strip().endswith("v1: healthy")
    assert "DRAIN" not in _node_state(cluster, "v1")[0]
