"""Slurm's health check run by slurmd itself: it drains a degraded node, and only for the node.

Two namespaced nodes ``m1`` and ``m2`` (tests/cluster/slurm.py ``--net 2``);
slurmd runs ``scripts/slurm-health-check.sh`` as its ``HealthCheckProgram``
(as root, with nothing but ``SLURMD_NODENAME`` in its environment), through
a one-line program that names this test's settings file, as a site's
``/etc/mpi-sentinel/health.env``. ``m2``'s transport is degraded for real:
its loopback, which carries Open MPI's TCP between two ranks of the node,
limited to 5 Mbit/s (``tc tbf``). The band is one every healthy node meets:
ob1-tcp's 8 B latency at most 90 us (13-36 us measured on healthy nodes of
this host; 155 us through the limit).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.cluster import netns
from tests.conftest import ROOT
from tests.integration.conftest import (
    FINALIZE_TIMEOUT,
    NO_NETWORK,
    mpi_env,
    namespaced_slurm,
    need_stack,
)

pytestmark = pytest.mark.integration

#: The health check's reference: ob1-tcp's 8 B latency, [30 us, -100 %, +200 %].
REFERENCES = """Pt2ptCheck:
  $index: [$partition, $environ, transport_name, mapping]
  local:cpu:
    openmpi:
      ob1-tcp:
        core:
          latency_8B: [30.0, -1.0, 2.0, us]
"""
#: What a site writes in /etc/mpi-sentinel/health.env, for this test's paths:
#: each node its own output and log (the nodes share this host's disk), and
#: one lock for both, waited for: the two nodes share this host's two CPUs,
#: and two ping-pongs at once (four busy-polling ranks) both run past their
#: 20 s limit.
SETTINGS = """\
SENTINEL_HEALTH_SYSTEM=local:cpu
SENTINEL_HEALTH_OPTIONS="-p openmpi$ -S transports=openmpi/ob1-tcp \
-S Pt2ptCheck.iterations=100 -S Pt2ptCheck.windows=3"
SENTINEL_HEALTH_DRAIN="--max-drain 1"
SENTINEL_OUTPUT={root}/out/$SLURMD_NODENAME
SENTINEL_HEALTH_LOG={root}/health-$SLURMD_NODENAME.log
SENTINEL_HEALTH_LOCK={root}/rig.lock
SENTINEL_HEALTH_LOCK_WAIT=30
SENTINEL_REFERENCES={root}/references
SENTINEL_FINALIZE_TIMEOUT={finalize}
SLURM_CONF={conf}
http_proxy={proxy}
https_proxy={proxy}
{more}
"""
AS_ROOT = "OMPI_ALLOW_RUN_AS_ROOT=1\nOMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"
NODES = netns.nodes(2)


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    """Slurm with the two namespaced nodes; its slurm.conf. Stopped by PID at the end."""
    need_stack("openmpi")
    yield from namespaced_slurm(tmp_path_factory, "health", len(NODES), "tc")


def _settings(root: Path, conf: Path, references: str, more: str) -> Path:
    """The settings file, the references and the program slurmd runs; that program."""
    (root / "references").mkdir(parents=True)
    (root / "references" / "local.yaml").write_text(references)
    settings = root / "health.env"
    settings.write_text(SETTINGS.format(root=root, conf=conf, more=more,
                                        finalize=FINALIZE_TIMEOUT,
                                        proxy=NO_NETWORK["http_proxy"]))
    program = root / "health-check"
    program.write_text(f"#!/bin/sh\nSENTINEL_HEALTH_ENV={settings} "
                       f"exec {ROOT / 'scripts' / 'slurm-health-check.sh'}\n")
    program.chmod(0o755)
    return program


def _scontrol(conf: Path, *args: str) -> str:
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, check=True,
                          timeout=60, env={**os.environ, "SLURM_CONF": str(conf)}).stdout


def _state(conf: Path, node: str) -> tuple[str, str]:
    line = _scontrol(conf, "-o", "show", "node", node)
    state = line.split(" State=", 1)[1].split()[0]
    return state, line.split(" Reason=", 1)[1].strip() if " Reason=" in line else ""


def _log(root: Path, node: str) -> str:
    path = root / f"health-{node}.log"
    return path.read_text() if path.exists() else ""


class HealthChecks:
    """slurmd's health check on, every ``interval`` s; off again, its runs ended, at exit."""

    def __init__(self, conf: Path, program: Path, root: Path, interval: int = 10) -> None:
        self.conf, self.program, self.root, self.interval = conf, program, root, interval
        self.text = conf.read_text()

    def __enter__(self) -> HealthChecks:
        self.conf.write_text(self.text + f"HealthCheckProgram={self.program}\n"
                             f"HealthCheckInterval={self.interval}\nHealthCheckNodeState=ANY\n")
        _scontrol(self.conf, "reconfigure")
        return self

    def __exit__(self, *exc: object) -> None:
        self.conf.write_text(self.text)
        _scontrol(self.conf, "reconfigure")
        end = time.monotonic() + 90
        while _running(self.root) and time.monotonic() < end:
            time.sleep(1)
        for pid in _running(self.root):
            os.kill(pid, 15)

    def wait(self, what: str, done, timeout: float = 240) -> None:
        """Until ``done()`` holds; fails naming ``what`` and the logs after ``timeout`` s."""
        end = time.monotonic() + timeout
        while not done():
            if time.monotonic() > end:
                pytest.fail(f"{what}: not after {timeout:.0f} s; logs:\n"
                            + "\n".join(_log(self.root, n.hostname)[-2000:] for n in NODES))
            time.sleep(2)


def _running(root: Path) -> list[int]:
    """The health checks of this test still running (their command lines name its files)."""
    out = subprocess.run(["pgrep", "-f", "slurm-health-check|sentinel health|reframe"],
                         capture_output=True, text=True).stdout
    pids = [int(p) for p in out.split()]
    return [p for p in pids if p != os.getpid() and _names(p, root)]


def _names(pid: int, root: Path) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return str(root).encode() in environ


def _degrade(node: netns.Node) -> None:
    """Limit the node's loopback, which carries TCP between its own ranks, to 5 Mbit/s."""
    for cmd in (["ip", "link", "set", "lo", "mtu", "1500"],
                ["tc", "qdisc", "replace", "dev", "lo", "root", "tbf", "rate", "5mbit",
                 "burst", "4kb", "latency", "100ms"]):
        subprocess.run([*node.inside(), *cmd], check=True, capture_output=True, timeout=30)


def _restore(node: netns.Node) -> None:
    subprocess.run([*node.inside(), "tc", "qdisc", "del", "dev", "lo", "root"],
                   capture_output=True, timeout=30)
    subprocess.run([*node.inside(), "ip", "link", "set", "lo", "mtu", "65536"],
                   capture_output=True, timeout=30)


def _resume(conf: Path, node: str) -> None:
    if "DRAIN" in _state(conf, node)[0]:
        _scontrol(conf, "update", f"NodeName={node}", "State=RESUME")


def _took(log: str) -> list[float]:
    """The wall times of the measurements a node's log reports."""
    return [float(s) for s in re.findall(r"measurement, \d+ test case\(s\), \d+ failed, "
                                         r"([\d.]+) s", log)]


def test_slurmd_drains_the_degraded_node_and_leaves_the_healthy_one(rig, tmp_path):
    program = _settings(tmp_path, rig, REFERENCES, AS_ROOT)
    _degrade(NODES[1])
    try:
        with HealthChecks(rig, program, tmp_path) as checks:
            checks.wait("m2 drained by its health check",
                        lambda: "DRAIN" in _state(rig, "m2")[0])
            checks.wait("m1 judged healthy", lambda: "m1: healthy" in _log(tmp_path, "m1"))
        state, reason = _state(rig, "m2")
        assert reason.startswith("sentinel: Pt2ptCheck %transport=ob1-tcp %mapping=core: "
                                 "performance error"), reason
        assert "latency_8B" in reason
        assert "DRAIN" not in _state(rig, "m1")[0]
        m1, m2 = _log(tmp_path, "m1"), _log(tmp_path, "m2")
        assert "failed twice" not in m1 and "drained" not in m1, m1
        assert "m2: failed twice" in m2 and "drained m2: sentinel: " in m2, m2
        # slurmd saw the exit status of a node that failed twice
        slurmd = (rig.parent.parent / "log" / "slurmd-m2.log").read_text()
        assert "health_check failed: rc:1" in slurmd
        print("wall time of a measurement under slurmd (s): m1", _took(m1), "m2", _took(m2))
        assert max(_took(m1) + _took(m2)) < 60  # slurmd kills it at 60 s
    finally:
        _restore(NODES[1])
        _resume(rig, "m2")


def test_a_health_check_that_cannot_run_drains_nothing_and_says_it_is_broken(rig, tmp_path):
    # m1: Open MPI as root without its variables; m2: a reference file that is no YAML
    more = ('case $SLURMD_NODENAME in m2) ' + AS_ROOT.replace("\n", " ") + ';; esac\n'
            f'case $SLURMD_NODENAME in m2) SENTINEL_REFERENCES={tmp_path}/broken ;; esac')
    program = _settings(tmp_path, rig, REFERENCES, more)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "local.yaml").write_text(REFERENCES.replace("us]", "us"))
    with HealthChecks(rig, program, tmp_path) as checks:
        for node in ("m1", "m2"):
            checks.wait(f"{node}'s health check said it is broken",
                        lambda n=node: "the health check is broken" in _log(tmp_path, n))
    m1, m2 = _log(tmp_path, "m1"), _log(tmp_path, "m2")
    assert "the MPI refused to run as root" in m1, m1
    assert "not valid YAML" in m2, m2
    for node in ("m1", "m2"):
        assert "DRAIN" not in _state(rig, node)[0], _state(rig, node)
        slurmd = (rig.parent.parent / "log" / f"slurmd-{node}.log").read_text()
        assert "health_check failed: rc:2" in slurmd


def _by_hand(node: netns.Node, settings: Path) -> subprocess.CompletedProcess:
    """The program as slurmd runs it on ``node``: its network, its name, no other variable."""
    return subprocess.run([*node.inside(), "env", "-i", f"SLURMD_NODENAME={node.hostname}",
                           f"SENTINEL_HEALTH_ENV={settings}",
                           str(ROOT / "scripts" / "slurm-health-check.sh")],
                          capture_output=True, text=True, timeout=180)


def test_the_drain_guard_drains_no_more_than_it_allows(rig, tmp_path):
    # both nodes degraded, one drain allowed (--max-drain 1): the first is drained,
    # the second named and left in service, the partition's level said in doubt
    _settings(tmp_path, rig, REFERENCES, AS_ROOT)
    for node in NODES:
        _degrade(node)
    try:
        first = _by_hand(NODES[0], tmp_path / "health.env")
        second = _by_hand(NODES[1], tmp_path / "health.env")
        assert first.returncode == second.returncode == 1
        m1, m2 = _log(tmp_path, "m1"), _log(tmp_path, "m2")
        assert "drained m1: sentinel: " in m1, m1
        assert "m2: failed twice" in m2 and "drained m2" not in m2, m2
        assert ("m2: not drained: 1 node(s) of the partition drained by the suite in the last "
                "24 h (m1)") in m2 and "in doubt" in m2
        assert "DRAIN" in _state(rig, "m1")[0] and "DRAIN" not in _state(rig, "m2")[0]
    finally:
        for node in NODES:
            _restore(node)
        _resume(rig, "m1")


def _health_build(out: Path, family: str) -> str:
    """``sentinel health`` on this host over one of ``family``'s transports; its build's output."""
    transport = {"openmpi": "openmpi/ob1-vader", "mpich": "mpich/ucx-sm"}[family]
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "sentinel"), "health", "--system",
                           "local:cpu", "--", "-p", f"{family}$", "-S", f"transports={transport}"],
                          capture_output=True, text=True, timeout=300,
                          env={**mpi_env(), "SENTINEL_OUTPUT": str(out),
                               "SENTINEL_FINALIZE_TIMEOUT": FINALIZE_TIMEOUT, **NO_NETWORK})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = Path(re.findall(r"\(report (\S+)\)", proc.stdout)[-1])
    (build,) = [tc for run in json.loads(report.read_text())["runs"]
                for tc in run["testcases"] if tc["name"].startswith("BenchBuild")]
    return (Path(build["outputdir"]) / "rfm_build.out").read_text()


def test_the_health_checks_benchmarks_are_built_once_per_mpi(tmp_path):
    need_stack("openmpi")
    need_stack("mpich")
    first = _health_build(tmp_path, "openmpi")
    assert "reused from" not in first and "mpicc" in first  # built, and kept
    again = _health_build(tmp_path, "openmpi")
    assert "sentinel: pt2pt and host reused from " in again and "mpicc" not in again
    other = _health_build(tmp_path, "mpich")  # another MPI: its own build
    assert "reused from" not in other
    assert len(list((tmp_path / "var" / "build-cache").glob("pt2pt-*"))) == 2
