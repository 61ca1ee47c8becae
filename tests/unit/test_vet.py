"""sentinel vet's decisions: what a measurement names, the guards, the scheduler's answers.

The run reports are this project's own: ``tests/data/vet/sweep-*.json`` are
``sentinel vet --measure fabric`` sweeps of the namespaced test cluster
(test_netcluster_local.py), one with m2's link rate-limited, one clean;
``run-report-slurm-vet.json`` is the vet mode through ``--distribute`` with
node v2's image drifted; ``vet/each-node-v2-drifted.json`` is the same
drift seen by the vet mode's each-node jobs (test_vetting_local.py).
``scontrol-show-node.txt`` is the test cluster's ``scontrol -o show node``
with n1 drained by the suite and n2 by an admin.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentinel.errors import SentinelError
from sentinel.results.vet import actions, decide
from sentinel.results.vet.findings import Finding, Measured, measured
from sentinel.site import nodes

DATA = Path(__file__).parents[1] / "data"


def _report(name: str) -> Measured:
    return measured(json.loads((DATA / name).read_text()))


def test_a_sweep_names_the_slow_node_with_its_figure():
    m = _report("vet/sweep-m2-slow.json")
    assert m.nodes == {"m1", "m2", "m3", "m4"} and set(m.named()) == {"m2"}
    f = m.named()["m2"][0]
    assert (f.where, f.check) == ("local:slurm-net", "FabricCheck")
    assert f.what.startswith("bandwidth ") and "below the partition median" in f.what
    assert f.reason().endswith(f"(session {m.sessions[0][:8]})")


def test_a_clean_sweep_names_nothing():
    m = _report("vet/sweep-clean.json")
    assert len(m.nodes) == 4 and m.named() == {} and m.doubts == []


def test_the_vet_mode_names_the_node_whose_checks_failed():
    m = _report("run-report-slurm-vet.json")
    assert m.nodes == {"v1", "v2"} and set(m.named()) == {"v2"}
    assert {f.check for f in m.named()["v2"]} == {"MatchingCheck", "Pt2ptCheck",
                                                   "BarrierSplitCheck"}


def test_each_node_jobs_name_the_node_whose_launches_failed():
    m = _report("vet/each-node-v2-drifted.json")
    assert m.nodes == {"v1", "v2"} and set(m.named()) == {"v2"}
    found = m.named()["v2"]
    assert {f.check for f in found} == {"MatchingCheck", "Pt2ptCheck", "BarrierSplitCheck"}
    assert all(f.what.startswith("transport intelmpi/shm not verified: ") for f in found)
    assert all("the run selected fabrics=ofi" in f.reason() for f in found)


def _measured(named: dict[str, str], measured_nodes: int, check: str = "FabricCheck",
              session: str = "s1") -> Measured:
    return Measured([Finding(n, "sys:part", check, what, session) for n, what in named.items()],
                    {f"n{i}" for i in range(measured_nodes)} | set(named), sessions=[session])


@pytest.mark.parametrize(("text", "nodes", "most"), [("5%", 1000, 50), ("5%", 4, 1),
                                                     ("0", 40, 0), ("3", 40, 3)])
def test_the_cap_is_a_count_or_a_share_of_the_nodes_measured(text, nodes, most):
    assert decide.cap(text, nodes) == most


@pytest.mark.parametrize("text", ["-1", "five", "150%", ""])
def test_a_bad_cap_is_named(text):
    with pytest.raises(SentinelError, match="--max-drain"):
        decide.cap(text, 10)


def test_a_node_named_twice_within_the_cap_is_drained():
    first = _measured({"n3": "slow"}, 40)
    again = _measured({"n3": "slow again"}, 40, session="s2")
    d = decide.decide(first, again, most=2)
    assert list(d.drain) == ["n3"] and len(d.drain["n3"]) == 2 and d.held == []


def test_the_repeat_rule_holds_a_node_named_once():
    d = decide.decide(_measured({"n3": "slow"}, 40), _measured({}, 40, session="s2"), 2)
    assert d.drain == {} and d.held == ["n3: named once, not again by session s2: not drained"]


def test_a_node_not_measured_again_is_not_drained():
    again = Measured([], {"n1"}, sessions=["s2"])
    d = decide.decide(_measured({"n3": "slow"}, 4), again, 2)
    assert d.drain == {} and "n3: not measured again" in d.held[0]


def test_more_nodes_than_the_cap_drains_none():
    first = _measured({f"n{i}": "slow" for i in range(3)}, 1000)
    assert "3 nodes named (n0, n1, n2), more than the cap of 2" in decide.first_guards(
        first, 2)[0]
    assert decide.decide(first, first, 2).drain == {}


def test_a_check_failing_on_more_than_a_third_of_the_nodes_is_a_shift_not_bad_nodes():
    shifted = _measured({f"n{i}": "latency" for i in range(4)}, 9, check="Pt2ptCheck")
    held = decide.first_guards(shifted, 100)
    assert "Pt2ptCheck failed on 4 of the 9 nodes measured" in held[0]
    assert held[-1] == "nothing drained: the band itself is in doubt"
    assert decide.first_guards(_measured({"n0": "latency"}, 9, check="Pt2ptCheck"), 100) == []


def test_a_sweep_in_doubt_names_no_node_and_the_other_sweeps_still_count():
    # five sweeps with m2's link slowed; in the fourth, m4 looked slow too
    report = json.loads((DATA / "vet" / "sweeps-m2-slow-one-in-doubt.json").read_text())
    m = measured(report)
    assert len(m.named()["m2"]) == 4 and len(m.doubts) == 1
    assert "the partition's level itself is in doubt; its nodes are not counted" in m.doubts[0]
    for run in report["runs"]:
        run["testcases"] = [tc for tc in run["testcases"]
                            if "more than a third" in (tc.get("outliers") or "")]
    alone = measured(report)
    assert alone.named() == {} and len(alone.doubts) == 1
    assert decide.decide(alone, alone, 5).drain == {}


def test_scontrol_states_tell_the_suites_drains_from_an_admins(monkeypatch):
    text = (DATA / "vet" / "scontrol-show-node.txt").read_text()
    monkeypatch.setattr(nodes, "_run", lambda cmd, what: text)
    states = nodes.slurm_states(["c1", "n1", "n2"])
    assert not states["c1"].drained and not states["c1"].ours
    assert states["n1"].ours and states["n1"].reason == (
        "sentinel: FabricCheck: bandwidth 6.2x below the partition median in 4 of 4 pairs "
        "(session 5dd833d3)")
    assert states["n2"].drained and not states["n2"].ours and states["n2"].reason == \
        "kernel update"
    with pytest.raises(SentinelError, match="Slurm does not know m9"):
        nodes.slurm_states(["c1", "m9"])


def test_drain_and_resume_commands_of_both_schedulers():
    assert nodes.drain_command("slurm", "m2", "sentinel: x") == [
        "scontrol", "update", "NodeName=m2", "State=DRAIN", "Reason=sentinel: x"]
    assert nodes.drain_command("pbs", "m2", "sentinel: x") == [
        "pbsnodes", "-o", "-C", "sentinel: x", "m2"]
    assert nodes.resume_command("pbs", "m2") == ["pbsnodes", "-r", "m2"]
    with pytest.raises(ValueError, match="starts with 'sentinel:'"):
        nodes.drain("m2", "slow")


def test_actions_are_recorded_beside_the_sessions(tmp_path):
    db = tmp_path / "results.db"
    assert actions.recorded(db) == []
    done = [actions.Action(1.0, "sys:part", "m2", "drain", "sentinel: slow", "s1 s2")]
    actions.record(db, done)
    assert actions.recorded(db) == done


def test_the_nodes_measured_are_the_sweeps_own_pairs_not_the_jobs_node_list():
    report = json.loads((DATA / "vet" / "sweep-clean.json").read_text())
    for tc in report["runs"][-1]["testcases"]:
        tc["job_nodelist"] = ["m1"]  # as squeue leaves it for a job done before a poll
    assert measured(report).nodes == {"m1", "m2", "m3", "m4"}
