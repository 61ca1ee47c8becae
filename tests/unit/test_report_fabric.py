"""The report's fabric figures and its per-node summary of the vet mode.

Data: real run reports of this project's runs on the test cluster
(tests/cluster/slurm.py): FabricCheck's four modes on the four namespaced
nodes, and its pairs sweep with the traffic between m1 and m3 slowed to
1 Gbit/s (``run-report-fabric-*.json``); the vet mode (``--distribute``)
over the two whole-host nodes with Intel MPI's fabric set to ofi on v2
alone through Slurm's TaskProlog (``run-report-slurm-vet.json``).
"""

from __future__ import annotations

import dataclasses
import json

import sentinel.results.report as report_pkg
from sentinel.results.report import summary, tables
from sentinel.results.report.figures import fabric
from sentinel.results.report.load import cases_of
from tests.conftest import DATA


def _cases(name: str):
    return cases_of(json.loads((DATA / name).read_text()), name)


def test_every_fabric_mode_gets_its_figure():
    cases = [c for c in _cases("run-report-fabric-clean.json") if c.check == "FabricCheck"]
    titles = [t for t, uri in fabric.draw(cases) if uri.startswith("data:image/png;base64,")]
    assert len(titles) == 4
    # the modes other than the pair sweep: a figure per mode, a panel per transport
    assert set(titles[1:]) == {f"FabricCheck {mode}, intelmpi on local:slurm-net" for mode in (
        "aggregate bandwidth of k pairs", "latency idle and under load", "permutation patterns")}
    assert any(t.startswith("FabricCheck node pairs") and t.endswith("no outlier")
               for t in titles)


def test_the_heatmaps_mark_what_the_sweep_named():
    case = next(c for c in _cases("run-report-fabric-link.json") if c.check == "FabricCheck")
    assert case.result == "fail"
    assert fabric._named(case.extra["outliers"], "bandwidth") == (
        set(), {("m1", "m3"), ("m3", "m1")})
    assert fabric._named(case.extra["outliers"], "latency") == (set(), set())
    (title, _), = fabric.draw([case])
    assert ": link m1 <-> m3: bandwidth " in title and title.endswith("both nodes fine")


def test_each_node_jobs_give_each_node_its_verdict_in_the_summary():
    vetted = tables.nodes(_cases("vet/each-node-v2-drifted.json"))
    assert [(v.node, v.verdict) for v in vetted] == [("v2", "FAIL"), ("v1", "PASS")]
    bad, good = vetted
    assert (bad.passed, len(bad.failed), good.passed, good.failed) == (0, 3, 3, [])
    assert {f.test.split()[0] for f in bad.failed} == {"MatchingCheck", "Pt2ptCheck",
                                                       "BarrierSplitCheck"}
    lines = report_pkg.headline([], tables.acceptance([]), vetted)
    assert lines[1] == "nodes vetted: 2, failed: local:slurm-vet v2"
    assert all(line.startswith("  local:slurm-vet v2: ") and "fabrics=ofi" in line
               for line in lines[2:5])


def test_the_vet_mode_summary_names_the_failed_node_and_why():
    vetted = tables.nodes(_cases("run-report-slurm-vet.json"))
    assert [(v.node, v.verdict) for v in vetted] == [("v2", "FAIL"), ("v1", "PASS")]
    bad, good = vetted
    assert bad.where == "local:slurm-vet" and len(bad.failed) == 5 and bad.passed == 0
    assert good.passed == 5 and good.failed == []
    assert all("requested fabrics=shm, the run selected fabrics=ofi" in f.reason
               for f in bad.failed)
    lines = report_pkg.headline([], tables.acceptance([]), vetted)
    assert lines[1] == "nodes vetted: 2, failed: local:slurm-vet v2"
    assert lines[2].startswith("  local:slurm-vet v2: MatchingCheck %transport=shm "
                               "%mapping=core: sanity error: transport intelmpi/shm")


def test_no_node_summary_without_distribute():
    assert tables.nodes(_cases("run-report-fabric-clean.json")) == []
    assert len(report_pkg.headline([], tables.acceptance([]), [])) == 1


def test_links_cleared_alone_are_listed_apart_from_what_the_sweep_named():
    case = next(c for c in _cases("run-report-fabric-link.json") if c.check == "FabricCheck")
    said = ("link m3 -> m6: bandwidth 4.8x below the partition median beside the step's "
            "other pairs; 917.1 MB/s alone, within the factor: not a bad link")
    cleared = dataclasses.replace(case, extra={**case.extra, "cleared": said})
    named, listed = summary._fabric([cleared]), summary._fabric([cleared], "cleared")
    assert named.verdict == "FAIL" and [ln.text for ln in named.lines] == [
        f"{case.where}: {ln}" for ln in case.extra["outliers"].splitlines()]
    assert listed.verdict == "INFO" and [ln.text for ln in listed.lines] == [
        f"{case.where}: {said}"]
    assert summary._fabric([case], "cleared").lines == []
