"""The morning summary over a captured history (tests/data/history/README.md)."""

from __future__ import annotations

from dataclasses import replace

from sentinel.results import changes
from sentinel.results.report import summary
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs
from sentinel.results.report.tables import acceptance
from tests.conftest import DATA

LIMITED = DATA / "history" / "pt2pt-tcp-limited-from-21.db"  # ob1-tcp limited from 21 on


def _inputs(sessions: int) -> Inputs:
    """The newest of ``sessions`` stored sessions as the run report read, all as history."""
    stored = Inputs()
    load_history(LIMITED, stored)
    history = stored.history[:sessions]
    info, cases = history[-1]
    return Inputs(cases=list(cases), sessions=[info], history=history)


def _summary(inputs: Inputs) -> summary.Summary:
    found = changes.find(inputs.history)
    return summary.summarise(inputs, acceptance(inputs.cases), found)


def _titles(groups: list[summary.Group]) -> dict[str, list[str]]:
    return {g.title: [line.text for line in g.lines] for g in groups}


def test_the_third_night_after_a_step_names_it_and_links_the_test_case():
    inputs = _inputs(23)
    s = _summary(inputs)
    assert s.previous is inputs.history[-2][0]
    assert s.compared.startswith(f"session {inputs.history[-2][0]['uuid'][:8]}")
    group, = s.changed
    assert group.title.startswith("change points this session named")
    assert sorted(line.text.split(": ")[0].split()[-1] for line in group.lines) == [
        "bibw_peak", "bw_peak", "fit_bw"]
    tcp = next(c for c in inputs.cases if c.transport == "ob1-tcp" and c.check == "Pt2ptCheck")
    assert {line.target for line in group.lines} == {summary.case_id(tcp)}
    # the peak bandwidth is judged; the others are followed: shown, not failed
    verdicts = {line.text.split(": ")[0].split()[-1]: line.verdict for line in group.lines}
    assert verdicts == {"bw_peak": "FAIL", "bibw_peak": "INFO", "fit_bw": "INFO"}
    assert all("regression from session" in line.text for line in group.lines)
    assert all(line.text.endswith("(recorded, not judged)")
               for line in group.lines if line.verdict == "INFO")


def test_a_quiet_night_says_nothing_changed_and_what_it_could_not_resolve():
    s = _summary(_inputs(12))
    assert s.changed == []
    # the classic LogP L of both transports: o_s + o_r exceed the half round trip
    assert [(g.title, len(g.lines)) for g in s.unmeasured] == [
        ("unresolved: Pt2ptCheck logp_L_classic", 2)]


def test_failures_are_new_still_or_fixed_against_the_previous_session():
    inputs = _inputs(12)
    before = inputs.history[-2][1]
    tcp, shm = (next(c for c in inputs.cases if c.transport == t and c.check == "Pt2ptCheck")
                for t in ("ob1-tcp", "ob1-vader"))
    inputs.cases = [replace(c, result="fail", fail_reason="bw_peak below its band")
                    if c in (tcp, shm) else c for c in inputs.cases]
    old_shm = next(c for c in before if c.name == shm.name)
    inputs.history[-2] = (inputs.history[-2][0],
                          [replace(c, result="fail") if c is old_shm else c for c in before])
    groups = _titles(_summary(inputs).changed)
    assert groups == {
        "test cases that fail (new since the previous session)": [
            f"local:cpu+openmpi {summary.test_name(tcp)}: bw_peak below its band (passed then)"],
        "test cases that still fail": [
            f"local:cpu+openmpi {summary.test_name(shm)}: bw_peak below its band"]}
    inputs.cases = [replace(c, result="pass") for c in inputs.cases]
    assert _titles(_summary(inputs).changed) == {
        "test cases fixed since the previous session": [
            f"local:cpu+openmpi {summary.test_name(shm)}"]}


def test_skips_are_grouped_by_reason_and_missing_cases_named():
    inputs = _inputs(12)
    why = "no second node in this partition"
    inputs.cases = [replace(c, result="skip", fail_reason=why) if c.check == "Pt2ptCheck" else c
                    for c in inputs.cases]
    s = _summary(inputs)
    assert _titles(s.unmeasured) == {f"skipped: {why}": sorted(
        f"local:cpu+openmpi {summary.test_name(c)}" for c in inputs.cases
        if c.check == "Pt2ptCheck")}
    gone = inputs.cases.pop()
    assert _titles(_summary(inputs).changed) == {
        "test cases the previous session ran and this one did not": [
            f"{gone.where} {summary.test_name(gone)} (pass then)"]}


def test_only_a_session_of_the_same_mode_is_compared():
    inputs = _inputs(12)
    inputs.sessions = [dict(inputs.sessions[0], mode="nightly")]
    s = _summary(inputs)
    assert s.previous is None
    assert s.compared == ("nothing: none of the 11 other stored sessions ran of mode nightly "
                          "before this one and shared a test case with it")
    inputs.history[3] = (dict(inputs.history[3][0], mode="nightly"), inputs.history[3][1])
    assert _summary(inputs).previous is inputs.history[3][0]
