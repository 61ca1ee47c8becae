"""An acceptance counts every entry of its reference file: measured, or why not.

The run report is this project's own (``tests/data/run-report-acceptance.json``:
``--mode acceptance -p openmpi -n Pt2ptCheck`` on the one-socket, one-node
``local:cpu`` against ``tests/data/references-acceptance.yaml``, three
requirements for ob1-vader's 8 B latency at mappings core, socket and node).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from sentinel.errors import SentinelError
from sentinel.results.plan import dry_run, output
from sentinel.results.report import tables
from sentinel.results.report.inputs import read
from sentinel.results.report.load import cases_of
from sentinel.results.requirements import (
    FAILED,
    MEASURED,
    NO_VALUE,
    NOT_GENERATED,
    SKIPPED,
    Requirement,
    Seen,
    account,
    contract,
)

DATA = Path(__file__).resolve().parents[1] / "data"
REPORT = DATA / "run-report-acceptance.json"
FILE = DATA / "references-acceptance.yaml"
DRY = DATA / "plan" / "dry-run-acceptance-local.json"
BAND = (1.0, -1.0, 9.0, "us")


def _cases():
    return cases_of(json.loads(REPORT.read_text()), "r")


def _req(key: str, variable: str = "latency_8B", check: str = "Pt2ptCheck") -> Requirement:
    return Requirement(check, tuple(key.split("/")), variable, BAND)


def test_every_entry_of_the_file_is_a_requirement():
    reqs = contract(FILE)
    assert [r.label for r in reqs] == [
        f"Pt2ptCheck local:cpu/openmpi/ob1-vader/{m} latency_8B"
        for m in ("core", "socket", "node")]
    assert reqs[0].entry == BAND


def test_the_three_requirements_on_one_socket_and_node_are_incomplete_and_say_why():
    acc = tables.acceptance(_cases(), {"local": contract(FILE)})
    assert acc.verdict == "INCOMPLETE"
    assert acc.said == "INCOMPLETE (3 requirements, 2 not measured, 0 failed test cases)"
    socket, node = acc.unmeasured
    assert socket.requirement.key.endswith("/socket") and socket.status == SKIPPED
    assert "mapping socket needs 2 sockets; partition local:cpu has 1" in socket.why
    assert node.requirement.key.endswith("/node") and node.status == NOT_GENERATED
    assert "ob1-vader is shared memory" in node.why
    assert [r.var.name for r in acc.requirements] == ["latency_8B"]


def test_the_same_session_passes_a_contract_it_measured_whole():
    acc = tables.acceptance(_cases(), {"local": contract(FILE)[:1]})
    assert (acc.verdict, acc.unmeasured, acc.total) == ("PASS", [], 1)


def test_without_an_acceptance_the_referenced_variables_are_the_requirements():
    acc = tables.acceptance(_cases())
    assert (acc.verdict, acc.total, acc.contract) == ("PASS", 1, 0)


def test_a_failed_value_makes_it_fail_before_anything_unmeasured():
    cases = _cases()
    passed = next(c for c in cases if "latency_8B" in c.variables and c.variables[
        "latency_8B"].referenced)
    var = passed.variables["latency_8B"]
    passed.variables["latency_8B"] = replace(var, result="fail")
    assert tables.acceptance(cases, {"local": contract(FILE)}).verdict == "FAIL"


@pytest.mark.parametrize(("req", "status", "said"), [
    (_req("local:cpu/openmpi/ob1-vader/core", check="ImbCheck"), NOT_GENERATED,
     "no test case of ImbCheck in the session"),
    (_req("local:gpu/openmpi/ob1-vader/core"), NOT_GENERATED, "on partition local:gpu"),
    (_req("local:cpu/mpich/ucx-sm/core"), NOT_GENERATED, "on environment mpich"),
    (_req("local:cpu/openmpi/ucx-rc/core"), NOT_GENERATED,
     "with ucx-rc/core on local:cpu+openmpi"),
    (_req("local:cpu/openmpi/ob1-tcp/node"), SKIPPED, "mapping node needs 2 nodes"),
    (_req("local:cpu/openmpi/ob1-vader/core", "latency_4194304B"), NO_VALUE,
     "measured no latency_4194304B"),
    (_req("local:cpu/openmpi/ob1-vader/core"), MEASURED, ""),
])
def test_each_requirement_says_what_the_session_did_of_it(req, status, said):
    seen = [tables.seen(c) for c in _cases()]
    found = account([req], seen)[0]
    assert found.status == status and said in found.why


def test_a_failed_test_case_is_named_as_what_left_it_unmeasured():
    seen = [Seen("Pt2ptCheck", "local:cpu/openmpi/ob1-vader/core", "fail",
                 "the job ended abnormally: signal 11")]
    found = account([_req("local:cpu/openmpi/ob1-vader/core")], seen)[0]
    assert found.status == FAILED and "signal 11" in found.why


@pytest.mark.parametrize(("text", "said"), [
    ("- a\n- b\n", "a mapping of check names"),
    ("Pt2ptCheck: {local:cpu: {}}\n", "with an $index list"),
    ("Pt2ptCheck:\n  $index: [$partition, $environ, transport_name, mapping]\n"
     "  local:cpu: {openmpi: {ob1-vader: {core: {latency_8B: 1.0}}}}\n",
     "latency_8B: expected [value, lower, upper, unit]"),
    ("Pt2ptCheck: [\n", "not valid YAML"),
])
def test_a_file_that_is_no_contract_is_named(tmp_path, text, said):
    bad = tmp_path / "local.yaml"
    bad.write_text(text)
    with pytest.raises(SentinelError, match=re.escape(f"{bad}: ") + ".*" + re.escape(said)):
        contract(bad)


def _report_naming(tmp_path: Path, reference: Path) -> Path:
    """The captured run report, its cases naming ``reference`` as their reference file."""
    doc = json.loads(REPORT.read_text())
    for run in doc["runs"]:
        for tc in run["testcases"]:
            if tc.get("reference_file"):
                tc["reference_file"] = str(reference)
    path = tmp_path / "run-report.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_report_reads_the_file_the_session_recorded(tmp_path):
    reference = tmp_path / "local.yaml"
    shutil.copy(FILE, reference)
    inputs = read([_report_naming(tmp_path, reference)], None)
    assert [r.key for r in inputs.contracts["local"]][1:] == [
        "local:cpu/openmpi/ob1-vader/socket", "local:cpu/openmpi/ob1-vader/node"]
    assert inputs.problems == []  # the same bytes as the session's


def test_a_file_changed_since_the_session_is_said_and_read_as_it_is_now(tmp_path):
    reference = tmp_path / "local.yaml"
    reference.write_text(FILE.read_text().replace("[1.0, -1.0, 9.0, us]", "[2.0, -1.0, 9.0, us]"))
    inputs = read([_report_naming(tmp_path, reference)], None)
    assert len(inputs.contracts["local"]) == 3
    assert any("changed since the session" in p for p in inputs.problems), inputs.problems


def test_a_missing_file_is_a_problem_not_a_pass(tmp_path):
    inputs = read([_report_naming(tmp_path, tmp_path / "gone.yaml")], None)
    assert "local" not in inputs.contracts
    assert any("gone.yaml does not exist" in p for p in inputs.problems), inputs.problems


def test_the_plan_lists_what_an_acceptance_cannot_measure_before_it_runs(tmp_path):
    doc = json.loads(DRY.read_text())
    reference = tmp_path / "local.yaml"
    shutil.copy(FILE, reference)
    for tc in doc["runs"][0]["testcases"]:
        tc["reference_file"] = str(reference)
    found = dry_run.unmeasurable(doc)
    assert [(a.requirement.key.rsplit("/", 1)[1], a.status) for a in found] == [
        ("socket", SKIPPED), ("node", NOT_GENERATED)]
    notes = output.unmeasurable_notes(found)
    assert notes[0].startswith("acceptance: 2 requirement(s)") and len(notes) == 3


def test_a_plan_whose_contract_it_can_measure_lists_nothing(tmp_path):
    doc = json.loads(DRY.read_text())
    reference = tmp_path / "local.yaml"
    reference.write_text("\n".join(FILE.read_text().splitlines()[:7]) + "\n")
    for tc in doc["runs"][0]["testcases"]:
        tc["reference_file"] = str(reference)
    assert dry_run.unmeasurable(doc) == [] and output.unmeasurable_notes([]) == []


def test_the_counts_cover_every_status():
    accounts = account([_req("local:cpu/openmpi/ob1-vader/core")],
                       [tables.seen(c) for c in _cases()])
    statuses = {s: sum(a.status == s for a in accounts)
                for s in (MEASURED, FAILED, SKIPPED, NOT_GENERATED, NO_VALUE)}
    assert statuses == {MEASURED: 1, FAILED: 0, SKIPPED: 0, NOT_GENERATED: 0, NO_VALUE: 0}
