"""Two versions of each MPI, and MPICH 5's standard-ABI build, in the same sessions, for real.

Debian's Open MPI 4.1 and MPICH 4.0 beside PyPI's Open MPI 5.0 and MPICH 5.0
(and ``mpich-5_0-abi``, MPICH 5's benchmarks built with ``mpicc_abi``): two
sessions of a small ping-pong, each running every environment, then
``sentinel upgrade`` and ``sentinel report`` over them. Six sessions or more
give a verdict (the closing note of the issue and ``docs/upgrade.md`` hold
those figures); two give each ratio and say it is unresolved, and why.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MPI_PREFIXES
from tests.integration.conftest import NO_NETWORK, Run, mpi_env, need_stack, reframe

pytestmark = pytest.mark.integration

SENTINEL = str(Path(sys.executable).parent / "sentinel")
ENVIRONS = ("openmpi", "openmpi-5_0", "mpich", "mpich-5_0", "mpich-5_0-abi")
SELECTION = ["--mode", "quick", *(x for e in ENVIRONS for x in ("-p", f"{e}$")),
             "-n", "^Pt2ptCheck.*mapping=core",
             "-S", "Pt2ptCheck.transports=openmpi/ob1-vader,openmpi/ob1-sm,mpich/ucx-sm,"
                   "mpich/ofi-tcp",
             "-S", "Pt2ptCheck.modes=standard", "-S", "Pt2ptCheck.max_size=65536",
             "--system", "local:cpu", "-r"]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> tuple[Path, list[Run]]:
    """Two sessions of the selection under one output (one results database)."""
    for stack in ("openmpi", "mpich", "openmpi5", "mpich5"):
        need_stack(stack)
    out = tmp_path_factory.mktemp("versions")
    runs = [reframe(SELECTION, out, env={"SENTINEL_MPI_PREFIXES": MPI_PREFIXES},
                    checks=("pt2pt.py",)) for _ in range(2)]
    return out, runs


def _sentinel(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SENTINEL, *args], capture_output=True, text=True, timeout=300,
                          env={**mpi_env(), "SENTINEL_OUTPUT": str(out), **NO_NETWORK})


def test_every_version_and_the_abi_build_run_verified_with_their_own_library(sessions):
    _, runs = sessions
    for run in runs:
        assert run.returncode == 0, run.output[-3000:]
        ran = {(tc["environ"], tc["transport"]): tc for tc in run.cases("Pt2ptCheck")}
        assert set(ran) == {("openmpi", "ob1-vader"), ("openmpi-5_0", "ob1-sm"),
                            ("mpich", "ucx-sm"), ("mpich-5_0", "ucx-sm"),
                            ("mpich-5_0", "ofi-tcp"), ("mpich-5_0-abi", "ucx-sm"),
                            ("mpich-5_0-abi", "ofi-tcp")}, sorted(ran)
        for (environ, _), tc in ran.items():
            assert tc["result"] == "pass", tc.get("fail_reason")
            prefix = "/.venv-mpich5/lib/" if environ.startswith("mpich-5_0") else ""
            soname = "libmpi_abi.so.1" if environ.endswith("-abi") else "libmpi"
            assert tc["mpi_linkage"].startswith(soname), tc["mpi_linkage"]
            assert prefix in tc["mpi_linkage"], tc["mpi_linkage"]


def test_sentinel_upgrade_pairs_each_version_within_its_sessions_and_says_what_it_lacks(
        sessions):
    out, _ = sessions
    proc = _sentinel(out, "upgrade", "openmpi", "openmpi-5_0", "--partition", "local:cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("upgrade openmpi -> openmpi-5_0 on local:cpu: 2 session(s) "
                               "ran both"), proc.stdout
    assert "  unresolved: 2 session(s) ran both, at least 6 are needed for a verdict" in lines
    # Open MPI 4's vader and 5's sm are one transport
    assert any(line.startswith("  Pt2ptCheck ob1-vader core: unresolved: ") for line in lines)
    assert any("latency_8B" in line and "lower is better" in line for line in lines)
    abi = _sentinel(out, "upgrade", "mpich-5_0", "mpich-5_0-abi", "--partition", "local:cpu")
    assert abi.returncode == 0, abi.stdout + abi.stderr
    assert "  Pt2ptCheck ofi-tcp core: unresolved: " in abi.stdout


def test_the_report_gives_the_upgrade_and_the_abi_first(sessions):
    out, runs = sessions
    proc = _sentinel(out, "report", str(runs[-1].report_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (out / "reports" / "sentinel-report.html").read_text()
    summary = page[page.index('<section id="summary">'):]
    first = summary.index("upgrade mpich -&gt; mpich-5_0 on local:cpu")
    assert first < summary.index("standard ABI mpich-5_0 -&gt; mpich-5_0-abi on local:cpu")
    assert "upgrade openmpi -&gt; openmpi-5_0 on local:cpu" in summary
    wrong = _sentinel(out, "upgrade", "openmpi", "intelmpi", "--partition", "local:slurm-one")
    assert wrong.returncode == 1
    assert "no stored session ran both openmpi and intelmpi on local:slurm-one" in wrong.stderr
