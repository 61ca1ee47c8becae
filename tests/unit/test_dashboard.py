"""The Grafana dashboard: generated from the declarations, shipped as generated, valid to the SDK.

Its queries are run against a real Prometheus by
``tests/integration/test_metrics_local.py``.
"""

from __future__ import annotations

import json
import re

from grafana_foundation_sdk.models.dashboard import Dashboard

from sentinel.analysis.variables import all_specs
from sentinel.results.metrics import dashboard
from tests.conftest import ROOT

SHIPPED = ROOT / "config" / "grafana" / "mpi-sentinel.json"


def test_the_shipped_dashboard_is_what_the_command_generates():
    assert SHIPPED.read_text() == dashboard.text(), \
        "config/grafana/mpi-sentinel.json is stale: run sentinel dashboard"


def test_it_decodes_into_grafanas_dashboard_model():
    model = json.loads(SHIPPED.read_text())
    decoded = Dashboard.from_json(model)
    assert decoded.uid == "mpi-sentinel" and len(decoded.panels) == len(model["panels"])
    assert [v["name"] for v in model["templating"]["list"]] == ["datasource", "system",
                                                                "partition"]
    (row,) = [p for p in model["panels"] if p["type"] == "row"]
    assert row["repeat"] == "partition"


def test_every_headline_variable_has_a_panel_with_its_band():
    titles = {p["title"]: p for p in json.loads(SHIPPED.read_text())["panels"]}
    for spec in all_specs().values():
        for var in spec.variables:
            if var.headline is None:
                continue
            panel = titles[f"{spec.checks[0]}: {var.template}"]
            exprs = [t["expr"] for t in panel["targets"]]
            assert [e.split("{")[0].split("_", 2)[2] for e in exprs][1:] == [
                e.split("{")[0].split("_", 2)[2].replace("value", f"reference_{side}")
                for e, side in zip(exprs[:1] * 2, ("lower", "upper"))]


def test_the_variable_regexes_match_the_headline_names_and_no_other():
    pt2pt = all_specs()["Pt2ptCheck"]
    latency = dashboard.variable_regex(pt2pt.var("latency_{size}B"))
    assert re.fullmatch(latency.replace("\\\\", "\\"), "latency_8B")
    assert not re.fullmatch(latency.replace("\\\\", "\\"), "latency_16B")
