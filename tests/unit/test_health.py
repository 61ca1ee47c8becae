"""The health check drains only for the node's fault, and never beyond its guard.

Run reports and job outputs are this project's own: ``tests/data/vet``
(``sentinel health --system local:cpu`` as root without Open MPI's root
variables, and against a band no ping-pong meets; the vet of a drifted
node), ``tests/data/host`` (a node shared with busy loops) and
``tests/data/joberr`` (ranks that died of a signal).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sentinel.parsers.jobend import job_end_causes
from sentinel.results.verdicts import last_attempts
from sentinel.results.vet import decide
from sentinel.results.vet.blame import CHECK, NODE, blame
from sentinel.results.vet.health import failures
from sentinel.site.nodes import NodeState, _since

DATA = Path(__file__).resolve().parents[1] / "data"


def _failed(path: Path) -> list[dict]:
    return [tc for tc in last_attempts(json.loads(path.read_text()))
            if tc["result"] in ("fail", "abort")]


def test_open_mpi_refusing_root_is_the_checks_fault_and_names_nothing_of_the_node():
    report = json.loads((DATA / "vet" / "health-root-refused.json").read_text())
    nodes, checks, judged = failures(report, "n1")
    assert (nodes, judged) == ([], 1)
    (broken,) = checks
    assert broken.what.startswith("the MPI refused to run as root: sanity error: ")


def test_a_band_failed_is_the_nodes_fault():
    report = json.loads((DATA / "vet" / "health-band-failed.json").read_text())
    nodes, checks, judged = failures(report, "n1")
    assert (checks, judged, len(nodes)) == ([], 1, 1)
    assert "latency_8B" in nodes[0].reason()


@pytest.mark.parametrize("path", ["run-report-hog.json", "run-report-hog-sanity.json"])
def test_a_slowed_host_is_the_nodes_fault(path):
    for tc in _failed(DATA / "host" / path):
        assert blame(tc).fault == NODE, tc["fail_reason"][:200]


def test_a_transport_that_is_not_the_one_requested_is_the_nodes_fault():
    (tc, *_) = _failed(DATA / "vet" / "each-node-v2-drifted.json")
    assert blame(tc) == blame({**tc, "host_outside": []})
    assert blame(tc).fault == NODE and "not the one requested" in blame(tc).cause


@pytest.mark.parametrize("name", ["mpich-segfault.txt", "openmpi-segfault.txt"])
def test_a_rank_killed_by_a_signal_is_the_nodes_fault(name):
    causes = job_end_causes((DATA / "joberr" / name).read_text())
    tc = {"result": "fail", "fail_phase": "sanity",
          "fail_reason": "sanity error: the job ended abnormally: " + "; ".join(causes)}
    assert blame(tc).fault == NODE, causes


def test_open_mpis_own_init_race_is_not_the_nodes_fault():
    # the same segfault, with the backtrace that shows ob1 matching a message in MPI_Init
    text = (DATA / "joberr" / "openmpi5-ob1-init-race.txt").read_text()
    causes = job_end_causes(text, "jacobi", launches=4)
    tc = {"result": "fail", "fail_phase": "sanity",
          "fail_reason": "sanity error: the job ended abnormally: " + "; ".join(causes)}
    found = blame(tc)
    assert found.fault == CHECK and "race of its own" in found.cause, causes
    # without the backtrace, the kill alone is the node's
    srun_only = "\n".join(line for line in text.splitlines() if line.startswith("srun"))
    causes = job_end_causes(srun_only, "jacobi", launches=4)
    assert blame({**tc, "fail_reason": "; ".join(causes)}).fault == NODE, causes


def test_slurms_pmi_server_rejecting_the_mpi_is_not_the_nodes_fault():
    causes = job_end_causes((DATA / "joberr" / "mpich5-srun-pmi2-request.txt").read_text())
    # srun then kills the other ranks: a signal, which alone would be the node's
    reason = "; ".join([*causes, "srun: task(s) 1 on n2: Killed"])
    tc = {"result": "fail", "fail_phase": "sanity", "fail_reason": reason}
    found = blame(tc)
    assert found.fault == CHECK and "Slurm's PMI server" in found.cause, causes
    assert blame({**tc, "fail_reason": "srun: task(s) 1 on n2: Killed"}).fault == NODE


@pytest.mark.parametrize(("tc", "said"), [
    ({"fail_phase": "compile", "fail_reason": "build job failed"}, "before measuring"),
    ({"fixture": True, "fail_phase": "sanity", "fail_reason": "x"}, "before measuring"),
    ({"fail_phase": "sanity", "fail_reason": "sanity error: the job ended abnormally: "
      "mpirun.openmpi: no such program"}, "a program it runs is missing"),
    ({"fail_phase": "run", "fail_reason": "a reference is required (acceptance): "
      "/x/local.yaml does not exist"}, "reference or baseline file"),
    ({"fail_phase": "startup", "fail_reason": "dependencies failed"}, "before measuring"),
    ({"fail_phase": "sanity", "fail_reason": "sanity error: the job ended abnormally: "
      "pt2pt cannot start: missing shared library libmpi.so.40"}, "shared library"),
    ({"fail_phase": "sanity", "fail_reason": "sanity error: the job ended abnormally: "
      "the job hit its time limit"}, "cannot pin on the node"),
])
def test_the_checks_own_failures_never_blame_the_node(tc, said):
    found = blame({"result": "fail", **tc})
    assert found.fault == CHECK and said in found.cause


NOW = time.mktime(time.strptime("2026-11-28T12:00:00", "%Y-%m-%dT%H:%M:%S"))


def _states(*drained: tuple[str, str, float | None]) -> list[NodeState]:
    out = [NodeState(f"n{i}", "IDLE", "") for i in range(1, 21)]
    for name, reason, since in drained:
        out[int(name[1:]) - 1] = NodeState(name, "IDLE+DRAIN", reason, since)
    return out


def test_the_guard_holds_back_a_drain_past_the_cap_and_says_why():
    # 5 % of 20 nodes: one drain a day; n3 was drained by the suite an hour ago
    states = _states(("n3", "sentinel: Pt2ptCheck: ...", NOW - 3600))
    held = decide.health_guard(states, "n7", decide.cap("5%", len(states)), 24, NOW)
    assert held.startswith("1 node(s) of the partition drained by the suite in the last 24 h "
                           "(n3)") and "in doubt" in held


@pytest.mark.parametrize("drained", [
    (),  # nothing drained yet
    (("n3", "sentinel: Pt2ptCheck: ...", NOW - 25 * 3600),),  # before the window
    (("n3", "disk failed", NOW - 3600),),  # someone else's drain
])
def test_the_guard_lets_the_first_drain_of_the_window_through(drained):
    states = _states(*drained)
    assert decide.health_guard(states, "n7", decide.cap("5%", len(states)), 24, NOW) == ""


def test_a_suite_drain_of_unknown_time_counts():
    states = _states(("n3", "sentinel: Pt2ptCheck: ...", None))
    assert decide.health_guard(states, "n7", 1, 24, NOW)


def test_slurms_reason_stamp_gives_when_the_node_was_drained():
    line = "NodeName=v2 State=IDLE+DRAIN Reason=sentinel: Pt2ptCheck: x [root@2026-11-28T12:00:00]"
    assert _since(line) == NOW and _since("NodeName=v2 State=IDLE") is None
