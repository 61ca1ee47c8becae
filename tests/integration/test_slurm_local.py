"""Checks through a real Slurm started by the test (tests/cluster/slurm.py).

Two partitions: ``one`` (this host) and ``two`` (two slurmd on this host,
one CPU each), so the ``node`` mapping really spans two Slurm nodes.
"""

from __future__ import annotations

import contextlib
import os
import re
import runpy
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from sentinel.rfm.base import MPICH_FINALIZE_NOTE
from sentinel.site import slurm as site_slurm
from tests.cluster import slurm
from tests.conftest import ROOT, load_settings
from tests.integration.conftest import (
    DETECTED,
    QUICK,
    REQUIRED,
    Started,
    need_slurm,
    need_stack,
    reframe,
    start_reframe,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running Slurm; its slurm.conf path. Stopped by PID at the end."""
    need_slurm()
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


@pytest.fixture(scope="module")
def nightly_two(cluster, tmp_path_factory):
    """The nightly selection on partition ``two``, at quick mode's sizes.

    Three samples a ping-pong value, the standard send mode alone: what is
    judged is where each case ran and why each skip, not its figures.
    """
    need_stack("openmpi")
    need_stack("mpich")
    quick = runpy.run_path(str(ROOT / "config" / "common.py"))["QUICK"]
    return reframe(["--mode", "nightly", *quick, "-S", "Pt2ptCheck.max_size=65536",
                    "-S", "Pt2ptCheck.repetitions=3", "-S", "Pt2ptCheck.modes=standard",
                    "-S", "time_limit=1m", "--system", "local:slurm-two", "-r"],
                   tmp_path_factory.mktemp("nightly-two"), env={"SLURM_CONF": str(cluster)})


def need_pmi2() -> None:
    """Skip (fail where CI requires Slurm) without Slurm's PMI-2 library for Intel MPI."""
    if site_slurm.slurm_pmi2_library():
        return
    msg = "Slurm's libpmi2.so is not installed (apt install libpmi2-0; make test installs it)"
    if "slurm" in REQUIRED:
        pytest.fail(f"SENTINEL_REQUIRE_STACKS includes slurm, but {msg}")
    pytest.skip(msg)


def _affinity(tc: dict) -> dict[str, str]:
    """Host and CPUs of each rank, from the benchmark's SENTINEL_AFFINITY lines."""
    out = (Path(tc["outputdir"]) / "rfm_job.out").read_text()
    lines = re.findall(r"SENTINEL_AFFINITY rank=(\d+) host=(\S+) cpus=(\S+)", out)
    return {rank: f"{host}:{cpus}" for rank, host, cpus in lines}


def _mpich_finalize_hang(tc: dict) -> bool:
    """MPICH 4.0's ch4:ucx deadlock in MPI_Finalize, diagnosed as such (docs/slurm.md)."""
    return (tc["environ"] == "mpich" and tc["result"] == "fail"
            and MPICH_FINALIZE_NOTE in (tc.get("fail_reason") or ""))


def _xfail_if_mpich_hung(cases: list[dict]) -> None:
    hung = [tc["display_name"] for tc in cases if _mpich_finalize_hang(tc)]
    if hung:
        pytest.xfail(f"MPICH 4.0 hung in MPI_Finalize at both attempts of {hung} "
                     "(pmodels/mpich#6596); the diagnosis named it")


def test_nightly_selection_passes_through_slurm(nightly_two):
    run = nightly_two
    cases = run.cases()
    assert {(tc["system"], tc["partition"]) for tc in cases} == {("local", "slurm-two")}
    failed = [tc for tc in cases if tc["result"] not in ("pass", "skip")]
    assert all(_mpich_finalize_hang(tc) for tc in failed), run.output[-3000:]
    assert run.returncode == 0 or failed
    ran = {tc["name"].split()[0] for tc in cases if tc["result"] == "pass"}
    assert {"BenchBuild", "MatchingCheck", "Pt2ptCheck"} <= ran
    # ReFrame prints why each test case was skipped; none is silent.
    console = re.sub(r"\x1b\[[0-9;]*m", "", run.output)
    skips = [line for line in console.splitlines() if line.startswith("[     SKIP ]")]
    assert len(skips) == sum(tc["result"] == "skip" for tc in cases)
    assert all(re.search(r"@local:slurm-two\+\S+ \[.+\]$", line) for line in skips), skips
    _xfail_if_mpich_hung(failed)


@pytest.mark.parametrize("check", ["MatchingCheck", "Pt2ptCheck"])
@pytest.mark.parametrize("family,transport", [("openmpi", "ob1-tcp"), ("mpich", "ucx-tcp"),
                                              ("intelmpi", "ofi-tcp")])
def test_node_mapping_spans_two_slurm_nodes(nightly_two, check, family, transport):
    if family == "intelmpi":
        need_stack("intelmpi")
        need_pmi2()
    tc = nightly_two.case(check, environ=family, transport=transport, mapping="node")
    _xfail_if_mpich_hung([tc])
    assert tc["result"] == "pass", tc.get("fail_reason")
    # One rank per node, each on the CPU its node gives jobs: not one shared core.
    assert _affinity(tc) == {"0": "n1:0", "1": "n2:1"}
    # One CPU per node: two ranks cannot share a node, so core is skipped.
    core = nightly_two.case(check, environ=family, transport=transport, mapping="core")
    assert core["result"] == "skip"


def test_a_down_node_is_named(cluster, tmp_path):
    need_stack("openmpi")
    env = {**os.environ, "SLURM_CONF": str(cluster)}
    scontrol = shutil.which("scontrol")
    subprocess.run([scontrol, "update", "nodename=n2", "state=down", "reason=sentinel-test"],
                   check=True, env=env, timeout=30)
    try:
        run = _run(cluster, tmp_path, "two", "MatchingCheck.*transport=ob1-tcp.*mapping=node")
    finally:  # ReturnToService=1: a node an admin set down stays down until resumed
        subprocess.run([scontrol, "update", "nodename=n2", "state=resume"], env=env,
                       capture_output=True, timeout=30)
        # partition two's nodes: c1 may still hold the time-limit session's job
        slurm.wait("node n2 back (sinfo: idle)", lambda: slurm.nodes_idle(env, ("n1", "n2")))
    tc = run.case("MatchingCheck", environ="openmpi", mapping="node")
    assert tc["result"] == "fail"
    assert "blocked due to reason: ReqNodeNotAvail, UnavailableNodes:n2" in tc["fail_reason"]


def _freeze_while(started: Started, marker: str) -> None:
    """Stop (SIGSTOP) every process whose command line holds ``marker``, until ``started`` ends.

    Slurm sends a job's processes SIGCONT before it kills them at the time
    limit, so a stopped job is still ended by that limit, as the test asserts.
    """
    while started.proc.poll() is None:
        pids = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
        for pid in pids.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGSTOP)
        try:
            started.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass


@pytest.fixture(scope="module", autouse=True)
def past_its_time_limit(tmp_path_factory, request):
    """A session whose job runs past its 20 s time limit, started with the module.

    Slurm counts time limits in whole minutes and checks them every 30 s: the
    kill comes 60-90 s after the start, so the module's other tests run
    meanwhile (on partition ``two``; this job has ``one``), the job's ranks
    stopped once they run, as what they measure is not judged: busy, even
    reniced to 19, they slowed the nightly beside them by half (52 -> 85 s).
    """
    wanted = any(item.name == test_time_limit_kill_is_reported_as_such.__name__
                 for item in request.session.items)
    if not wanted or "openmpi" not in DETECTED:
        yield None  # not selected, or the test says why it cannot run
        return
    cluster = request.getfixturevalue("cluster")
    out = tmp_path_factory.mktemp("time-limit")
    started = start_reframe([*QUICK, "--system", "local:slurm-one", "-n",
                             "MatchingCheck.*transport=ob1-tcp.*mapping=core",
                             "-S", "MatchingCheck.batches=fixed",
                             "-S", "MatchingCheck.repetitions=100000",
                             "-S", "time_limit=20s", "-r"],
                            out, env={"SLURM_CONF": str(cluster)}, checks=("matching.py",))
    # the ranks: the benchmark in this session's stage directory (not srun, nor reframe)
    ranks = f"^{out}/.*/matching/matching"
    freezer = threading.Thread(target=_freeze_while, args=(started, ranks), daemon=True)
    freezer.start()
    yield started
    started.wait()
    freezer.join()


def test_time_limit_kill_is_reported_as_such(cluster, tmp_path, past_its_time_limit):
    need_stack("openmpi")
    run = _run(cluster, tmp_path, "one", "MatchingCheck.*transport=ob1-tcp.*mapping=core")
    ok = run.case("MatchingCheck", environ="openmpi", mapping="core")
    assert ok["result"] == "pass", ok.get("fail_reason")
    slow = past_its_time_limit.wait()
    tc = slow.case("MatchingCheck", environ="openmpi", mapping="core")
    assert tc["result"] == "fail"
    assert ("the job ended abnormally (time limit 20 s): the job hit its time limit and "
            "Slurm cancelled it at ") in tc["fail_reason"]


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_a_rank_that_dies_ends_its_launch_at_once(cluster, tmp_path, monkeypatch, family):
    need_stack(family)
    monkeypatch.setenv("SLURM_CONF", str(cluster))
    env = next(e for e in load_settings()["environments"]
               if e["name"] == family and e["target_systems"] == ["local:slurm-two"])
    exe = tmp_path / "rank_dies"
    subprocess.run([env["cc"], "-o", str(exe), str(ROOT / "tests/cluster/rank_dies.c")],
                   check=True, timeout=120)
    # the site configuration's srun options, with nothing else
    cmd = ["srun", "-p", "two", "-N", "2", "-n", "2", *env["extras"]["launcher_options"],
           str(exe)]
    try:  # without --kill-on-bad-exit rank 1 waits until the job's time limit (1 h)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "SLURM_CONF": str(cluster)})
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(cmd)} still ran 60 s after its rank 0 died")
    assert proc.returncode != 0
    assert "task 0: Segmentation fault" in proc.stderr, proc.stderr[-2000:]


def test_cluster_script_stops_what_it_started(tmp_path):
    if not shutil.which("slurmctld", path="/usr/sbin:" + os.environ.get("PATH", "")):
        pytest.skip("slurmctld not installed (apt install slurm-wlm munge)")
    assert slurm.down(tmp_path) == []  # nothing started there
