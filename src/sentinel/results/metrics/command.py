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
from sentinel.results import changes
from sentinel.results.metrics.families import Collector, families
from sentinel.results.report import inputs as report_inputs
from sentinel.results.report import tables
from sentinel.results.report.load import Inputs

#: The Pushgateway job the suite's metrics are pushed under.
JOB = "mpi_sentinel"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``metrics`` subcommand's options."""
    p = sub.add_parser("metrics", help="the newest session, its bands, change points and "
                                       "node verdicts as Prometheus metrics")
    report_inputs.add_arguments(p)
    p.add_argument("--textfile", type=Path, default=None,
                   help="write the metrics to this file (a .prom file in node_exporter's "
                        "textfile directory), atomically")
    p.add_argument("--push", default=None, metavar="URL",
                   help="push them to this Pushgateway (host:port or URL), grouped by system")
    p.add_argument("--quiet", action="store_true", help="do not print them")


def registry_of(inputs: Inputs) -> CollectorRegistry:
    """The metrics of ``inputs`` in a registry of their own."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector(families(inputs, changes.find(inputs.history),
                                         tables.nodes(inputs.cases))))
    return registry


def _system(inputs: Inputs) -> str:
    systems = sorted({c.system for c in inputs.cases})
    if len(systems) != 1:
        raise SentinelError(f"--push: the run reports hold systems {', '.join(systems)}: push "
                            "each system's on its own (one Pushgateway group each)")
    return systems[0]


def metrics_command(args: argparse.Namespace) -> int:
    """Write or push the metrics; name each input that could not be used."""
    inputs = report_inputs.read_args(args)
    registry = registry_of(inputs)
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
