"""``sentinel plan``: counting jobs and estimating the cost of a real dry-run report.

The report and the configurations are captured from the real ReFrame
(tests/data/plan/README.md says how).
"""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import pytest

from sentinel.errors import SentinelError
from sentinel.results import cli, plan
from sentinel.results.plan.cost import history
from sentinel.results.plan.dry_run import Job, failure_notes, jobs_of
from sentinel.results.plan.output import as_json, hms, render
from sentinel.results.plan.partitions import (
    Budget,
    Partition,
    partitions_of,
    reframe_default_max_jobs,
)
from tests.conftest import DATA

PLAN = DATA / "plan"
REPORT = json.loads((PLAN / "dry-run-quick-local.json").read_text())
LOCAL = json.loads((PLAN / "partitions-local.json").read_text())
BIG_P00 = json.loads((PLAN / "partition-big_site-p00.json").read_text())


def _cases(report: dict = REPORT) -> list[dict]:
    return report["runs"][0]["testcases"]


def _report(edit) -> dict:
    """A copy of the captured report with ``edit`` applied to each test case that ran."""
    report = copy.deepcopy(REPORT)
    for tc in _cases(report):
        if tc["result"] == "pass" and not tc["fixture"]:
            edit(tc)
    return report


def _local_partitions() -> list[Partition]:
    return partitions_of("local", LOCAL, reframe_default_max_jobs())


# -- counting ------------------------------------------------------------------


def test_the_captured_report_is_a_local_quick_dry_run_of_pt2pt_and_matching():
    info = REPORT["session_info"]
    assert "--dry-run" in info["cmdline"] and "--mode quick" in info["cmdline"]
    names = {tc["name"].split()[0] for tc in _cases()}
    assert names == {"BenchBuild", "Pt2ptCheck", "MatchingCheck"}
    assert {tc["result"] for tc in _cases()} == {"pass", "skip"}


def test_jobs_are_the_test_cases_that_run_not_the_skipped_nor_the_local_builds():
    jobs, failed = jobs_of(REPORT)
    ran = [tc for tc in _cases() if tc["result"] == "pass" and not tc["fixture"]]
    assert failed == []
    assert len(jobs) == len(ran) == 22
    assert {j.test for j in jobs} == {tc["name"] for tc in ran}
    assert all(j.kind == "run" and j.nodes == 1 and j.time_limit == 120.0 for j in jobs)
    assert not any(j.test.startswith("BenchBuild") for j in jobs)


def test_a_compile_only_fixture_is_told_apart_by_its_fields():
    builds = [tc for tc in _cases() if tc["name"].startswith("BenchBuild")]
    assert builds and all(tc["job_stdout"] is None and tc["build_stdout"] and tc["build_locally"]
                          for tc in builds)
    runs = [tc for tc in _cases() if tc["result"] == "pass" and not tc["fixture"]]
    assert all(tc["job_stdout"] and tc["build_stdout"] is None for tc in runs)


def test_nodes_are_tasks_over_tasks_per_node_under_a_batch_scheduler():
    def slurm(tc: dict) -> None:
        tc["scheduler"] = "slurm"
        tc["num_tasks"] = 8192
        tc["num_tasks_per_node"] = 128 if tc["name"].startswith("Pt2pt") else 100

    jobs, _ = jobs_of(_report(slurm))
    assert {j.nodes for j in jobs if j.test.startswith("Pt2pt")} == {64}
    assert {j.nodes for j in jobs if j.test.startswith("Matching")} == {82}  # rounded up


def test_a_build_job_counts_when_it_is_not_built_locally():
    report = copy.deepcopy(REPORT)
    for tc in _cases(report):
        if tc["name"].startswith("BenchBuild"):
            tc.update(build_locally=False, build_time_limit=600.0)
    jobs, _ = jobs_of(report)
    builds = [j for j in jobs if j.kind == "build"]
    assert len(builds) == 6 and all(j.nodes == 1 and j.time_limit == 600.0 for j in builds)


def test_a_local_test_submits_nothing():
    jobs, _ = jobs_of(_report(lambda tc: tc.update(local=True)))
    assert jobs == []


def test_every_run_of_the_report_counts():
    report = copy.deepcopy(REPORT)
    report["runs"].append(copy.deepcopy(report["runs"][0]))  # --reruns 1
    assert len(jobs_of(report)[0]) == 44


def test_a_case_that_failed_in_the_dry_run_is_named_and_not_counted(tmp_path):
    report = copy.deepcopy(REPORT)
    ran = [tc for tc in _cases(report) if tc["result"] == "pass" and not tc["fixture"]]
    for i, tc in enumerate(ran[:5]):
        tc.update(result="fail", fail_phase="run", fail_reason="a reference is required")
        if i == 4:
            tc.update(result="abort", fail_phase="setup", fail_reason="boom")
    jobs, failed = jobs_of(report)
    assert len(jobs) == 17 and len(failed) == 5
    (note,) = failure_notes(failed)
    assert note == ("5 test case(s) failed in the dry-run and are not counted in jobs (a real "
                    "run fails them the same way): 4 x fail in run: a reference is required "
                    f"(e.g. {ran[0]['name']} @cpu+{ran[0]['environ']}); 1 x abort in setup: "
                    f"boom (e.g. {ran[4]['name']} @cpu+{ran[4]['environ']})")
    assert "1 more, for 1 other reason(s)" in failure_notes(failed, shown=1)[0]
    result = plan.build(_local_partitions(), jobs, failed, {}, tmp_path / "db")
    assert (result.rows[0].jobs, result.rows[0].failed, result.total.failed) == (17, 5, 5)
    assert result.notes == [note] and render(result)[-1] == f"note: {note}"


@pytest.mark.parametrize(("field", "value", "message"), [
    ("num_tasks_per_node", None, "num_tasks_per_node is None: the nodes of its job cannot"),
    ("num_tasks", 0, "num_tasks is 0: the nodes of its job cannot be counted"),
    ("time_limit", None, "time_limit is None: its job has no time limit"),
])
def test_a_field_that_is_not_set_is_an_error_naming_it(field, value, message):
    def edit(tc: dict) -> None:
        tc.update(scheduler="slurm")
        tc[field] = value

    with pytest.raises(SentinelError, match=message):
        jobs_of(_report(edit))


@pytest.mark.parametrize("field", ["num_tasks_per_node", "num_tasks", "time_limit", "job_stdout",
                                   "build_stdout", "local", "result", "partition"])
def test_a_field_missing_from_the_report_is_an_error_naming_it(field):
    def edit(tc: dict) -> None:
        tc["scheduler"] = "slurm"
        del tc[field]

    with pytest.raises(SentinelError, match=f"has no field '{field}'"):
        jobs_of(_report(edit))


def test_a_build_without_build_locally_in_the_report_is_an_error():
    report = copy.deepcopy(REPORT)
    for tc in _cases(report):
        if tc["name"].startswith("BenchBuild"):
            del tc["build_locally"]
    with pytest.raises(SentinelError, match="BenchBuild .* has no field 'build_locally'"):
        jobs_of(report)


def test_a_remote_build_without_a_time_limit_is_an_error():
    report = copy.deepcopy(REPORT)
    for tc in _cases(report):
        if tc["name"].startswith("BenchBuild"):
            tc["build_locally"] = False
    with pytest.raises(SentinelError, match="build_time_limit is None"):
        jobs_of(report)


# -- configuration ---------------------------------------------------------------


def test_partitions_take_max_jobs_and_the_budget_from_the_configuration():
    (cpu,) = _local_partitions()
    assert (cpu.fullname, cpu.scheduler, cpu.max_jobs, cpu.max_jobs_is_default) == \
        ("local:cpu", "local", 1, False)
    assert cpu.budget is None
    (p00,) = partitions_of("big_site", [BIG_P00], 8)
    assert (p00.fullname, p00.max_jobs, p00.budget) == \
        ("big_site:p00", 16, Budget(jobs=100, node_hours=50))


def test_a_partition_without_max_jobs_gets_reframes_default_and_says_so():
    entry = {k: v for k, v in BIG_P00.items() if k != "max_jobs"}
    assert reframe_default_max_jobs() == 8
    (p00,) = partitions_of("big_site", [entry], reframe_default_max_jobs())
    assert p00.max_jobs == 8 and p00.max_jobs_is_default


def test_system_partition_selects_one_partition():
    other = {**BIG_P00, "name": "p01"}
    assert [p.name for p in partitions_of("big_site:p01", [BIG_P00, other], 8)] == ["p01"]
    with pytest.raises(SentinelError, match="system big_site has no partition 'p09'"):
        partitions_of("big_site:p09", [BIG_P00, other], 8)


@pytest.mark.parametrize("budget", [100, {}, {"jobs": 1, "hours": 2}, {"jobs": "many"},
                                    {"node_hours": -1}])
def test_a_malformed_budget_is_an_error(budget):
    entry = {**BIG_P00, "extras": {"nightly_budget": budget}}
    with pytest.raises(SentinelError, match=r"partition big_site:p00: extras\['nightly_budget'\]"):
        partitions_of("big_site", [entry], 8)


# -- the results database --------------------------------------------------------


def _store(db: Path, report: dict) -> None:
    """Store a run report as ReFrame 4.10 does (reframe/frontend/reporting/storage.py)."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("CREATE TABLE IF NOT EXISTS sessions(uuid TEXT PRIMARY KEY, "
                     "session_start_unix REAL, session_end_unix REAL, json_blob TEXT, "
                     "report_file TEXT)")
        conn.execute("CREATE TABLE IF NOT EXISTS testcases(name TEXT, system TEXT, "
                     "partition TEXT, environ TEXT, job_completion_time_unix REAL, "
                     "session_uuid TEXT, uuid TEXT)")
        info = report["session_info"]
        conn.execute("INSERT INTO sessions VALUES(?, ?, ?, ?, ?)",
                     (info["uuid"], info["time_start_unix"], info["time_end_unix"],
                      json.dumps(report), None))
        for run in report["runs"]:
            for tc in run["testcases"]:
                conn.execute("INSERT INTO testcases VALUES(?, ?, ?, ?, ?, ?, ?)",
                             (tc["name"], tc["system"], tc["partition"], tc["environ"],
                              tc["job_completion_time_unix"], info["uuid"], tc["uuid"]))
    conn.close()


def _session(n: int, time_run: float, only: str = "Pt2ptCheck") -> dict:
    """The captured report as a session that ran: ``only``'s cases took ``time_run``.

    A case that ran has its job's completion time, as in a real session (the
    dry-run has none): ReFrame's query of the stored test cases selects by it.
    """
    report = copy.deepcopy(REPORT)
    uuid = f"session-{n}"
    report["session_info"]["uuid"] = uuid
    done = report["session_info"]["time_start_unix"] + n * 86400 + time_run
    for run in report["runs"]:
        for i, tc in enumerate(run["testcases"]):
            tc["uuid"] = f"{uuid}:{run['run_index']}:{i}"
            ran = tc["name"].startswith(only) and tc["result"] == "pass"
            tc["time_run"] = time_run if ran else None
            tc["job_completion_time_unix"] = done if ran else None
    return report


def test_measured_time_is_the_median_of_the_earlier_runs(tmp_path):
    db = tmp_path / "results.db"
    for n, seconds in enumerate((10.0, 30.0, 11.0)):
        _store(db, _session(n, seconds))
    jobs, _ = jobs_of(REPORT)
    known = history(db, "local", {j.key for j in jobs})
    pt2pt = {j.key for j in jobs if j.test.startswith("Pt2ptCheck")}
    assert set(known.times) == pt2pt and set(known.times.values()) == {11.0}
    start = REPORT["session_info"]["time_start_unix"]
    assert set(known.last) == pt2pt and set(known.last.values()) == {start + 2 * 86400 + 11.0}
    assert history(db, "big_site", {j.key for j in jobs}).times == {}


def test_no_database_measures_nothing_and_a_broken_one_is_an_error(tmp_path):
    jobs, _ = jobs_of(REPORT)
    keys = {j.key for j in jobs}
    assert history(tmp_path / "absent.db", "local", keys).times == {}
    broken = tmp_path / "broken.db"
    broken.write_text("not sqlite")
    with pytest.raises(SentinelError, match="broken.db: not a ReFrame results database"):
        history(broken, "local", keys)


# -- the plan ---------------------------------------------------------------------


def test_wall_is_the_sum_of_job_times_over_max_jobs_measured_where_known(tmp_path):
    jobs, failed = jobs_of(REPORT)
    pt2pt = {j.key: 10.0 for j in jobs if j.test.startswith("Pt2ptCheck")}
    result = plan.build(_local_partitions(), jobs, failed, pt2pt, tmp_path / "db")
    (row,) = result.rows
    matching = len(jobs) - len(pt2pt)
    assert (row.jobs, row.measured) == (22, 11)
    assert row.wall_s == pytest.approx(11 * 10.0 + matching * 120.0)  # max_jobs 1
    assert row.node_hours == pytest.approx((11 * 10.0 + matching * 120) / 3600)
    assert row.source == "11/22 measured"
    assert plan.build(_local_partitions(), jobs, [], {}, tmp_path).rows[0].source == "bound"
    every = {j.key: 5.0 for j in jobs}
    assert plan.build(_local_partitions(), jobs, [], every, tmp_path).total.source == "measured"


def _big_site(jobs_per_partition: int, partitions: int = 3) -> plan.Plan:
    """Partitions like big_site's, with that many 4-node 10-minute jobs each."""
    entries = [{**BIG_P00, "name": f"p{n:02d}"} for n in range(partitions)]
    parts = partitions_of("big_site", entries, 8)
    jobs = [Job(f"T{i}", p.name, "openmpi", "run", 4, 600.0)
            for p in parts for i in range(jobs_per_partition)]
    return plan.build(parts, jobs, [], {}, Path("/nowhere/results.db"))


def test_budget_and_totals_across_partitions():
    result = _big_site(296)
    row = result.rows[0]
    assert row.jobs == 296 and row.node_hours == pytest.approx(296 * 4 * 600 / 3600)
    assert row.wall_s == pytest.approx(296 * 600 / 16)
    assert row.over_budget == ["296 jobs > 100", "197.3 node-hours > 50"]
    assert result.total.jobs == 3 * 296 and result.total.wall_s == row.wall_s  # side by side
    assert result.total.node_hours == pytest.approx(3 * row.node_hours)
    assert _big_site(10).rows[0].over_budget == []


def test_a_job_on_a_partition_the_configuration_lacks_is_an_error(tmp_path):
    jobs = [Job("T", "gpu", "openmpi", "run", 1, 60.0)]
    with pytest.raises(SentinelError, match="partition.s. gpu, which the configuration"):
        plan.build(_local_partitions(), jobs, [], {}, tmp_path)


def test_render_is_an_aligned_table_with_a_total_and_the_formula():
    lines = render(_big_site(296))
    header, *rows = lines[:5]
    assert header.split()[:3] == ["partition", "jobs", "node-hours"]
    assert [r.split()[0] for r in rows] == ["big_site:p00", "big_site:p01", "big_site:p02",
                                            "total"]
    assert rows[0].split()[:7] == ["big_site:p00", "296", "197.3", "3:05:00", "bound", "16",
                                   "0"]
    assert rows[0].endswith("over budget: 296 jobs > 100, 197.3 node-hours > 50")
    assert rows[3].endswith("3 of 3 partitions over budget")
    for row in rows[:3]:  # aligned: text columns left, numbers right
        assert row.index("bound") == header.index("from")
        assert row.index("over budget") == header.index("nightly budget")
        assert row.index("296") + 3 == header.index("jobs") + len("jobs")
    assert any("sum over the jobs of t / max_jobs" in line for line in lines)
    assert render(_big_site(10))[1].endswith("fits (<= 100 jobs, <= 50 node-hours)")


def test_json_says_the_same(tmp_path):
    data = json.loads(json.dumps(as_json(_big_site(296), "big_site", "nightly", [])))
    p00 = data["partitions"][0]
    assert (p00["partition"], p00["jobs"], p00["max_jobs"], p00["wall_from"]) == \
        ("big_site:p00", 296, 16, "bound")
    assert p00["budget"] == {"jobs": 100, "node_hours": 50, "fits": False,
                             "over": ["296 jobs > 100", "197.3 node-hours > 50"]}
    assert data["total"]["jobs"] == 888 and data["mode"] == "nightly" and p00["failed"] == 0


def test_hms_rounds_up_to_the_second():
    assert hms(0) == "0:00:00" and hms(59.2) == "0:01:00"
    assert hms(11100) == "3:05:00" and hms(90061) == "25:01:01"


def test_the_cli_names_a_missing_extra_configuration(capsys):
    assert cli.main(["plan", "--system", "big_site", "-C", "tests/config/nope.py"]) == 1
    assert capsys.readouterr().err.strip() == \
        "sentinel plan: -C tests/config/nope.py: no such file"



def test_jobs_of_the_whole_partition_run_one_after_another_whatever_max_jobs_allows():
    part = Partition("s", "p", "slurm", 16, False, None, nodes=10)
    whole = [Job(f"T{i}", "p", "e", "run", 10, 100.0) for i in range(3)]
    assert plan.build([part], whole, [], {}, Path("db")).rows[0].wall_s == pytest.approx(300)
    # 32 one-node jobs: 16 (max_jobs) at once on 100 nodes; 10 at once on 10
    small = [Job(f"T{i}", "p", "e", "run", 1, 100.0) for i in range(32)]
    wide = Partition("s", "p", "slurm", 16, False, None, nodes=100)
    assert plan.build([wide], small, [], {}, Path("db")).rows[0].wall_s == pytest.approx(200)
    assert plan.build([part], small, [], {}, Path("db")).rows[0].wall_s == pytest.approx(320)


def test_a_partitions_node_count_is_read_and_a_bad_one_named():
    entry = {"name": "p", "scheduler": "slurm", "extras": {"num_nodes": 1000}}
    assert partitions_of("s", [entry], 8)[0].nodes == 1000
    assert partitions_of("s", [{**entry, "scheduler": "local"}], 8)[0].nodes is None
    with pytest.raises(SentinelError, match=r"extras\['num_nodes'\] is '1k'"):
        partitions_of("s", [{**entry, "extras": {"num_nodes": "1k"}}], 8)
