"""The node before the MPI: a node slowed as a whole is named once, as the host's.

Two clean runs of Pt2ptCheck (ob1-vader, core) calibrate the references
(the judged values, the 8 B latency, the peak bandwidth and, as the site's
``judged`` setting asks, the 1 MiB bandwidth: ``tests/config/judged.py``;
and the probe's figures); then the same run with a busy loop pinned to each CPU
of this host (a node shared with a hog: what a throttled node or a stray
process does to every figure at once). The judged values fail their bands,
measured twice (the retry runs under the hog too); the probe's figures are
worse than theirs, and the report says so once, as the node's, with the
probe's figure, instead of a failure per MPI variable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from sentinel.analysis.host import HOST_FILE, ONE_CPU, host_values, waited
from sentinel.analysis.variables import HIGHER, HOST_VARIABLES, spec_of
from tests.conftest import ROOT
from tests.integration.conftest import QUICK, build_bench, need_stack, reframe

pytestmark = pytest.mark.integration

# Short: a rank that shares its CPU with a busy loop waits a time slice at
# each turn, and the quick sizes took 85 s so (here 11 s; the large sizes
# stay, where bandwidth rests on the memory the hog takes).
SELECTION = [*QUICK, "-n", "Pt2ptCheck.*transport=ob1-vader.*mapping=core", "-p", "openmpi$",
             "-S", "Pt2ptCheck.modes=standard", "-S", "Pt2ptCheck.iterations=20",
             "-S", "Pt2ptCheck.iterations_large=4", "-S", "Pt2ptCheck.windows=4",
             "-S", "Pt2ptCheck.windows_large=2", "-S", "Pt2ptCheck.repetitions=3",
             "-S", "Pt2ptCheck.warmup=2", "-r"]


#: The hogs' niceness: ahead of the ranks, which then run about a quarter of
#: the time, each at other moments than its peer (its scheduling weight
#: 3121 against 1024). At equal weights the ranks ran half the time and the
#: judged figures moved past their bands on some machines only: on CI's of
#: 2026-11-26 the 1 MiB bandwidth stayed inside its band and the test failed.
HOG_NICE = -5


@contextmanager
def hogs(cpus: list[int]):
    """A busy loop pinned to each of ``cpus``, ahead of the ranks (at most 10 minutes).

    Each loop runs in a session of its own, so its autogroup's niceness is set
    too where the kernel groups sessions (``/proc/PID/autogroup``); killed by
    its process group.
    """
    procs = [subprocess.Popen(["timeout", "600", "nice", "-n", str(HOG_NICE), "taskset", "-c",
                               str(cpu), "sh", "-c", "while :; do :; done"],
                              start_new_session=True)
             for cpu in cpus]
    try:
        for proc in procs:
            group = Path(f"/proc/{proc.pid}/autogroup")
            if group.exists():
                group.write_text(str(HOG_NICE))
        yield
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _sentinel(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SENTINEL_OUTPUT": str(cwd)}
    return subprocess.run([sys.executable, "-m", "sentinel.results.cli", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)


#: A site that judges the 1 MiB bandwidth too (its partition's ``judged`` extra).
JUDGED = ROOT / "tests" / "config" / "judged.py"
#: The probe's figures, and whether a higher value is the better one (their declarations).
HOST_WORSE = {var.template: var.better == HIGHER for var in HOST_VARIABLES}


def test_a_node_shared_with_a_hog_is_named_once_as_the_hosts_problem(tmp_path):
    need_stack("openmpi")
    clean = []
    for n in (1, 2):
        (tmp_path / f"clean{n}").mkdir()
        run = reframe(SELECTION, tmp_path / f"clean{n}", checks=("pt2pt.py",), config=JUDGED)
        assert run.returncode == 0, run.output[-3000:]
        clean.append(str(run.report_path))
    refs = tmp_path / "refs"
    refs.mkdir()
    proc = _sentinel(["calibrate", "--partition", "local:cpu", "--references", str(refs),
                      "--floor", "0.3", "--from-reports", *clean], tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (tmp_path / "hog").mkdir()
    with hogs(sorted(os.sched_getaffinity(0))):
        run = reframe(SELECTION, tmp_path / "hog", env={"SENTINEL_REFERENCES": str(refs)},
                      checks=("pt2pt.py",), config=JUDGED)
    case = run.case("Pt2ptCheck", environ="openmpi", transport="ob1-vader", mapping="core")
    assert case["result"] == "fail" and case["fail_phase"] == "performance", case["fail_reason"]
    assert run.retried(), "a judged value outside its band is measured again"
    perf = case["perfvalues"]
    # Which of the probe's figures the hog moves past its band depends on the
    # VM's state: the copy halved (8.7 -> 4.3 GB/s) with the round trip about
    # unchanged in the runs of 2026-11-25; the round trip went 86 -> 1212 ns
    # with the copy -29 %, inside its band, in a run of 2026-11-26. The
    # figures attribute: they are never given to ReFrame, never fail.
    worse = [line.split()[0] for line in case["host_outside"]]
    assert worse and set(worse) <= set(HOST_WORSE), case["host_outside"]
    assert all("worse than its reference" in line for line in case["host_outside"])
    assert not any(v[-1] == "fail" for k, v in perf.items() if ":host_" in k)
    failed_mpi = [k for k, v in perf.items() if v[-1] == "fail"]
    assert failed_mpi and all(k.split(":")[-1] in case["judged_variables"]
                              for k in failed_mpi), perf
    proc = _sentinel(["report", str(run.report_path), "--out", str(tmp_path / "report")],
                     tmp_path)
    host = [line for line in proc.stdout.splitlines() if line.startswith("host: ")]
    assert len(host) == 1, proc.stdout[-3000:]
    assert "slowed as a whole (the host probe, before any MPI): " in host[0]
    assert all(f"{name} " in host[0] for name in worse), host[0]
    summary = json.loads((tmp_path / "report" / "sentinel-report.json").read_text())
    (slowed,) = summary["host_slowdowns"]
    assert slowed["partition"] == "local:cpu" and slowed["test_cases"] == [case["name"]]
    assert f"{len(failed_mpi)} MPI value(s) failed with it" in slowed["verdict"]
    # both measurements of a confirmed failure are in the report (a value
    # outside its band in the retry alone has only the retry's)
    firsts = {v["variable"]: v["earlier_values"] for v in summary["variables"]
              if v["verdict"] == "FAIL"}
    assert firsts and any(len(x) == 1 for x in firsts.values()), firsts
    # the captures of the unit tests: clean, and the same node with the hog
    if os.environ.get("SENTINEL_CAPTURE"):
        _capture(run, refs, tmp_path)


def _capture(hogged, refs: Path, tmp_path: Path) -> None:
    """The unit tests' inputs: the hog's run, a clean one against the same references."""
    (tmp_path / "after").mkdir()
    clean = reframe(SELECTION, tmp_path / "after", env={"SENTINEL_REFERENCES": str(refs)},
                    checks=("pt2pt.py",), config=JUDGED)
    out = ROOT / "tests" / "data" / "host"
    out.mkdir(exist_ok=True)
    (out / "run-report-hog.json").write_text(hogged.report_path.read_text())
    (out / "run-report-clean.json").write_text(clean.report_path.read_text())
    (out / "references.yaml").write_text((refs / "local.yaml").read_text())
    stage = next((tmp_path / "hog").rglob("rfm_host.txt"))
    (out / "rfm_host-hog.txt").write_text(stage.read_text())
    # every variable referenced: under the hog a fit may go unresolved and
    # fail sanity before any band is compared (the probe then leads its message)
    every = tmp_path / "every"
    every.mkdir()
    reports = [str(next((tmp_path / f"clean{n}" / "reports").glob("*.json"))) for n in (1, 2)]
    proc = _sentinel(["calibrate", "--partition", "local:cpu", "--references", str(every),
                      "--floor", "0.3", "--variables", ".*", "--from-reports", *reports],
                     tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for attempt in range(4):
        (tmp_path / f"sanity{attempt}").mkdir()
        with hogs(sorted(os.sched_getaffinity(0))):
            run = reframe(SELECTION, tmp_path / f"sanity{attempt}", checks=("pt2pt.py",),
                          env={"SENTINEL_REFERENCES": str(every)}, config=JUDGED)
        case = run.case("Pt2ptCheck", environ="openmpi", transport="ob1-vader", mapping="core")
        if case["fail_phase"] == "sanity":
            (out / "run-report-hog-sanity.json").write_text(run.report_path.read_text())
            return
    raise AssertionError("no hogged run failed in sanity in 4 attempts")


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> str:
    """The host probe alone, built once for the module."""
    return build_bench("openmpi", "host", tmp_path_factory.mktemp("probe"), target="host")[1]


@pytest.mark.parametrize("cpus, roundtrip", [("0", False), ("0,1", True)])
def test_the_probe_given_one_cpu_still_measures_the_copy(probe, cpus, roundtrip):
    # a job of one rank per node and one CPU per rank gives the probe one CPU:
    # the copy is still the node's figure, the round trip unresolved with why
    proc = subprocess.run(["taskset", "-c", cpus, probe, "--batches", "9", "--trips", "2000",
                           "--copy-mib", "8"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if os.environ.get("SENTINEL_CAPTURE") == "1" and not roundtrip:
        (ROOT / "tests" / "data" / "host" / "rfm_host-one-cpu.txt").write_text(proc.stdout)
    values = host_values(spec_of("Pt2ptCheck"), proc.stdout, HOST_FILE)
    assert values["host_copy_bw"][0] > 0
    if roundtrip:
        assert values["host_roundtrip"][0] > 0 and values.unresolved == {}
    else:
        assert values.unresolved == {"host_roundtrip": ONE_CPU}


def test_a_retrys_probe_waits_for_the_node_to_be_quiet_and_says_how_long(probe):
    # the node outside thresholds it cannot meet: measured again every 2 s,
    # for the time given, then said to be still outside; within them: at once
    cheap = ["--batches", "9", "--trips", "2000", "--copy-mib", "8"]
    proc = subprocess.run([probe, *cheap, "--quiet-roundtrip-ns", "1", "--quiet-wait-s", "5"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    said = waited(proc.stdout)
    assert said.endswith("still outside its bands at the end"), proc.stdout
    tries = int(proc.stdout.split("tries=")[1].split()[0])
    assert tries >= 2 and float(proc.stdout.split("waited_s=")[1].split()[0]) >= 2
    proc = subprocess.run([probe, *cheap, "--quiet-roundtrip-ns", "100000000",
                           "--quiet-wait-s", "5"], capture_output=True, text=True, timeout=120)
    assert " tries=1 quiet=1" in proc.stdout and waited(proc.stdout).endswith("quiet at the end")
    assert host_values(spec_of("Pt2ptCheck"), proc.stdout, HOST_FILE)["host_copy_bw"][0] > 0
    # a wait without a threshold is refused, naming what it needs
    proc = subprocess.run([probe, "--quiet-wait-s", "5"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "--quiet-wait-s needs --quiet-roundtrip-ns" in proc.stderr
