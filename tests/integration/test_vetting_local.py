"""Every node vetted: the vet mode (ReFrame's --distribute) on a real Slurm.

Partition ``vet`` (tests/cluster/slurm.py --vet 2): two slurmd on this host,
each with all its CPUs, so the node-local checks (two ranks on one node,
the whole node's barrier) run on each. Node ``v2`` gets a fault of its
own through Slurm's TaskProlog, as a drifted node image would:
``I_MPI_FABRICS=ofi`` in its tasks' environment, so Intel MPI's ``shm``
transport is not what runs there. The vet mode must fail every check on
v2, none on v1, and ``sentinel report`` must say so. The session is run by
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

from tests.cluster import slurm
from tests.conftest import ROOT
from tests.integration.conftest import (
    FINALIZE_TIMEOUT,
    NO_NETWORK,
    Run,
    need_slurm,
    need_stack,
)

pytestmark = pytest.mark.integration

#: The vet mode, scaled down: Intel MPI's shm (its waits sleep in the kernel
#: on these two nodes that share this host's CPUs), one barrier mode, the
#: quick mode's ping-pong counts (with the vet mode's own, Pt2ptCheck took
#: 72-95 s a node, the whole session's length: what is judged here is where
#: each check ran and what it verified, not its figures).
VET = ["-p", "intelmpi", "-S", "transports=intelmpi/shm",
       "-S", "env_vars=I_MPI_WAIT_MODE:1", "-S", "MatchingCheck.lengths=10",
       "-S", "MatchingCheck.messages=1,8,16", "-S", "MatchingCheck.checkpoint=16",
       "-S", "Pt2ptCheck.max_size=65536", "-S", "Pt2ptCheck.iterations=100",
       "-S", "Pt2ptCheck.windows=20", "-S", "Pt2ptCheck.repetitions=5",
       "-S", "Pt2ptCheck.warmup=10", "-S", "BarrierSplitCheck.target_time=0.05",
       "-x", "BarrierSplitCheck.*%mode=(funnelled|multiple)"]


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
    cases = [tc for tc in run.cases() if "%.nid=" in tc.get("display_name", "")]
    on = {node: sorted((tc["name"].split()[0], tc["result"]) for tc in cases
                       if f"%.nid={node} " in tc["display_name"]) for node in ("v1", "v2")}
    checks = ["BarrierSplitCheck", "MatchingCheck", "Pt2ptCheck"]
    assert on["v1"] == [(c, "pass") for c in checks], run.output[-3000:]
    assert on["v2"] == [(c, "fail") for c in checks], run.output[-3000:]
    assert all("requested fabrics=shm, the run selected fabrics=ofi" in tc["fail_reason"]
               for tc in cases if tc["result"] == "fail")
    summary = subprocess.run(
        [sys.executable, "-m", "sentinel.results.cli", "report",
         str(report), "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    lines = summary.stdout.splitlines()
    assert "nodes vetted: 2, failed: local:slurm-vet v2" in lines, summary.stdout
    assert sum(line.startswith("  local:slurm-vet v2: ") for line in lines) == 3
    assert 'id="nodes"' in Path(out / "sentinel-report.html").read_text()
