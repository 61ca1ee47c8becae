"""``sentinel metrics`` into Debian's Pushgateway, queried back through Prometheus's HTTP API.

A real quick session on this host (Pt2ptCheck over Open MPI's ob1-vader and
ob1-tcp, judged against a reference file whose ob1-tcp band no ping-pong
meets) is pushed, and written for node_exporter's textfile collector, which
a node_exporter started here reads; each of its headline values must come back from a PromQL
query with its unit and band, and the failed case with its reason. Then the
project's captured vet session (node v2 drifted), nightly matching session
(values left unresolved) and results history (ob1-tcp's bandwidth limited
from session 21) are pushed: the failed node, the unresolved values and the
change point must come back. The exposition also passes ``promtool check
metrics``, Prometheus's own linter.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
from junitparser import Failure, JUnitXml

from sentinel.results.metrics import dashboard
from sentinel.results.metrics.names import UNRESOLVED_REASONS, base_unit, reason_of
from sentinel.results.report.load import cases_of
from tests.cluster import prometheus
from tests.conftest import DATA
from tests.integration.conftest import QUICK, need_capability, need_stack, reframe

pytestmark = pytest.mark.integration

REFERENCES = """Pt2ptCheck:
  $index: [$partition, $environ, transport_name, mapping]
  local:cpu:
    openmpi:
      ob1-vader:
        core:
          latency_8B: [1.0, -0.999, 1000.0, us]
      ob1-tcp:
        core:
          latency_8B: [0.001, -0.5, 0.5, us]
"""


@pytest.fixture(scope="module")
def monitoring(tmp_path_factory):
    """The Pushgateway and Prometheus on loopback; stopped by PID at the end."""
    need_capability("prometheus", prometheus.missing())
    mon = prometheus.up(tmp_path_factory.mktemp("prometheus"))
    yield mon
    mon.stop()


def _metrics(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "sentinel.results.cli", "metrics", *args],
                          capture_output=True, text=True, env=env, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _one(found: list[dict], what: str) -> dict:
    assert len(found) == 1, f"{what}: {found}"
    return found[0]


def test_a_quick_sessions_values_bands_and_failures_come_back_from_prometheus(
        monitoring, tmp_path):
    need_stack("openmpi")
    refs = tmp_path / "references"
    refs.mkdir()
    (refs / "local.yaml").write_text(REFERENCES)
    env = {**os.environ, "SENTINEL_OUTPUT": str(tmp_path), "SENTINEL_REFERENCES": str(refs)}
    run = reframe([*QUICK, "-p", "openmpi$", "-n", "^Pt2ptCheck.*%mapping=core", "-S",
                   "transports=openmpi/ob1-vader,openmpi/ob1-tcp", "-r"], tmp_path,
                  env={"SENTINEL_REFERENCES": str(refs)}, checks=("pt2pt.py",))
    assert run.report, run.output[-3000:]
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    pushed = _metrics(["--push", monitoring.pushgateway, "--textfile",
                       str(textfiles / "mpi_sentinel.prom")], env)
    assert pushed.returncode == 0, pushed.stdout[-2000:] + pushed.stderr
    lint = subprocess.run([prometheus.PROMTOOL, "check", "metrics"], input=pushed.stdout,
                          capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert (textfiles / "mpi_sentinel.prom").read_text() == pushed.stdout
    # node_exporter's textfile collector reads the file without an error
    exported = prometheus.textfile_metrics(textfiles, tmp_path)
    assert "\nnode_textfile_scrape_error 0\n" in exported, exported[-2000:]
    assert "\nmpi_sentinel_test_result{" in exported
    assert monitoring.wait_for('mpi_sentinel_test_result{check="Pt2ptCheck"}')
    # every headline value of the session, in base units, with its declared unit
    session = [c for c in cases_of(run.report, "run report") if c.check == "Pt2ptCheck"
               and c.result == "pass"]
    assert {c.transport for c in session} == {"ob1-vader"}, run.output[-3000:]
    headline = [(c, v) for c in session for v in c.variables.values()
                if v.headline and v.value is not None]
    assert len(headline) >= 2  # latency_8B and bw_peak of ob1-vader
    for c, v in headline:
        suffix, factor = base_unit(v.decl.unit)
        got = _one(monitoring.query(f'mpi_sentinel_value_{suffix}{{transport="{c.transport}",'
                                    f'variable="{v.name}"}}'), v.name)
        assert got["metric"]["unit"] == v.decl.unit, got
        assert math.isclose(float(got["value"][1]), v.value * factor, rel_tol=1e-9), got
    # ... and its band
    lower = _one(monitoring.query('mpi_sentinel_reference_lower_seconds{transport="ob1-vader",'
                                  'variable="latency_8B"}'), "band")
    assert math.isclose(float(lower["value"][1]), 1e-6 * 0.001, rel_tol=1e-9)
    # the failed case with its reason
    failed = _one(monitoring.query('mpi_sentinel_test_result{result="fail"}'), "failed")
    assert (failed["metric"]["transport"], failed["metric"]["reason"]) == ("ob1-tcp",
                                                                          "reference")
    # the dashboard, query by query, on this partition: every query valid,
    # those of the checks the session ran with data
    model = dashboard.build()
    with_data = set()
    for expr in dashboard.queries(model):
        found = monitoring.query(expr.replace("$system", "local").replace("$partition", "cpu"))
        if found:
            with_data.add(expr)
    panels = {p["title"]: [t["expr"] for t in p.get("targets", [])] for p in model["panels"]}
    assert set(panels["Pt2ptCheck: latency_{size}B"]) <= with_data  # value and its band
    assert panels["What failed or was skipped"][0] in with_data
    assert not any("FabricCheck" in e for e in with_data)  # the session swept no fabric
    # the session's JUnit report, as a CI system reads it: every test case,
    # the failed one with ReFrame's reason
    junit = {(case.classname, case.name): case for suite in JUnitXml.fromfile(
        str(tmp_path / "reports" / "junit.xml")) for case in suite}
    ran = [tc for tc in run.cases() if tc["result"] != "skip"]
    assert len(junit) >= len(ran) >= 3, sorted(junit)
    bad = [case for case in junit.values() if any(isinstance(r, Failure) for r in case.result)]
    assert len(bad) == 1 and "ob1-tcp" in bad[0].name, [c.name for c in bad]
    assert "failed to meet reference" in bad[0].result[0].message + (bad[0].result[0].text or "")
    # each value the session left unresolved, with its reason (the captured
    # session of the next test always has some)
    for c in cases_of(run.report, "run report"):
        for name, why in (c.extra.get("unresolved") or {}).items():
            got = _one(monitoring.query(f'mpi_sentinel_unresolved{{transport="{c.transport}",'
                                        f'variable="{name}"}}'), name)
            assert got["metric"]["reason"] == reason_of(why, UNRESOLVED_REASONS), (got, why)


def test_a_failed_node_unresolved_values_and_a_change_point_come_back(monitoring, tmp_path):
    env = {**os.environ, "SENTINEL_OUTPUT": str(tmp_path)}
    pushed = _metrics([str(DATA / "vet" / "each-node-v2-drifted.json"),
                       str(DATA / "run-report-matching-nightly.json"), "--db",
                       str(DATA / "history" / "pt2pt-tcp-limited-from-21.db"),
                       "--push", monitoring.pushgateway, "--quiet"], env)
    assert pushed.returncode == 0, pushed.stderr
    node = monitoring.wait_for("mpi_sentinel_node_failed_checks > 0")
    assert [(n["metric"]["node"], n["value"][1]) for n in node] == [("v2", "3")]
    unresolved = monitoring.wait_for('mpi_sentinel_unresolved{environ="openmpi",'
                                     'transport="ob1-vader",variable="match_time_comm"}')
    assert _one(unresolved, "unresolved")["metric"]["reason"] == "interval_reaches_zero"
    change = _one(monitoring.wait_for('mpi_sentinel_change_point_timestamp_seconds'
                                      '{variable="bw_peak"}'), "change point")
    # the dashboard's annotation query finds it, and its node table the node
    model = dashboard.build()
    (annotation,) = model["annotations"]["list"]
    assert monitoring.query(annotation["expr"].replace("$system", "local"))
    nodes = [p for p in model["panels"] if p["title"] == "Nodes vetted"][0]["targets"][0]
    assert monitoring.query(nodes["expr"].replace("$system", "local")
                            .replace("$partition", "slurm-vet"))
    assert (change["metric"]["transport"], change["metric"]["verdict"]) == ("ob1-tcp",
                                                                           "regression")
