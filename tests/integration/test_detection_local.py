"""Regression detection, for real: calibrate, rerun unchanged, then degrade.

The selection is Pt2ptCheck over Open MPI's TCP (ob1-tcp) and shared-memory
(ob1-vader) paths, core mapping, calibrated on its peak uni- and
bidirectional bandwidth, and over shared memory on its 1 MiB bandwidth too.
Every run happens inside a network namespace whose loopback carries the TCP
traffic (``btl_tcp_if_include lo``), so the only difference between the
calibration and the degraded runs is the degradation:

(a) the namespace's loopback behind a 2 Gbit/s ``tbf`` rate limit (about
    4 % of the TCP bandwidth measured here): the TCP check must fail, on
    bandwidth, and the shared-memory check must pass;
(b) a busy loop pinned to the core of rank 1, with the shared-memory check
    only (a busy core slows every transport with a rank on it): it must fail
    on the 1 MiB bandwidth. The scheduler gives the rank about half of its
    core in slices of milliseconds: a 1 MiB transfer spans slices and halves
    (-53 % here), while the peaks, maxima over sizes whose samples can fit
    in one slice, fell by -54 % and -63 % in two runs but by only -35 %, the
    floor, in a third, and the 8 B latency median did not move at all.

Runs retry a failed test once (``--max-retries=1``, as the nightly mode
does): a transient slowdown of this shared 2-vCPU host does not repeat, a
degradation does. The bands have a 35 % floor (``--floor 0.35``), and the
TCP ones a 60 % floor (``--floor 'openmpi/ob1-tcp/.*=0.6'``): this shared
host's TCP bandwidth drifted by -29 % for a minute, retry included, with
nothing changed, and in a later CI run fell below -35 % in one run and its
retry; the 2 Gbit/s limit is -96 %, far outside either floor. A dedicated
node keeps the 10 % default. Seven
calibration runs, not five: in one CI run the first two of five TCP runs
came out -40 % (3457 and 3081 against 5552 MB/s), and five runs let two
outliers move the MAD. In another CI run, seven TCP runs spread over
3539-5844 MB/s: a linear band would have been +/-120 % and passed the
tbf-limited 250 MB/s; the band on the logarithms (sentinel.results.calibrate) is
-73/+271 % and fails it. Small-message
latency is not calibrated here: over 12 unchanged runs on this host
(benchmarks/false_alarms.py) its 8 B values left a 10 % band 15 times in 48,
the bandwidth peaks 0 times in 48.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sentinel.results.verdicts import failed, verdicts
from tests.cluster import degrade
from tests.conftest import ROOT
from tests.integration.conftest import QUICK, Run, need_stack, reframe

pytestmark = pytest.mark.integration

TCP = "Pt2ptCheck %transport=ob1-tcp %mapping=core"
SHM = "Pt2ptCheck %transport=ob1-vader %mapping=core"
PARAMS = [*QUICK, "-S", "Pt2ptCheck.modes=standard"]
SELECTION = [*PARAMS, "-n", "Pt2ptCheck.*transport=(ob1-tcp|ob1-vader).*mapping=core"]
# The 1 MiB bandwidth on shared memory only: over TCP it fell by 36 % in two
# successive unchanged CI runs (4126 and 4129 against 6488 MB/s).
VARIABLES = "bw_peak|bibw_peak|openmpi/ob1-vader/core/bw_1048576B"
CALIBRATED = 5  # variables over both transports
RUNS = 7
FLOORS = ["0.35", "openmpi/ob1-tcp/.*=0.6"]
UNCHANGED = 3
ENV = {"OMPI_MCA_btl_tcp_if_include": "lo"}  # the namespace has no other interface


def _calibrate(inside: list[str], refs: Path, out: Path) -> str:
    env = {**os.environ, **ENV, "SENTINEL_OUTPUT": str(out),
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    proc = subprocess.run([*inside, sys.executable, "-m", "sentinel.results.cli", "calibrate",
                           "--partition", "local:cpu", "--runs", str(RUNS),
                           "--checks", str(ROOT / "checks" / "pt2pt.py"),
                           "--references", str(refs), "--variables", VARIABLES,
                           *(arg for floor in FLOORS for arg in ("--floor", floor)),
                           "--", *SELECTION], capture_output=True, text=True, env=env,
                          cwd=out, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def _run(inside: list[str], refs: Path, out: Path, selection: list[str]) -> Run:
    out.mkdir()
    return reframe([*selection, "--system", "local:cpu", "--max-retries=1", "-r"], out,
                   checks=("pt2pt.py",),
                   env={**ENV, "SENTINEL_REFERENCES": str(refs)}, prefix=tuple(inside))


def _tests(flags: set[tuple[str, str]]) -> set[str]:
    return {test.split(" %build")[0] for test, _ in flags}


def test_calibrated_references_pass_unchanged_and_catch_each_degradation(tmp_path):
    reason = degrade.unavailable()
    if reason:
        pytest.skip(reason)
    need_stack("openmpi")
    refs = tmp_path / "refs"
    refs.mkdir()
    with degrade.namespace(f"sentinel-calm-{os.getpid()}") as inside:
        print(_calibrate(inside, refs, tmp_path))
        entries = yaml.safe_load((refs / "local.yaml").read_text())["Pt2ptCheck"]["local:cpu"]
        assert set(entries["openmpi"]) == {"ob1-tcp", "ob1-vader"}
        alarms, first_attempt = [], []
        for i in range(UNCHANGED):
            run = _run(inside, refs, tmp_path / f"unchanged-{i}", SELECTION)
            checked = [v for v in verdicts(run.report) if v.referenced]
            assert len(checked) == CALIBRATED, run.output[-3000:]
            alarms += sorted(failed(run.report))
            first_attempt += sorted(failed({"runs": run.report["runs"][:1]}))
        print(f"unchanged runs: {len(first_attempt)} of {CALIBRATED * UNCHANGED} "
              f"variables out of band at the first attempt, {len(alarms)} after one retry: "
              f"{first_attempt}")
        assert alarms == [], f"false alarms over {UNCHANGED} unchanged runs: {alarms}"
        with degrade.busy_loop(cpu=1):
            shm = _run(inside, refs, tmp_path / "busy-core",
                       [*PARAMS, "-n", "Pt2ptCheck.*transport=ob1-vader.*mapping=core"])
    with degrade.namespace(f"sentinel-tbf-{os.getpid()}", rate="2gbit") as inside:
        tcp = _run(inside, refs, tmp_path / "slow-loopback", SELECTION)

    slow = failed(tcp.report)
    assert _tests(slow) == {TCP}, tcp.output[-3000:]
    assert {"bw_peak", "bibw_peak"} <= {var for _, var in slow}
    assert tcp.returncode != 0 and "performance" in tcp.output

    busy = failed(shm.report)
    assert _tests(busy) == {SHM}, shm.output[-3000:]
    assert "bw_1048576B" in {var for _, var in busy}
