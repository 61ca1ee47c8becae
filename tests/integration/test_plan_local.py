"""``sentinel plan`` with the real ReFrame: on this host, and on the big_site fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import QUICK, need_stack, reframe

pytestmark = pytest.mark.integration

SELECTION = ["-n", "Pt2ptCheck.*mapping=core", "-p", "openmpi$"]


def _sentinel(args: list[str], out: Path) -> subprocess.CompletedProcess:
    """``sentinel plan ARGS`` run in ``out`` (empty), with its output there too."""
    out.mkdir(exist_ok=True)
    env = {**os.environ, "SENTINEL_OUTPUT": str(out)}
    env.pop("SENTINEL_RESULTS_DB", None)  # a fresh, empty history under ``out``
    proc = subprocess.run([sys.executable, "-m", "sentinel.results.cli", "plan", *args],
                          capture_output=True, text=True, env=env, cwd=out, timeout=900)
    litter = sorted(p.name for p in out.iterdir())
    assert litter == [], litter  # stage, log and report went to a temporary directory
    return proc


def test_plan_counts_the_jobs_the_same_dry_run_generates(tmp_path):
    need_stack("openmpi")
    proc = _sentinel(["--system", "local", "--mode", "quick", "--json", "--", *SELECTION],
                     tmp_path / "plan")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    planned = json.loads(proc.stdout)
    dry = reframe([*QUICK, *SELECTION, "--dry-run"], tmp_path)
    assert dry.returncode == 0, dry.output[-3000:]
    ran = [tc for tc in dry.report["runs"][0]["testcases"]
           if tc["result"] != "skip" and not tc["fixture"]]
    assert ran and planned["total"]["jobs"] == len(ran)
    (cpu,) = planned["partitions"]
    assert (cpu["partition"], cpu["jobs"], cpu["max_jobs"]) == ("local:cpu", len(ran), 1)
    assert cpu["wall_from"] == "bound"  # no history under tmp_path
    assert cpu["wall_s"] == pytest.approx(len(ran) * 120)  # quick: -S time_limit=2m


def test_plan_of_the_big_site_nightly_has_ten_partitions_and_a_total(tmp_path):
    # The checks that run every night: the whole nightly takes 2 min to dry-run here.
    proc = _sentinel(["-C", str(ROOT / "tests" / "config" / "big_site.py"), "--system", "big_site",
                      "--mode", "nightly", "--", "-n", "MatchingCheck"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:2] == ["partition", "jobs"]
    rows = [line.split() for line in lines[1:]]
    assert [r[0] for r in rows[:10]] == [f"big_site:p{n:02d}" for n in range(10)]
    assert rows[10][0] == "total"
    # (8 + 3 + 4) transports x 3 mappings, less the 4 shared-memory ones at
    # node: 41 test cases, carried by one packed job per environment and
    # mapping (the nightly packs transports): 3 x 3 batch jobs
    assert all(r[1] == "9" for r in rows[:10]), rows


def test_the_big_site_nightly_fits_its_budget_and_the_checks_skip_what_it_defers(tmp_path):
    # One partition's whole nightly, before any history: every job is bound
    # by its time limit, so the rotating checks and the fabric sweeps cannot
    # all run tonight. This fails when a check makes the every-night cases
    # break the budget, or adds a deferrable job that could never fit.
    big_site = str(ROOT / "tests" / "config" / "big_site.py")
    deferred = tmp_path / "deferred.json"
    proc = _sentinel(["-C", big_site, "--system", "big_site:p00", "--mode", "nightly", "--json",
                      "--defer", str(deferred)], tmp_path / "plan")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (p00,) = json.loads(proc.stdout)["partitions"]
    assert p00["budget"]["fits"], p00["budget"]
    assert p00["jobs"] <= 100 and p00["node_hours"] <= 50
    waiting = p00["deferred"]
    assert waiting and not any(d["test"].startswith(("Pt2ptCheck", "MatchingCheck"))
                               for d in waiting)
    written = json.loads(deferred.read_text())["big_site:p00"]
    assert written == [{"test": d["test"], "environ": d["environ"]} for d in waiting]
    # the nightly run with the file skips exactly those, saying why: here the
    # deferred fabric sweeps but one, which runs (which sweeps wait depends on
    # the night, the order among the never measured changing each night; the
    # sweeps together are several nights' budget, so some always wait)
    fabric = [d for d in written if d["test"].startswith("FabricCheck")]
    assert len(fabric) >= 2, written
    kept = fabric.pop(0)
    tonight = tmp_path / "tonight.json"
    tonight.write_text(json.dumps({"big_site:p00": fabric}))
    (tmp_path / "dry").mkdir()
    dry = reframe(["-C", big_site, "--system", "big_site:p00", "--mode", "nightly",
                   "-n", "FabricCheck", "-S", f"deferred_file={tonight}", "--dry-run"],
                  tmp_path / "dry", checks=("fabric.py",))
    assert dry.returncode == 0, dry.output[-3000:]
    cases = {(tc["name"], tc["environ"]): tc for tc in dry.report["runs"][0]["testcases"]}
    for d in fabric:
        tc = cases[d["test"], d["environ"]]
        assert tc["result"] == "skip", tc["name"]
        assert "deferred to a later night by the nightly budget of big_site:p00" in \
            tc["skip_reason"]
    tc = cases[kept["test"], kept["environ"]]
    assert (tc["result"], bool(tc["job_stdout"])) == ("pass", True)


def test_the_vet_of_a_1000_node_partition_is_four_jobs_within_ten_minutes(tmp_path):
    # sentinel vet's two modes planned together: the node-local checks on
    # every node at once (one job per check, the transports packed), and the
    # fabric neighbours sweep. Every job takes the whole partition, so they
    # run one after another: the wall time is their node-hours over the
    # 1,000 nodes, not their sum over max_jobs (16).
    proc = _sentinel(["-C", str(ROOT / "tests" / "config" / "vet_site.py"), "--system",
                      "vet_site:big", "--mode", "vet,sweep", "--json"], tmp_path / "plan")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (big,) = json.loads(proc.stdout)["partitions"]
    assert (big["jobs"], big["wall_from"]) == (4, "bound"), big
    # 3 node-local jobs x (2 transports x (30 s + 30 s to kill) + 30 s) + a 2-minute sweep
    assert big["wall_s"] == pytest.approx(3 * 150 + 120)
    assert big["node_hours"] == pytest.approx(1000 * (3 * 150 + 120) / 3600, abs=1e-3)
