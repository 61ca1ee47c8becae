"""The Grafana dashboard of ``sentinel metrics``, generated from the variables' declarations.

Built with grafana-foundation-sdk (Grafana's own schema as Python types):
a row per partition (Grafana repeats it over the ``partition`` variable),
in it one time-series panel per headline variable of each check family
(:mod:`sentinel.analysis.variables`) with its reference band, and tables of
what failed, what was left unresolved and each vetted node; the change
points as annotations at the time each change happened. Nothing is written
by hand: a new check's headline variables get their panels when the
dashboard is generated again (``sentinel dashboard``).
"""

from __future__ import annotations

import argparse
import json
import string
from collections.abc import Iterator

from grafana_foundation_sdk.builders import dashboard, prometheus, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

from sentinel.analysis.variables import CheckSpec, PerfVar, all_specs
from sentinel.results.metrics.families import PREFIX
from sentinel.results.metrics.names import base_unit

UID = "mpi-sentinel"
#: Grafana's unit of each base unit.
GRAFANA_UNITS = {"seconds": "s", "bytes_per_second": "Bps", "ratio": "none",
                 "lattice_updates_per_second": "short", "messages_per_second": "short"}
_DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
_WHERE = 'system="$system",partition=~"$partition"'


def variable_regex(var: PerfVar) -> str:
    """The Prometheus regex of a declaration's headline variable names (``latency_8B``)."""
    out = ""
    for literal, field, _, _ in string.Formatter().parse(var.template):
        out += "".join("\\\\" + c if not c.isalnum() and c != "_" else c for c in literal)
        if field is not None:
            fixed = (var.headline or {}).get(field)
            if isinstance(fixed, tuple):
                fixed = "(" + "|".join(fixed) + ")"
            out += fixed if fixed is not None else "[^_]+"
    return out


def _headlines() -> Iterator[tuple[str, CheckSpec, PerfVar]]:
    seen = set()
    for _, spec in sorted(all_specs().items()):  # the same file whatever was imported first
        for var in spec.variables:
            key = (spec.checks, var.template)
            if var.headline is None or key in seen:
                continue
            seen.add(key)
            yield "|".join(spec.checks), spec, var


def _selector(checks: str, var: PerfVar) -> str:
    return f'{{{_WHERE},check=~"{checks}",variable=~"{variable_regex(var)}"}}'


def _value_panel(checks: str, var: PerfVar) -> timeseries.Panel:
    suffix, _ = base_unit(var.unit)
    legend = "{{environ}} {{transport}} {{mapping}} {{variant}} {{variable}}"
    panel = (timeseries.Panel().title(f"{checks.split('|')[0]}: {var.template}")
             .description(f"{var.meaning} ({var.better} is better; declared in {var.unit})")
             .datasource(_DS).unit(GRAFANA_UNITS[suffix]).height(8).span(12))
    for ref, name, label in (("A", f"value_{suffix}", ""),
                             ("B", f"reference_lower_{suffix}", "band low "),
                             ("C", f"reference_upper_{suffix}", "band high ")):
        panel = panel.with_target(prometheus.Dataquery().ref_id(ref).datasource(_DS)
                                  .expr(f"{PREFIX}_{name}{_selector(checks, var)}")
                                  .legend_format(label + legend))
    return panel


def _table(title: str, expr: str, description: str) -> table.Panel:
    return (table.Panel().title(title).description(description).datasource(_DS).height(8)
            .span(8).with_target(prometheus.Dataquery().ref_id("A").datasource(_DS)
                                 .expr(expr).instant().format("table")))


def _tables() -> list[table.Panel]:
    return [
        _table("What failed or was skipped", f'{PREFIX}_test_result{{{_WHERE},result!="pass"}}',
               "each test case of the newest session that did not pass, with its reason"),
        _table("Unresolved values", f"{PREFIX}_unresolved{{{_WHERE}}}",
               "values the run could not resolve, with why"),
        _table("Nodes vetted", f"{PREFIX}_node_failed_checks{{{_WHERE}}}",
               "node-local checks each vetted node failed (0: it passed)"),
    ]


def build(title: str = "MPI Sentinel") -> dict:
    """The dashboard as Grafana's JSON model."""
    board = (dashboard.Dashboard(title).uid(UID).tags(["mpi-sentinel"]).refresh("5m")
             .time("now-30d", "now")
             .with_variable(dashboard.DatasourceVariable("datasource").label("Prometheus")
                            .type("prometheus"))
             .with_variable(dashboard.QueryVariable("system").datasource(_DS)
                            .query(f"label_values({PREFIX}_test_result, system)"))
             .with_variable(dashboard.QueryVariable("partition").datasource(_DS)
                            .query(f'label_values({PREFIX}_test_result{{system="$system"}}, '
                                   "partition)").multi(True).include_all(True))
             .annotation(dashboard.AnnotationQuery().name("Change points").datasource(_DS)
                         .enable(True).icon_color("red")
                         .expr(f"{PREFIX}_change_point_timestamp_seconds{{system=\"$system\"}}"))
             .with_row(dashboard.Row("Partition $partition").repeat("partition")))
    for panel in _tables():
        board = board.with_panel(panel)
    for checks, _, var in _headlines():
        board = board.with_panel(_value_panel(checks, var))
    model = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    for annotation in model["annotations"]["list"]:
        if annotation.get("name") == "Change points":
            # Grafana's Prometheus annotation: the sample's value is the
            # change's time (not in the SDK's generic annotation type)
            annotation.update(useValueForTime=True, titleFormat="{{verdict}}: {{variable}}",
                              textFormat="{{check}} {{transport}} {{mapping}} {{environ}}")
    return model


def queries(model: dict) -> list[str]:
    """Every PromQL expression of the dashboard: its panels' targets and its annotations."""
    exprs = [t["expr"] for p in model.get("panels", []) for t in p.get("targets", [])]
    exprs += [a["expr"] for a in model["annotations"]["list"] if a.get("expr")]
    return exprs


def text() -> str:
    """The dashboard's JSON, as shipped in ``config/grafana/mpi-sentinel.json``."""
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``dashboard`` subcommand's options."""
    p = sub.add_parser("dashboard", help="write the Grafana dashboard of sentinel metrics, "
                                         "generated from the variables' declarations")
    p.add_argument("--out", default=None,
                   help="the JSON file (default: config/grafana/mpi-sentinel.json)")


def dashboard_command(args: argparse.Namespace) -> int:
    """Write the dashboard's JSON."""
    from sentinel.paths import repo_root

    out = args.out or repo_root() / "config" / "grafana" / "mpi-sentinel.json"
    with open(out, "w") as fp:
        fp.write(text())
    print(f"sentinel dashboard: {out}")
    return 0
