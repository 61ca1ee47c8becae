"""``sentinel report`` on inputs that cannot be used: named, never a traceback.

A run report of the wrong shape, a file that is not UTF-8, a results database
session that is not, and a newest session that ran no test case.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import pytest

from sentinel.results import cli
from sentinel.results.report.files import load_reports
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs, cases_of

DATA = Path(__file__).resolve().parents[1] / "data" / "run-report-slurm-two.json"
#: The display name of the fourth test case of DATA (the one the cases below break).
CASE = "Pt2ptCheck %transport=ucx-tcp %mapping=node %build.bench=pt2pt"
DAY = 86400.0


def _report() -> dict:
    return json.loads(DATA.read_text())


def _fourth(report: dict) -> dict:
    return report["runs"][0]["testcases"][3]


def _runs_object(r: dict) -> None:
    r["runs"] = {}


def _testcases_string(r: dict) -> None:
    r["runs"] = [{"testcases": "x"}]


def _run_string(r: dict) -> None:
    r["runs"] = ["x"]


def _case_list(r: dict) -> None:
    r["runs"][0]["testcases"][3] = ["a"]


def _session_list(r: dict) -> None:
    r["session_info"] = []


def _start_string(r: dict) -> None:
    r["session_info"]["time_start_unix"] = "yesterday"


def _name_number(r: dict) -> None:
    _fourth(r)["name"] = 5


def _name_missing(r: dict) -> None:
    del _fourth(r)["name"]


def _display_name_list(r: dict) -> None:
    _fourth(r)["display_name"] = ["x"]


def _perfvalues_list(r: dict) -> None:
    _fourth(r)["perfvalues"] = [1, 2]


def _completion_string(r: dict) -> None:
    _fourth(r)["job_completion_time_unix"] = "soon"


def _reference_string(r: dict) -> None:
    _fourth(r)["perfvalues"]["local:slurm-two:bw_peak"][1] = "x"


def _upper_boolean(r: dict) -> None:
    _fourth(r)["perfvalues"]["local:slurm-two:bw_peak"][3] = True


BROKEN = {
    _runs_object: "'runs' must be a list, got an object",
    _testcases_string: "runs[0]: 'testcases' must be a list, got a string",
    _run_string: "runs[0] must be an object, got a string",
    _case_list: "runs[0].testcases[3] must be an object, got a list",
    _session_list: "'session_info' must be an object, got a list",
    _start_string: "session_info: 'time_start_unix' must be a number or null, got a string",
    _name_number: "runs[0].testcases[3]: 'name' must be a string, got a number",
    _name_missing: "a test case lacks 'name' (a partial run report?)",
    _display_name_list: "runs[0].testcases[3]: 'display_name' must be a string, got a list",
    _perfvalues_list: f"test case {CASE}: 'perfvalues' must be an object, got a list",
    _completion_string: (f"test case {CASE}: 'job_completion_time_unix' must be a number "
                         "or null, got a string"),
    _reference_string: f"test case {CASE}: performance value 'local:slurm-two:bw_peak' "
                       "has reference 'x'",
    _upper_boolean: f"test case {CASE}: performance value 'local:slurm-two:bw_peak' "
                    "has upper True",
}


@pytest.mark.parametrize("breaks", list(BROKEN), ids=lambda f: f.__name__.strip("_"))
def test_a_report_of_the_wrong_shape_is_named_and_the_others_still_read(tmp_path, breaks):
    broken = _report()
    breaks(broken)
    path = tmp_path / "run-report-3.json"
    path.write_text(json.dumps(broken))
    inputs = Inputs()
    load_reports([path, DATA], inputs)
    assert inputs.problems == [f"{path}: {BROKEN[breaks]}"]
    assert len(inputs.cases) == 7
    assert inputs.errors == []


def test_json_nested_too_deeply_is_named(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000)
    inputs = Inputs()
    load_reports([path], inputs)
    assert inputs.problems == [f"{path}: nested too deeply to be a run report"]


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    utf16 = tmp_path / "utf16.json"
    utf16.write_bytes(b"\xff\xfe" + '{"runs": []}'.encode("utf-16-le"))
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"session_info": {},\n "runs": ["caf\xe9"]}'.encode("latin-1"))
    inputs = Inputs()
    load_reports([utf16, latin1, DATA], inputs)
    assert inputs.problems == [
        f"{utf16}: not UTF-8 text: byte 0xff at line 1 (offset 0; a UTF-16 file?)",
        f"{latin1}: not UTF-8 text: byte 0xe9 at line 2 (offset 35)"]
    assert len(inputs.cases) == 7


def _database(path: Path, sessions: list[tuple[str, bytes | None]]) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sessions(uuid TEXT PRIMARY KEY, session_start_unix REAL, "
                 "session_end_unix REAL, json_blob TEXT, report_file TEXT)")
    for uuid, blob in sessions:
        # Stored as TEXT whatever the bytes, as a damaged database would hold them.
        conn.execute("INSERT INTO sessions(uuid, json_blob) VALUES (?, CAST(? AS TEXT))",
                     (uuid, blob))
    conn.commit()
    conn.close()
    return path


def test_a_database_session_that_is_not_utf8_is_named_and_the_others_kept(tmp_path):
    bad = b'{"session_info": {"uuid": "caf\xe9"}, "runs": []}'
    shape = json.dumps(dict(_report(), runs={})).encode()
    db = _database(tmp_path / "results.db", [("good", DATA.read_bytes()), ("bad", bad),
                                             ("shape", shape), ("null", None)])
    inputs = Inputs()
    load_history(db, inputs)
    assert [len(cases) for _, cases in inputs.history] == [7]
    assert inputs.problems == [
        f"{db}: session bad: not UTF-8 text: byte 0xe9 at line 1 (offset 30)",
        f"{db}: session shape: 'runs' must be a list, got an object",
        f"{db}: session null: no run report stored"]


def test_a_stored_session_read_by_its_skeleton_is_the_whole_report_read(tmp_path):
    # the stored session's fields the report does not read are skipped, not lost
    whole = Inputs()
    load_reports([DATA], whole)
    bad_case = _report()
    bad_case["runs"][0]["testcases"][3]["perfvalues"] = ["not", "an", "object"]
    bad_runs = _report()
    bad_runs["runs"][0]["testcases"] = {"a": 1}
    db = _database(tmp_path / "results.db", [
        ("good", DATA.read_bytes()), ("case", json.dumps(bad_case).encode()),
        ("runs", json.dumps(bad_runs).encode())])
    inputs = Inputs()
    load_history(db, inputs, headline_only=False, parallel=False)
    assert [cases for _, cases in inputs.history] == [whole.cases]
    assert inputs.problems == [
        f"{db}: session case: test case {CASE}: 'perfvalues' must be an object, got a list",
        f"{db}: session runs: runs[0]: 'testcases' must be a list, got an object"]


def _empty(report: dict, days_later: float) -> dict:
    """``report`` as a later session that ran no test case (ReFrame's "Ran 0/0")."""
    out = copy.deepcopy(report)
    out["runs"] = [dict(out["runs"][0], testcases=[], num_cases=0, num_skipped=0)]
    out["session_info"].update(num_cases=0, num_skipped=0, uuid="empty-session",
                               time_start_unix=out["session_info"]["time_start_unix"]
                               + days_later * DAY)
    return out


def _ran_nothing(path: Path) -> str:
    return (f"{path}: the session ran no test case: the selection matched nothing "
            "(nothing was measured)")


def test_a_newest_session_that_ran_nothing_is_an_error_the_rest_still_read(tmp_path):
    empty = tmp_path / "run-report-4.json"
    empty.write_text(json.dumps(_empty(_report(), 1)))
    for order in ([DATA, empty], [empty, DATA]):  # the newest session, whatever the order
        inputs = Inputs()
        load_reports(order, inputs)
        assert inputs.errors == [_ran_nothing(empty)]
        assert inputs.problems == [] and len(inputs.cases) == 7


def test_an_older_session_that_ran_nothing_is_no_error(tmp_path):
    empty = tmp_path / "run-report-0.json"
    empty.write_text(json.dumps(_empty(_report(), -1)))
    inputs = Inputs()
    load_reports([DATA, empty], inputs)
    assert inputs.errors == [] and inputs.problems == [] and len(inputs.cases) == 7


def _cli(tmp_path: Path, capsys, *reports: Path) -> tuple[int, str, str]:
    status = cli.main(["report", *map(str, reports), "--db", str(tmp_path / "none.db"),
                       "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_names_a_report_of_the_wrong_shape_without_a_traceback(tmp_path, capsys):
    path = tmp_path / "run-report-3.json"
    path.write_text(json.dumps(dict(_report(), runs={})))
    status, out, err = _cli(tmp_path, capsys, path)
    assert status == 1
    assert err == f"sentinel report: left out: {path}: 'runs' must be a list, got an object\n"
    assert (tmp_path / "out" / "sentinel-report.html").exists()


def test_the_command_fails_when_the_only_session_ran_nothing(tmp_path, capsys):
    path = tmp_path / "run-report-5.json"
    path.write_text(json.dumps(_empty(_report(), 0)))
    status, out, err = _cli(tmp_path, capsys, path)
    assert status == 1
    assert err == f"sentinel report: {_ran_nothing(path)}\n"
    summary = json.loads((tmp_path / "out" / "sentinel-report.json").read_text())
    assert summary["problems"] == [_ran_nothing(path)]
    assert _ran_nothing(path) in (tmp_path / "out" / "sentinel-report.html").read_text()


#: A real quick run with no network (run-report-osu-offline.json): FetchOsu
#: skips, naming the URL; ReFrame then skips OsuBuild and the 13
#: OsuSourceCheck test cases for their skipped dependency, with no message.
OFFLINE = Path(__file__).resolve().parents[1] / "data" / "run-report-osu-offline.json"


def test_a_skip_for_a_skipped_dependency_is_given_the_root_dependency_and_its_reason():
    report = json.loads(OFFLINE.read_text())
    assert not any(tc.get("skip_reason") or tc.get("fail_reason") for run in report["runs"]
                   for tc in run["testcases"] if tc["name"].startswith(("OsuBuild", "OsuSource")))
    cases = cases_of(report, "offline")
    fetch = next(c for c in cases if c.check == "FetchOsu")
    assert fetch.result == "skip" and "cannot be fetched" in fetch.fail_reason
    dependents = [c for c in cases if c.check in ("OsuBuild", "OsuSourceCheck")]
    assert len(dependents) == 14
    # OsuSourceCheck depends on OsuBuild, which has no reason: the root is named
    assert {c.fail_reason for c in dependents} == {
        f"depends on FetchOsu, which was skipped: {fetch.fail_reason}"}
    assert next(c for c in cases if c.check == "BenchBuild").fail_reason == ""


def test_dependencies_of_the_wrong_type_are_named():
    report = json.loads(OFFLINE.read_text())
    tc = next(tc for tc in report["runs"][0]["testcases"] if tc["name"].startswith("OsuBuild"))
    tc["dependencies_actual"] = [["FetchOsu_1", "local"]]
    with pytest.raises(ValueError, match=r"offline: test case OsuBuild .*'dependencies_actual' "
                                         r"must be a list of \[name, system:partition, environ\]"):
        cases_of(report, "offline")
