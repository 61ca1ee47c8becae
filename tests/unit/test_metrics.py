"""``sentinel metrics``: names in base units, bounded reasons, and the families of real runs.

The run reports and the results database are this project's own captures
(``tests/data``); the exposition is read back by prometheus_client's own
parser, as Prometheus would read it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sentinel.analysis import variables
from sentinel.errors import SentinelError
from sentinel.results import changes
from sentinel.results.metrics import command
from sentinel.results.metrics.families import _Families, families
from sentinel.results.metrics.names import (
    FAIL_REASONS,
    SKIP_REASONS,
    UNRESOLVED_REASONS,
    base_unit,
    reason_of,
)
from sentinel.results.report import inputs as report_inputs
from sentinel.results.report import tables
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs
from tests.conftest import DATA

NAME = re.compile(r"^mpi_sentinel_[a-z0-9_]+$")


def _samples(reports: list[Path], db: Path) -> dict[str, list]:
    registry = command.registry_of(report_inputs.read(reports, db if db.exists() else None))
    text = generate_latest(registry).decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_every_declared_unit_has_a_base_unit_and_an_unknown_one_is_named():
    units = {v.unit for spec in variables.all_specs().values() for v in spec.variables}
    assert {base_unit(u)[0] for u in units} <= {"seconds", "bytes_per_second", "ratio",
                                                "lattice_updates_per_second",
                                                "messages_per_second"}
    assert base_unit("us") == ("seconds", 1e-6) and base_unit("MB/s") == ("bytes_per_second",
                                                                         1e6)
    with pytest.raises(SentinelError, match="unit 'furlong' has no Prometheus base unit"):
        base_unit("furlong")


@pytest.mark.parametrize("text, kinds, reason", [
    ("transport intelmpi/shm not verified: requested fabrics=shm", FAIL_REASONS, "transport"),
    ("failed to meet reference(s): latency_8B=0.1 us", FAIL_REASONS, "reference"),
    ("the launch ran past its time limit of 30 s", FAIL_REASONS, "timeout"),
    ("something nobody wrote yet", FAIL_REASONS, "other"),
    ("mapping socket needs 2 sockets; partition local:cpu has 1", SKIP_REASONS, "mapping"),
    ("< 1.2 ns: its interval reaches zero", UNRESOLVED_REASONS, "interval_reaches_zero"),
])
def test_free_text_becomes_one_of_a_fixed_set_of_reasons(text, kinds, reason):
    assert reason_of(text, kinds) == reason


def test_the_vet_sessions_metrics_name_the_failed_cases_and_the_bad_node():
    got = _samples([DATA / "vet" / "each-node-v2-drifted.json"], Path("/nonexistent.db"))
    assert all(NAME.match(name) for name in got), sorted(got)
    failed = [s.labels for s in got["mpi_sentinel_test_result"]
              if s.labels["result"] == "fail"]
    assert {(f["check"], f["transport"], f["reason"]) for f in failed} == {
        ("MatchingCheck", "shm", "transport"), ("Pt2ptCheck", "shm", "transport"),
        ("BarrierSplitCheck", "shm", "transport")}
    nodes = {s.labels["node"]: s.value for s in got["mpi_sentinel_node_failed_checks"]}
    assert nodes == {"v1": 0.0, "v2": 3.0}
    assert "mpi_sentinel_value_seconds" not in got  # a failed case reports no values


def test_unresolved_values_are_metrics_with_their_reason_never_values():
    got = _samples([DATA / "run-report-matching-nightly.json"], Path("/nonexistent.db"))
    def key(s):
        return s.labels["environ"], s.labels["transport"], s.labels["variable"]

    unresolved = {key(s): s.labels["reason"] for s in got["mpi_sentinel_unresolved"]}
    assert unresolved[("openmpi", "ob1-vader", "match_time_comm")] == "interval_reaches_zero"
    values = {key(s): s for s in got["mpi_sentinel_value_seconds"]}
    assert values and not set(values) & set(unresolved)
    tag = values[("openmpi", "ob1-vader", "match_time_tag")]
    assert tag.labels["unit"] == "ns" and 0 < tag.value < 1e-6


def test_a_band_and_a_change_point_of_the_captured_history():
    # sessions 1-20 unchanged, 21-25 with ob1-tcp's loopback limited to 2 Gbit/s;
    # session 21 ran against references calibrated from sessions 1-7
    inputs = Inputs()
    load_history(DATA / "history" / "pt2pt-tcp-limited-from-21.db", inputs)
    inputs.cases = inputs.history[20][1]
    got = {f.name: f.samples for f in families(inputs, changes.find(inputs.history),
                                               tables.nodes(inputs.cases))}
    bw = {s.labels["transport"]: s.value for s in got["mpi_sentinel_value_bytes_per_second"]
          if s.labels["variable"] == "bw_peak"}
    assert bw["ob1-tcp"] < 0.3e9 < 5e9 < bw["ob1-vader"]
    lower = {s.labels["transport"]: s.value
             for s in got["mpi_sentinel_reference_lower_bytes_per_second"]
             if s.labels["variable"] == "bw_peak"}
    assert lower["ob1-tcp"] > bw["ob1-tcp"]  # the regression is outside its band
    change = [s for s in got["mpi_sentinel_change_point_timestamp_seconds"]
              if s.labels["variable"] == "bw_peak"]
    assert [(s.labels["transport"], s.labels["verdict"]) for s in change] == [
        ("ob1-tcp", "regression")]
    assert change[0].value == inputs.history[20][0]["time_start_unix"]


def test_the_same_series_twice_is_refused_naming_it():
    # a Pushgateway refuses a whole push for one repeated series
    out = _Families()
    out.add("test_result", "doc", {"check": "X", "result": "pass"}, 1)
    out.add("test_result", "doc", {"check": "Y", "result": "pass"}, 1)
    with pytest.raises(SentinelError, match="two samples of mpi_sentinel_test_result with "
                                            "the labels {'check': 'X'"):
        out.add("test_result", "doc", {"check": "X", "result": "pass"}, 1)


def test_a_textfile_must_be_one_node_exporter_reads(tmp_path, monkeypatch):
    args = command.argparse.Namespace(
        reports=[DATA / "run-report-matching-nightly.json"], db=tmp_path / "none.db",
        textfile=tmp_path / "sentinel.txt", push=None, quiet=True)
    with pytest.raises(SentinelError, match=r"reads \*\.prom files only"):
        command.metrics_command(args)
    args.textfile = tmp_path / "sentinel.prom"
    assert command.metrics_command(args) == 0
    text = args.textfile.read_text()
    assert json.dumps("mpi_sentinel_test_result")[1:-1] in text
