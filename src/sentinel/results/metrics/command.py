"""``sentinel metrics``: the newest session, its bands, change points and nodes, for Prometheus.

    sentinel metrics [RUN_REPORT ...] [--db FILE] [--textfile PATH] [--push URL]

Reads what ``sentinel report`` reads (the newest run report by default, the
results database for the change points and the node actions) and writes the
metrics in Prometheus's text exposition format: to standard output, to
``--textfile`` (atomically, for node_exporter's textfile collector: a
``.prom`` file in its directory) and to a Pushgateway (``--push``, grouped
by the system, replacing that system's previous push).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.error import URLError

from prometheus_client import CollectorRegistry, generate_latest, push_to_gateway, write_to_textfile

from sentinel.errors import SentinelError
from sentinel.paths import output_dir, results_db
from sentinel.results import changes
from sentinel.results.metrics.families import Collector, families
from sentinel.results.report import tables
from sentinel.results.report.files import load_reports, newest_report
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs
from sentinel.results.vet import actions

#: The Pushgateway job the suite's metrics are pushed under.
JOB = "mpi_sentinel"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``metrics`` subcommand's options."""
    p = sub.add_parser("metrics", help="the newest session, its bands, change points and "
                                       "node verdicts as Prometheus metrics")
    p.add_argument("reports", type=Path, nargs="*",
                   help="run reports (default: the newest in <output>/reports)")
    p.add_argument("--db", type=Path, default=None,
                   help="results database for change points and node actions (default: "
                        "that of the runs)")
    p.add_argument("--textfile", type=Path, default=None,
                   help="write the metrics to this file (a .prom file in node_exporter's "
                        "textfile directory), atomically")
    p.add_argument("--push", default=None, metavar="URL",
                   help="push them to this Pushgateway (host:port or URL), grouped by system")
    p.add_argument("--quiet", action="store_true", help="do not print them")


def registry_of(reports: list[Path], db: Path) -> tuple[CollectorRegistry, Inputs]:
    """The metrics of ``reports`` and ``db`` in a registry of their own, and what was read."""
    inputs = Inputs()
    load_reports(reports, inputs)
    load_history(db, inputs)
    inputs.node_actions = actions.recorded(db) if db.exists() else []
    if inputs.errors or not inputs.cases:
        raise SentinelError("; ".join(inputs.errors + inputs.problems)
                            or "the run reports hold no test case")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector(families(inputs, changes.find(inputs.history),
                                         tables.nodes(inputs.cases))))
    return registry, inputs


def _system(inputs: Inputs) -> str:
    systems = sorted({c.system for c in inputs.cases})
    if len(systems) != 1:
        raise SentinelError(f"--push: the run reports hold systems {', '.join(systems)}: push "
                            "each system's on its own (one Pushgateway group each)")
    return systems[0]


def metrics_command(args: argparse.Namespace) -> int:
    """Write or push the metrics; name each input that could not be used."""
    reports = args.reports or newest_report(output_dir() / "reports")
    registry, inputs = registry_of(reports, args.db or results_db())
    if args.textfile:
        if args.textfile.suffix != ".prom":
            raise SentinelError(f"--textfile {args.textfile}: node_exporter's textfile "
                                "collector reads *.prom files only")
        write_to_textfile(str(args.textfile), registry)
    if args.push:
        try:
            push_to_gateway(args.push, job=JOB, registry=registry,
                            grouping_key={"system": _system(inputs)})
        except (OSError, URLError) as err:
            raise SentinelError(f"--push {args.push}: {err}") from None
    if not args.quiet:
        sys.stdout.write(generate_latest(registry).decode())
    for problem in inputs.problems:
        print(f"sentinel metrics: left out: {problem}", file=sys.stderr)
    return 1 if inputs.problems else 0
