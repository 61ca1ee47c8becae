"""Regression detection, for real: fixed bands and change points over one history.

The selection is Pt2ptCheck over Open MPI's TCP (ob1-tcp) and shared-memory
(ob1-vader) paths, core mapping. Every run happens inside a network namespace
whose loopback carries the TCP traffic (``btl_tcp_if_include lo``), so the
only difference between the sessions is the degradation. One results
database receives 12 unchanged sessions, then 4 with the namespace's loopback
behind an 8 Gbit/s ``tbf`` rate limit (about 20 % of the TCP bandwidth measured
here): session k = 13 on. Two methods judge that history:

* **fixed bands**: references calibrated from the first 7 sessions' reports
  (``sentinel calibrate --from-reports``), on the peak uni- and bidirectional
  bandwidth, and over shared memory on the 1 MiB bandwidth too. Sessions
  8-10 and 13 run against them, retrying a failed test once as the nightly
  mode does (the others run without references, to keep the test short):
  the unchanged ones must pass, the rate-limited one fail the TCP check on
  bandwidth, and a busy loop pinned to the core of rank 1 (a run of its
  own, shared memory only) fail it on the 1 MiB bandwidth. How often each
  method cries wolf over many more nights is ``benchmarks/change_points.py``'s
  question;
* **change points** (``sentinel.results.changes``): over the 12 unchanged
  sessions nothing; over all 16, session 13 for the bandwidth peaks of
  ob1-tcp, its fitted bandwidth at most three sessions earlier (see below),
  and nothing else.

"Unchanged" is what the test does, not always what the host does: in one CI
run the shared-memory 8 B latency fell from 0.42 to 0.17 us and the TCP
bandwidth rose from 3369 to 6026 MB/s for the last sessions, both at once, with
nothing changed by the test: the VM itself became faster, and the detector
rightly named it. So the test reads the host probe each job runs before its
launches (``src/bench/host``: a cache line's round trip between the two
CPUs and a memory copy's bandwidth; ``host_roundtrip`` and ``host_copy_bw``
of the same test case); a change of a test named at a session where that
test's probe moved by 25 % or more (three sessions after against three
before) is the host's, printed and not counted against the detector. The
probe does move: in one CI run the VM flipped between a slow and a fast
state (round trip 365-1250 ns, then 55 ns) at sessions 8, 10 and 12, and
every MPI figure with it. The test first ran the probe itself before each
session, and that probe missed the flip at session 8, which happened
between it and the jobs: the jobs' own probes saw it.

A band the calibration runs' spread widened to -80 % or more is not
expected to catch the rate limit (about -80 %): on one host the TCP bandwidth
alternated session by session between 1.8-2.3 and 5.9 GB/s, and the bw_peak
band came out -87/+680 % (calibrate notes it). Every narrower band, the
floor's -60 % included, must fail the rate-limited session.

A false alarm of the bands is a result *worse* than its band: this host's
TCP loopback bandwidth is also bimodal, 3.5 or 7 GB/s from one session to
the next with shared memory and the probe unchanged (2 of 7 calibration
runs and 2 of 3 banded runs fast in one local run), and a fast session is
outside the band on the better side, which the suite rightly reports and the
test prints without counting.

Why the bands are what they are. A busy core: the scheduler gives the rank
about half of its core in slices of milliseconds: a 1 MiB transfer spans
slices and halves (-53 % here), while the peaks, maxima over sizes whose
samples can fit in one slice, fell by -54 % and -63 % in two runs but by
only -35 %, the floor, in a third. The bands have a 35 % floor
(``--floor 0.35``), and the TCP ones a 60 % floor: this shared host's TCP
bandwidth drifted by -29 % for a minute, retry included, with nothing
changed, and in a later CI run fell below -35 % in one run and its retry;
the 8 Gbit/s limit is about -80 %, outside either floor (at 2 Gbit/s each
rate-limited TCP run took 65 s instead of 6: the test pays that 5 times). A dedicated node
keeps the 10 % default. Seven calibration runs, not five: in one CI run the
first two of five TCP runs came out -40 %, and five runs let two outliers
move the MAD. Small-message latency is not calibrated here: over 12
unchanged runs on this host (benchmarks/false_alarms.py) its 8 B values
left a 10 % band 15 times in 48, the bandwidth peaks 0 times in 48.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sentinel.results import changes
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs
from sentinel.results.verdicts import verdicts
from tests.cluster import degrade
from tests.integration.conftest import (
    OMPI_TCP_CRASH,
    QUICK,
    Run,
    need_capability,
    need_stack,
    outside_bands,
    reframe,
)

pytestmark = pytest.mark.integration

TCP = "Pt2ptCheck %transport=ob1-tcp %mapping=core"
SHM = "Pt2ptCheck %transport=ob1-vader %mapping=core"
PARAMS = [*QUICK, "-S", "Pt2ptCheck.modes=standard"]
SELECTION = [*PARAMS, "-n", "Pt2ptCheck.*transport=(ob1-tcp|ob1-vader).*mapping=core"]
# The 1 MiB bandwidth on shared memory only: over TCP it fell by 36 % in two
# successive unchanged CI runs (4126 and 4129 against 6488 MB/s).
VARIABLES = "bw_peak|bibw_peak|openmpi/ob1-vader/core/bw_1048576B"
CALIBRATED = 5  # variables over both transports
CALIBRATION = 7
FLOORS = ["0.35", "openmpi/ob1-tcp/.*=0.6"]
UNCHANGED = 12  # calibration, banded runs, then two more: MIN_SEGMENT before k and margin
LIMITED = 4  # MIN_SEGMENT after k, and one more
BANDED = 3  # unchanged sessions run against the calibrated references
ENV = {"OMPI_MCA_btl_tcp_if_include": "lo"}
# The probe's own spread from session to session here: the round trip
# 94-115 ns, the copy 8.8-10.3 GB/s; the CI run's vCPU move was 2.5x.
HOST_SHIFT = 0.25  # the namespace has no other interface
HOST_FIGURES = ("host_roundtrip", "host_copy_bw")


def _calibrate(reports: list[Path], refs: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "sentinel.results.cli", "calibrate",
                           "--partition", "local:cpu", "--from-reports", *map(str, reports),
                           "--references", str(refs), "--variables", VARIABLES,
                           *(arg for floor in FLOORS for arg in ("--floor", floor))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def _run(inside: list[str], out: Path, selection: list[str], refs: Path | None) -> Run:
    """One session of ``selection`` under ``out`` (one results database for all)."""
    env = dict(ENV)
    retries = []
    if refs is not None:
        env["SENTINEL_REFERENCES"] = str(refs)
        retries = ["--max-retries=1"]
    out.mkdir(exist_ok=True)
    run = reframe([*selection, "--system", "local:cpu", *retries, "-r"], out,
                  checks=("pt2pt.py",), env=env, prefix=tuple(inside))
    # a banded run retries a transient slowdown of this shared host (or Open
    # MPI's TCP crash), nothing else
    run.assert_retries(f"performance|{OMPI_TCP_CRASH}")
    return run


def _tests(flags: set[tuple[str, str]]) -> set[str]:
    return {test.split(" %build")[0] for test, _ in flags}


def _history(out: Path) -> list:
    inputs = Inputs()
    load_history(out / "var" / "results.db", inputs)
    assert not inputs.problems
    return inputs.history


def _job_probes(run: Run) -> dict[str, dict[str, float]]:
    """Each test's host probe figures in a session: test -> probe figure -> value."""
    out = {}
    for tc in run.report["runs"][-1]["testcases"]:
        values = {key.split(":")[-1]: v[0] for key, v in (tc.get("perfvalues") or {}).items()}
        figures = {name: values[name] for name in HOST_FIGURES if values.get(name)}
        if figures:
            out[tc["name"].split(" %build")[0]] = figures
    return out


def _host_changes(history: list, probes: list[dict[str, dict[str, float]]],
                  found: list) -> dict[tuple[str, str], str]:
    """The changes in ``found`` the host made: (test, session) -> how its host changed there.

    A change of a test named at session i is the host's when that test's
    host probe median over its sessions i .. i+2 differs from that over
    i-3 .. i-1 by :data:`HOST_SHIFT` or more, in either of the probe's figures.
    """
    sessions = [meta["uuid"] for meta, _ in history]
    assert len(sessions) == len(probes), (len(sessions), len(probes))
    out = {}
    for test, session in {(c.test.split(" %build")[0], c.after.session) for c in found}:
        i, w = sessions.index(session), changes.MIN_SEGMENT
        mine = [p.get(test, {}) for p in probes]
        for key in HOST_FIGURES:
            before = [p[key] for p in mine[max(i - w, 0):i] if key in p]
            after = [p[key] for p in mine[i:i + w] if key in p]
            if not before or not after:  # the first session starts the series
                continue
            old, new = statistics.median(before), statistics.median(after)
            if abs(new / old - 1) >= HOST_SHIFT:
                out[(test, session)] = f"{test}: host {key} {old:g} -> {new:g} at session {i + 1}"
    return out


def _at(change) -> tuple[str, str]:
    """(test, session) of a change, as :func:`_host_changes` keys it."""
    return change.test.split(" %build")[0], change.after.session


def _named(found: list) -> set[tuple[str, str, str]]:
    return {(c.test.split(" %build")[0], c.variable, c.after.session) for c in found}


def _blind(calibrated: str) -> set[str]:
    """The TCP variables whose band the runs widened past the rate limit's -80 %.

    ``sentinel calibrate`` notes every band below -50 % (the TCP floor, -60 %,
    included); only one the runs' spread made wider than -80 % cannot catch it.
    """
    notes = re.findall(r"^note: Pt2ptCheck local:cpu/openmpi/ob1-tcp/core (\w+): band -([\d.]+)/"
                       r".* would not catch a halving", calibrated, re.M)
    return {name for name, lower in notes if float(lower) >= 80}


def test_fixed_bands_and_change_points_over_one_history(tmp_path):
    need_capability("tc", degrade.unavailable())
    need_stack("openmpi")
    refs, history, alarms, runs = tmp_path / "refs", tmp_path / "history", [], []
    refs.mkdir()
    faster: list[tuple[str, str]] = []
    with degrade.namespace(f"sentinel-calm-{os.getpid()}") as inside:
        for i in range(UNCHANGED):
            banded = refs if CALIBRATION <= i < CALIBRATION + BANDED else None
            runs.append(_run(inside, history, SELECTION, banded))
            if i + 1 == CALIBRATION:
                calibrated = _calibrate([r.report_path for r in runs], refs)
                print(calibrated)
                entries = yaml.safe_load((refs / "local.yaml").read_text())
                assert set(entries["Pt2ptCheck"]["local:cpu"]["openmpi"]) == {
                    "ob1-tcp", "ob1-vader"}
            elif banded:
                checked = [v for v in verdicts(runs[-1].report) if v.referenced]
                assert len(checked) == CALIBRATED, runs[-1].output[-3000:]
                worse, better = outside_bands(runs[-1].report)
                alarms += worse
                faster += better
        with degrade.busy_loop(cpu=1):
            shm = _run(inside, tmp_path / "busy-core",
                       [*PARAMS, "-n", "Pt2ptCheck.*transport=ob1-vader.*mapping=core"], refs)
    print("better than the band (the host's fast TCP mode, not counted):", faster)
    assert alarms == [], f"false alarms over {BANDED} unchanged runs: {alarms}"
    unchanged = _history(history)
    with degrade.namespace(f"sentinel-tbf-{os.getpid()}", rate="8gbit") as inside:
        tcp = _run(inside, history, SELECTION, refs)
        limited = [tcp, *(_run(inside, history, SELECTION, None) for _ in range(LIMITED - 1))]
    probes = [_job_probes(run) for run in [*runs, *limited]]

    # worse than the band, as for the unchanged runs: this host also drifts
    # faster over minutes (ob1-vader's peak 50 % above its band in one run)
    slow, quicker = outside_bands(tcp.report)
    print("better than the band at the limit (not counted):", quicker)
    slow = set(slow)
    assert _tests(slow) == {TCP}, tcp.output[-3000:]
    blind = _blind(calibrated)
    print("TCP bands calibrate said would not catch a halving:", blind)
    assert {"bw_peak", "bibw_peak"} - blind <= {var for _, var in slow}
    assert tcp.returncode != 0 and "performance" in tcp.output
    busy = set(outside_bands(shm.report)[0])
    assert _tests(busy) == {SHM}, shm.output[-3000:]
    assert "bw_1048576B" in {var for _, var in busy}

    print("host probe per session:", probes)
    found = changes.find(unchanged)
    host = _host_changes(unchanged, probes[:UNCHANGED], found)
    print("changes the host made:", host)
    assert [c for c in found if _at(c) not in host] == [], probes
    whole = _history(history)
    assert len(unchanged) == UNCHANGED and len(whole) == UNCHANGED + LIMITED
    found = changes.find(whole)
    host = _host_changes(whole, probes, found)
    k = whole[UNCHANGED][0]["uuid"]
    expected = {(TCP, var, k) for var in ("bw_peak", "bibw_peak")}
    # The fit's bandwidth may be dated up to MIN_SEGMENT sessions early:
    # fitted to the latency curve, it follows the host's latency noise, and
    # in one run here it fell from 8000 to 5830, 4144 and 2091 MB/s over the
    # three sessions before the limit, the last of which began the low segment.
    near = {s[0]["uuid"] for s in whole[UNCHANGED - changes.MIN_SEGMENT:UNCHANGED + 1]}
    fit = {n for n in _named(found) if n[:2] == (TCP, "fit_bw") and n[2] in near
           and (n[0], n[2]) not in host}
    print("fit_bw change points near the limit:", fit)
    named = _named(found)
    # the fit may also stay within the noise of its series: named at most once
    assert expected <= named and len(fit) <= 1, (found, probes)
    expected |= fit
    # The limit changes the TCP path as a whole: another ob1-tcp variable that
    # changes at exactly session k is a true detection (its 8-byte latency rose
    # there in one run: tbf schedules every packet), not a false alarm.
    at_k = {n for n in named if n[0] == TCP and n[2] == k}
    print("other ob1-tcp change points at the limit:", at_k - expected)
    assert {n for n in named - expected - at_k if (n[0], n[2]) not in host} == set(), (
        found, probes)
    assert all(c.verdict == "regression" and c.shift < -0.5
               for c in found if _named([c]) <= expected)
